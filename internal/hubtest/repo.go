package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
)

// File is one file of a repository. Head holds its real leading bytes; the
// rest, up to Size, reads as zeros, so a 5 GB shard costs only its header.
type File struct {
	Path string
	Size int64
	Head []byte
	// LFS files are listed with an lfs block and their resolve URL
	// redirects to the test server's CDN route, as on the Hub.
	LFS bool
}

// ReadAt reads the virtual file: Head, then zeros.
func (f File) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.Size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off < f.Size {
		if off < int64(len(f.Head)) {
			c := copy(p[n:], f.Head[off:])
			n += c
			off += int64(c)
			continue
		}
		p[n] = 0
		n++
		off++
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Repo is one model repository at one commit.
type Repo struct {
	ID      string // org/name
	SHA     string // the commit "main" resolves to
	Private bool   // needs the server's token
	Files   []File
}

// File returns the file at path.
func (r *Repo) File(path string) (File, bool) {
	for _, f := range r.Files {
		if f.Path == path {
			return f, true
		}
	}
	return File{}, false
}

// tensor is one row of a model's tensor table.
type tensor struct {
	name  string
	dtype string
	shape []int64
}

func t(name, dtype string, shape ...int64) tensor { return tensor{name, dtype, shape} }

var dtypeBytes = map[string]int64{"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "I32": 4, "U8": 1}

func (x tensor) bytes() int64 {
	n := dtypeBytes[x.dtype]
	for _, d := range x.shape {
		n *= d
	}
	return n
}

// spec is a model's tensor table: the tensors before the decoder layers,
// one layer (names with %d), the layer count, and the tensors after, in
// state-dict order, plus how the checkpoint was sharded.
type spec struct {
	id, sha  string
	private  bool
	shardCap int64 // max_shard_size the checkpoint was saved with
	pre      []tensor
	layer    []tensor
	layers   int
	post     []tensor
	others   []File // files discovery does not read
}

func (s spec) tensors() []tensor {
	out := append([]tensor(nil), s.pre...)
	for i := range s.layers {
		for _, x := range s.layer {
			out = append(out, tensor{fmt.Sprintf(x.name, i), x.dtype, x.shape})
		}
	}
	return append(out, s.post...)
}

// shard splits tensors in order as transformers' save_pretrained does: a new
// shard starts when the next tensor would take the current one past the cap.
func shard(ts []tensor, limit int64) [][]tensor {
	var shards [][]tensor
	var cur []tensor
	var size int64
	for _, x := range ts {
		if len(cur) > 0 && size+x.bytes() > limit {
			shards = append(shards, cur)
			cur, size = nil, 0
		}
		cur = append(cur, x)
		size += x.bytes()
	}
	return append(shards, cur)
}

// headerBytes is a safetensors file's prefix and header for ts: data laid
// out by name, the JSON padded with spaces to a multiple of 8, as the
// safetensors library writes it. It returns the data section's size too.
func headerBytes(ts []tensor) ([]byte, int64) {
	sorted := append([]tensor(nil), ts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	entries := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, x := range sorted {
		entries[x.name] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int64{off, off + x.bytes()}}
		off += x.bytes()
	}
	js, err := json.Marshal(entries)
	if err != nil {
		panic(err) // static tables: cannot happen
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	out := make([]byte, 8, 8+len(js))
	binary.LittleEndian.PutUint64(out, uint64(len(js)))
	return append(out, js...), off
}

// build generates a repository from its spec and its config.json.
func (s spec) build(config []byte) *Repo {
	r := &Repo{ID: s.id, SHA: s.sha, Private: s.private}
	if r.SHA == "" {
		sum := sha1.Sum([]byte(s.id))
		r.SHA = hex.EncodeToString(sum[:])
	}
	r.Files = append(r.Files, File{Path: "config.json", Size: int64(len(config)), Head: config})
	shards := shard(s.tensors(), s.shardCap)
	weightMap := map[string]string{}
	var total int64
	for i, ts := range shards {
		name := "model.safetensors"
		if len(shards) > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		}
		head, data := headerBytes(ts)
		r.Files = append(r.Files, File{Path: name, Size: int64(len(head)) + data, Head: head, LFS: true})
		for _, x := range ts {
			weightMap[x.name] = name
		}
		total += data
	}
	if len(shards) > 1 {
		index, err := json.MarshalIndent(map[string]any{"metadata": map[string]int64{"total_size": total}, "weight_map": weightMap}, "", "  ")
		if err != nil {
			panic(err)
		}
		r.Files = append(r.Files, File{Path: "model.safetensors.index.json", Size: int64(len(index)), Head: index})
	}
	for _, f := range s.others {
		if f.Head == nil {
			f.Head = fmt.Appendf(nil, "placeholder for %s\n", f.Path)
		}
		r.Files = append(r.Files, f)
	}
	sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
	return r
}

// realSHAMax is the largest file whose real sha256 the test server lists;
// larger (generated, mostly zero) files get a stand-in.
const realSHAMax = 64 << 20

// lfsSHA is a file's sha256 as the Hub lists it: the real one for files of
// at most realSHAMax bytes, else a stable stand-in (the test server never
// hashes gigabytes of zeros), so a downloader that checks sha256 can fetch
// the small repositories (Tiny) but not the large generated ones.
func lfsSHA(repo string, f File) string {
	if f.Size <= realSHAMax {
		h := sha256.New()
		_, _ = io.Copy(h, io.NewSectionReader(f, 0, f.Size))
		return hex.EncodeToString(h.Sum(nil))
	}
	sum := sha256.Sum256(bytes.Join([][]byte{[]byte(repo), []byte(f.Path), f.Head}, []byte{0}))
	return hex.EncodeToString(sum[:])
}
