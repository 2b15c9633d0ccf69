package patch

import (
	"bytes"
	"encoding/json"
	"errors"
)

// errSyntax is what the scanner reports for input that is not JSON; the
// handlers have already decoded the same bytes, so it means a bug or a
// truncated request.
var errSyntax = errors.New("malformed JSON")

// member is one key of a JSON object: the key unescaped, and its value as
// raw bytes (a sub-slice of the document, never a copy).
type member struct {
	key   []byte
	value []byte
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the index just past the JSON value starting at i (no
// leading space). It checks brackets and strings, not every literal: the
// bytes were decoded by encoding/json before they reach this package.
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, errSyntax
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				end, err := skipString(data, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
			for i < len(data) && !structural[data[i]] {
				i++
			}
		}
		return 0, errSyntax
	default: // number, true, false, null
		start := i
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if i == start {
					return 0, errSyntax
				}
				return i, nil
			}
			i++
		}
		if i == start {
			return 0, errSyntax
		}
		return i, nil
	}
}

// structural marks the bytes skipValue stops at inside an object or
// array: everything else outside strings (space, ':', ',', literals) is
// passed over without a look.
var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}

// skipString returns the index just past the string starting at i.
func skipString(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		escaped := false
		for p := q - 1; p > i && data[p] == '\\'; p-- {
			escaped = !escaped
		}
		if !escaped {
			return q + 1, nil
		}
		j = q + 1
	}
	return 0, errSyntax
}

// unquoteKey is the key a quoted JSON string stands for; only a key with
// an escape is decoded (and allocated).
func unquoteKey(quoted []byte) ([]byte, error) {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner, nil
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return nil, errSyntax
	}
	return []byte(s), nil
}

// objectMembers splits the JSON object data into its members, appended to
// buf, in document order. A key may repeat in a request (see lookup);
// encoding/json never writes one twice. ix, when it indexes the document
// data is part of, saves reading the values.
func objectMembers(data []byte, buf []member, ix *ends) ([]member, error) {
	base := ix.base(data)
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, errSyntax
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return buf, nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, errSyntax
		}
		end, err := ix.skip(data, base, i)
		if err != nil {
			return nil, err
		}
		key, err := unquoteKey(data[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return nil, errSyntax
		}
		i = skipSpace(data, i+1)
		vend, err := ix.skip(data, base, i)
		if err != nil {
			return nil, err
		}
		buf = append(buf, member{key: key, value: data[i:vend]})
		i = skipSpace(data, vend)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == '}' {
			return buf, nil
		}
		return nil, errSyntax
	}
}

// arrayElements splits the JSON array data into its elements, appended to
// buf (ix as for objectMembers).
func arrayElements(data []byte, buf [][]byte, ix *ends) ([][]byte, error) {
	base := ix.base(data)
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, errSyntax
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return buf, nil
	}
	for {
		end, err := ix.skip(data, base, i)
		if err != nil {
			return nil, err
		}
		buf = append(buf, data[i:end])
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
			continue
		}
		if i < len(data) && data[i] == ']' {
			return buf, nil
		}
		return nil, errSyntax
	}
}

// find is the index of key in ms, or -1. The search starts at hint and
// wraps: documents of one Go type list their keys in the same order, so
// walking two of them side by side finds each key at once.
func find(ms []member, key []byte, hint int) int {
	n := len(ms)
	if hint < 0 || hint >= n {
		hint = 0
	}
	for k := 0; k < n; k++ {
		j := hint + k
		if j >= n {
			j -= n
		}
		if bytes.Equal(ms[j].key, key) {
			return j
		}
	}
	return -1
}

// kind is the first byte of a value: '{', '[', 'n' (null) or another
// scalar's first byte; 0 for none.
func kind(v []byte) byte {
	i := skipSpace(v, 0)
	if i >= len(v) {
		return 0
	}
	return v[i]
}
