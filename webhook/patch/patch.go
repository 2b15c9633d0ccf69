// Package patch builds the JSON patches the mutating handlers return.
//
// A handler decodes the raw object into a typed Go struct, changes it, and
// marshals it again. Diffing the raw request against that re-marshalled
// object would also "remove" every field our k8s.io/api version does not
// know — silent data loss after a cluster upgrade (Kueue lost KubeRay fields
// this way, kueue#2878). What the decode/encode round trip alone changes
// (removals of unknown fields, but also additions such as "resources": {}
// or "status": {}, or "1000m" written as "1") is never in the patch.
// Leaving out the additions too keeps a second pass over an already
// mutated object an empty patch, which reinvocation needs.
//
// Create walks three documents side by side: the raw request, the round
// trip (the request decoded and encoded, unchanged) and the mutated object.
// Where the round trip and the mutated object encode to the same bytes it
// writes nothing and looks no deeper, whatever the request holds there:
// every difference there is the round trip's. Where they differ and the
// request holds the round trip's very bytes, the request has nothing there
// the typed form lost, and the mutated value replaces it whole, in one
// operation. Otherwise it descends while all three are objects (or arrays
// of the round trip's length), so a field the typed form does not know,
// beside one berth changes, stays. A member the request lacks is added
// whole; a member the mutated object dropped is removed only if the
// request has it. Arrays are compared index by index: removals from the
// end, then additions, then changes within the common length. A member
// neither the round trip nor the mutated object has is never visited, so
// a handler may leave out of both encodings a field it neither writes nor
// reads (the pod handler leaves out metadata.managedFields): the request
// keeps it.
//
// Replacing whole what the request holds as the round trip does is for
// the API server, which applies the patch (gopkg.in/evanphx/json-patch.v4)
// by parsing every object on an operation's path and encoding the result
// again: a patch of one operation per changed subtree costs it far less
// than one per changed member (BenchmarkAPIServerAppliesPatch in
// webhook/handlers: the captured pod's fourteen operations in 218 µs, the
// same change as two in 106 µs, a fifth of the allocations).
//
// Nothing is decoded into generic maps: the walk splits raw bytes only
// along the path to a difference, which makes a pod's patch a few dozen
// allocations instead of the thousand a generic two-way diff costs. Each
// document is read once up front for where its strings, objects and
// arrays end (ends.go), so a split costs its members, not its bytes. Below
// the top the walk splits only where the request differs from the round
// trip (the API server encodes with the same types, so below metadata a
// pod's seldom does); a request equal to its round trip as a whole is
// split once for both at the top.
// The differential fuzz test in webhook/handlers (FuzzPodPatch) checks the
// result against the composed pod.
package patch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
)

// Create returns the JSON patch that turns original (the raw object of the
// request) into mutated, without removing anything that only the typed round
// trip lost. roundTripped is original decoded into the same Go type as mutated
// and marshalled again, unchanged. An empty result means "no change".
func Create(original []byte, roundTripped, mutated any) ([]byte, error) {
	rt, err := json.Marshal(roundTripped)
	if err != nil {
		return nil, fmt.Errorf("encode round-tripped object: %w", err)
	}
	mut, err := json.Marshal(mutated)
	if err != nil {
		return nil, fmt.Errorf("encode mutated object: %w", err)
	}
	return CreateFromJSON(original, rt, mut)
}

// CreateFromJSON is Create for objects already encoded: rt and mut must
// both come from encoding/json (of the same Go type), whose output is
// canonical, so equal bytes mean equal values.
func CreateFromJSON(original, rt, mut []byte) ([]byte, error) {
	if bytes.Equal(rt, mut) {
		return nil, nil
	}
	if kind(original) != '{' || kind(rt) != '{' || kind(mut) != '{' {
		return nil, fmt.Errorf("diff mutated object: the request, its round trip and the mutated object must all be JSON objects")
	}
	d := differs.Get().(*differ)
	defer d.release()
	d.out = append(make([]byte, 0, len(mut)+64), '[')
	docs := [...][]byte{original, rt, mut}
	if bytes.Equal(original, rt) {
		docs[0] = nil // the walk reads the round trip's bytes for both
	}
	for i, doc := range docs {
		d.docs[i].build(doc)
	}
	if err := d.object(original, rt, mut); err != nil {
		return nil, fmt.Errorf("diff mutated object: %w", err)
	}
	if d.ops == 0 {
		return nil, nil
	}
	return append(d.out, ']'), nil
}

// differ writes the operations of one patch. Its scratch space (path,
// members, elements) is used as stacks: each level of the walk appends
// its split and cuts back when done, and the space is pooled.
type differ struct {
	out      []byte // the patch so far, "[" and the operations
	path     []byte // JSON pointer of the value being compared
	ops      int
	members  []member
	elements [][]byte
	docs     [3]ends // the request, the round trip and the mutated object
}

// maxPooledIndex: an index grown beyond it (an unusually large object) is
// not kept.
const maxPooledIndex = 256 << 10

// indexOf is the index of the document v is part of, or nil.
func (d *differ) indexOf(v []byte) *ends {
	for i := range d.docs {
		if d.docs[i].base(v) >= 0 {
			return &d.docs[i]
		}
	}
	return nil
}

var differs = sync.Pool{New: func() any {
	return &differ{path: make([]byte, 0, 128), members: make([]member, 0, 128), elements: make([][]byte, 0, 32)}
}}

// release returns d to the pool, holding no part of any document.
func (d *differ) release() {
	clear(d.members[:cap(d.members)])
	clear(d.elements[:cap(d.elements)])
	for i := range d.docs {
		d.docs[i].doc = nil
		if cap(d.docs[i].at) > maxPooledIndex {
			d.docs[i] = ends{}
		}
	}
	d.out, d.path, d.ops = nil, d.path[:0], 0
	d.members, d.elements = d.members[:0], d.elements[:0]
	differs.Put(d)
}

// split appends the members of the object v to the scratch stack and
// returns them; the caller cuts the stack back to its length before.
func (d *differ) split(v []byte) ([]member, error) {
	start := len(d.members)
	ms, err := objectMembers(v, d.members, d.indexOf(v))
	if err != nil {
		return nil, err
	}
	d.members = ms
	return ms[start:len(ms):len(ms)], nil
}

// splitArray is split for the elements of an array.
func (d *differ) splitArray(v []byte) ([][]byte, error) {
	start := len(d.elements)
	es, err := arrayElements(v, d.elements, d.indexOf(v))
	if err != nil {
		return nil, err
	}
	d.elements = es
	return es[start:len(es):len(es)], nil
}

// object compares three objects: orig the request's, rt the round trip's,
// mut the mutated one; rt and mut differ.
func (d *differ) object(orig, rt, mut []byte) error {
	defer func(n int) { d.members = d.members[:n] }(len(d.members))
	rm, err := d.split(rt)
	if err != nil {
		return err
	}
	// The whole request as the round trip writes it (below the top value
	// descends only where they differ): one split serves both.
	om := rm
	if !bytes.Equal(orig, rt) {
		if om, err = d.split(orig); err != nil {
			return err
		}
	}
	mm, err := d.split(mut)
	if err != nil {
		return err
	}
	oi := newLookup(om)
	hint := 0
	for _, m := range mm {
		j := find(rm, m.key, hint)
		var rv []byte
		if j >= 0 {
			hint = j + 1
			rv = rm[j].value
			if bytes.Equal(rv, m.value) {
				continue
			}
		}
		if err := d.member(m.key, oi.get(m.key), rv, m.value); err != nil {
			return err
		}
	}
	hint = 0
	for _, r := range rm {
		j := find(mm, r.key, hint)
		if j >= 0 {
			hint = j + 1
			continue
		}
		if oi.get(r.key) != nil { // dropped by the mutation, and the request has it
			n := d.push(r.key)
			d.op("remove", nil)
			d.path = d.path[:n]
		}
	}
	return nil
}

// member compares one member; ov and rv are nil when the request or the
// round trip lacks it.
func (d *differ) member(key, ov, rv, mv []byte) error {
	n := d.push(key)
	defer func() { d.path = d.path[:n] }()
	if ov == nil {
		d.op("add", mv)
		return nil
	}
	return d.value(ov, rv, mv)
}

// value compares a value the request has; rv may be nil. Where the
// request holds the round trip's very bytes it replaces the value whole:
// nothing there is the request's alone.
func (d *differ) value(ov, rv, mv []byte) error {
	k := kind(mv)
	if rv != nil && kind(ov) == k && kind(rv) == k && !bytes.Equal(ov, rv) {
		switch k {
		case '{':
			return d.object(ov, rv, mv)
		case '[':
			return d.array(ov, rv, mv)
		}
	}
	d.op("replace", mv)
	return nil
}

// array compares three arrays index by index; orig is not rt.
func (d *differ) array(orig, rt, mut []byte) error {
	defer func(n int) { d.elements = d.elements[:n] }(len(d.elements))
	re, err := d.splitArray(rt)
	if err != nil {
		return err
	}
	oe, err := d.splitArray(orig) // value descends only where orig is not rt
	if err != nil {
		return err
	}
	if len(oe) != len(re) { // cannot happen for a slice; replace rather than guess
		d.op("replace", mut)
		return nil
	}
	me, err := d.splitArray(mut)
	if err != nil {
		return err
	}
	common := min(len(re), len(me))
	for i := len(re) - 1; i >= common; i-- {
		n := d.pushIndex(i)
		d.op("remove", nil)
		d.path = d.path[:n]
	}
	for i := common; i < len(me); i++ {
		n := d.pushIndex(i)
		d.op("add", me[i])
		d.path = d.path[:n]
	}
	for i := 0; i < common; i++ {
		if bytes.Equal(re[i], me[i]) {
			continue
		}
		n := d.pushIndex(i)
		err := d.value(oe[i], re[i], me[i])
		d.path = d.path[:n]
		if err != nil {
			return err
		}
	}
	return nil
}

// push appends "/key" (escaped as RFC 6901 says) to the path and returns
// the length to cut back to.
func (d *differ) push(key []byte) int {
	n := len(d.path)
	d.path = append(d.path, '/')
	for _, c := range key {
		switch c {
		case '~':
			d.path = append(d.path, '~', '0')
		case '/':
			d.path = append(d.path, '~', '1')
		default:
			d.path = append(d.path, c)
		}
	}
	return n
}

func (d *differ) pushIndex(i int) int {
	n := len(d.path)
	d.path = append(d.path, '/')
	d.path = strconv.AppendInt(d.path, int64(i), 10)
	return n
}

// op writes one operation at the current path; value is raw JSON, nil for
// a removal.
func (d *differ) op(name string, value []byte) {
	if d.ops > 0 {
		d.out = append(d.out, ',')
	}
	d.ops++
	d.out = append(d.out, `{"op":"`...)
	d.out = append(d.out, name...)
	d.out = append(d.out, `","path":`...)
	d.out = appendString(d.out, d.path)
	if value != nil {
		d.out = append(d.out, `,"value":`...)
		d.out = append(d.out, value...)
	}
	d.out = append(d.out, '}')
}

// appendString appends s as a JSON string. s is valid UTF-8 (keys the
// encoder wrote or the decoder read); only quotes, backslashes and control
// characters need escaping.
func appendString(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// lookup finds members of the request's object by key. The request may
// repeat a key (encoding/json keeps the last); a large object is indexed.
type lookup struct {
	ms  []member
	idx map[string]int
}

const indexAbove = 32

func newLookup(ms []member) lookup {
	l := lookup{ms: ms}
	if len(ms) > indexAbove {
		l.idx = make(map[string]int, len(ms))
		for i, m := range ms {
			l.idx[string(m.key)] = i
		}
	}
	return l
}

// get is the value of the last member named key, or nil.
func (l lookup) get(key []byte) []byte {
	if l.idx != nil {
		if i, ok := l.idx[string(key)]; ok {
			return l.ms[i].value
		}
		return nil
	}
	for i := len(l.ms) - 1; i >= 0; i-- {
		if bytes.Equal(l.ms[i].key, key) {
			return l.ms[i].value
		}
	}
	return nil
}
