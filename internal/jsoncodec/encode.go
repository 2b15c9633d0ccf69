package jsoncodec

import (
	"bytes"
	"fmt"

	gojson "github.com/goccy/go-json"
)

// Encoder writes values as encoding/json.Marshal does (see the package
// rules), into a buffer it keeps: the bytes Encode returns are valid
// until the next Encode or Reset. The zero Encoder is ready; it is not
// safe for concurrent use.
type Encoder struct {
	buf bytes.Buffer
	enc *gojson.Encoder
}

// Encode is v encoded, without the trailing newline an Encoder writes.
// A panic inside the encoder comes back as an error.
func (e *Encoder) Encode(v any) (out []byte, err error) {
	e.buf.Reset()
	if e.enc == nil {
		e.enc = gojson.NewEncoder(&e.buf)
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("encode %T: %v", v, p)
		}
	}()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(e.buf.Bytes(), []byte{'\n'}), nil
}

// Cap is the size of the buffer kept between calls.
func (e *Encoder) Cap() int { return e.buf.Cap() }

// Reset drops what the last Encode wrote; the buffer is kept.
func (e *Encoder) Reset() { e.buf.Reset() }
