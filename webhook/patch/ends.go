package patch

import "math"

// ends is one document's structure, found in one pass: for the offset of
// each string, object and array in it, the offset just past its end.
// Splitting an object then costs its members, not its bytes: without it
// the walk read every byte once per level above it (a pod's container
// five times), which was most of the diff.
type ends struct {
	doc   []byte
	at    []int32 // meaningful only at the offsets build recorded
	stack []int32
}

// build indexes doc; on malformed JSON (or a document over 2 GiB) it
// indexes nothing and reports false, and the walk scans as before (and
// fails where the document is malformed, if it goes there).
func (e *ends) build(doc []byte) bool {
	e.doc = nil
	if len(doc) > math.MaxInt32 {
		return false
	}
	if cap(e.at) < len(doc) {
		e.at = make([]int32, len(doc))
	}
	at, stack := e.at[:len(doc)], e.stack[:0]
	for i := 0; i < len(doc); {
		switch c := doc[i]; c {
		case '"':
			end, err := skipString(doc, i)
			if err != nil {
				return false
			}
			at[i] = int32(end)
			i = end
			continue
		case '{', '[':
			stack = append(stack, int32(i))
		case '}', ']':
			n := len(stack) - 1
			if n < 0 || doc[stack[n]] != c-2 { // '{'+2 == '}', '['+2 == ']'
				return false
			}
			at[stack[n]] = int32(i + 1)
			stack = stack[:n]
		}
		i++
		for i < len(doc) && !structural[doc[i]] {
			i++
		}
	}
	e.stack = stack
	if len(stack) != 0 {
		return false
	}
	e.doc, e.at = doc, at
	return true
}

// base is the offset of v in the indexed document, or -1 when v is not a
// part of it.
func (e *ends) base(v []byte) int {
	if e == nil || e.doc == nil || len(v) == 0 {
		return -1
	}
	b := cap(e.doc) - cap(v)
	if b < 0 || b+len(v) > len(e.doc) || &e.doc[b] != &v[0] {
		return -1
	}
	return b
}

// skip is skipValue(data, i) for data at offset base of the document
// (base < 0: not indexed).
func (e *ends) skip(data []byte, base, i int) (int, error) {
	if base >= 0 && i < len(data) {
		switch c := data[i]; c {
		case '"', '{', '[':
			end := int(e.at[base+i]) - base
			if end > i && end <= len(data) && data[end-1] == closer[c] {
				return end, nil
			}
		}
	}
	return skipValue(data, i)
}

var closer = [256]byte{'"': '"', '{': '}', '[': ']'}
