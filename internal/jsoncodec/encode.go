package jsoncodec

import (
	"bytes"
	"fmt"
	"sync"

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

// EncoderPool keeps Encoders for reuse, dropping any whose buffer grew
// beyond Max bytes (an unusually large object). The zero value with Max
// set is ready, and safe for concurrent use.
type EncoderPool struct {
	Max  int
	pool sync.Pool
}

// Get is a pooled Encoder, or a new one.
func (p *EncoderPool) Get() *Encoder {
	if e, ok := p.pool.Get().(*Encoder); ok {
		return e
	}
	return new(Encoder)
}

// Put returns e to the pool; no byte slice e returned may be used after.
func (p *EncoderPool) Put(e *Encoder) {
	if e.buf.Cap() > p.Max {
		return
	}
	e.buf.Reset()
	p.pool.Put(e)
}
