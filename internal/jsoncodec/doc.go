// Package jsoncodec is the webhook's JSON: it decodes the AdmissionReviews
// the API server sends and the objects they carry, and encodes pods and
// answers, exactly as encoding/json would.
//
// Rules:
//   - Unmarshal is encoding/json/v2 (the standard library's from Go 1.27;
//     on Go 1.26 its mirror, github.com/go-json-experiment/json, which
//     aliases the standard library when built with Go 1.27) run with
//     encoding/json's own semantics (v1.DefaultOptionsV1): case-insensitive
//     names, duplicate names allowed (the last wins), invalid UTF-8 replaced
//     by U+FFFD, unknown fields ignored, null a no-op. It accepts and
//     rejects what encoding/json.Unmarshal does and decodes the same value;
//     FuzzUnmarshalMatchesEncodingJSON checks it on pods and
//     AdmissionReviews against the classic encoding/json (Go 1.26's, or Go
//     1.27's with GOEXPERIMENT=nojsonv2, as make fuzz runs it: Go 1.27's
//     own encoding/json is built on v2). Only error texts may differ.
//   - Why: encoding/json reads a value twice (validate, then decode), and a
//     RawExtension inside a review a third time; v2 reads it once. On the
//     review the API server sends for an engine pod this took a pod
//     admission from 126 µs to 93 µs, 269 to 187 allocations
//     (docs/performance.md). Error texts are encoding/json's, with list
//     indexes in field paths (spec.containers.0.image).
//   - Encoder is github.com/goccy/go-json, which writes what
//     encoding/json.Marshal writes, byte for byte: HTML-safe escapes, map
//     keys sorted, the types' own MarshalJSON. FuzzMarshalMatchesEncodingJSON
//     checks it on every pod and review encoding/json can decode, against
//     the classic encoding/json; the pod patch relies on it, comparing the
//     request's bytes with the round trip's. A panic in the encoder is
//     returned as an error.
//   - Why: encoding a pod took half the time of its admission's JSON work
//     (12.5 µs with encoding/json, 6.5 µs with go-json, twice per pod);
//     encoding/json/v2 with v1's semantics encoded slower than
//     encoding/json. Measured in docs/performance.md.
package jsoncodec
