package modelmeta

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// headerPrefetch is how much of a safetensors file the first read asks for
// when the index does not say how many tensors it holds: enough for the
// header of a typical single-file model, so most take one request.
const headerPrefetch int64 = 64 << 10

// prefetchFor estimates a shard's header from the tensors the index places
// in it (a header entry is its name plus under 128 bytes of dtype, shape and
// offsets), so that reading it takes one request and little more.
func prefetchFor(tensors []string) int64 {
	if len(tensors) == 0 {
		return headerPrefetch
	}
	n := int64(1024)
	for _, name := range tensors {
		n += int64(len(name)) + 128
	}
	return n
}

// Discover reads src's file listing, config.json and safetensors headers and
// returns what they say. Every error is an *Error naming the source and,
// when there is one, the file. See doc.go for the rules.
func Discover(ctx context.Context, src Source, opts Options) (Metadata, error) {
	d := &discovery{ctx: ctx, src: src, opts: opts.withDefaults()}
	m, err := d.run()
	if err != nil {
		return Metadata{}, d.wrap(err, "")
	}
	return m, nil
}

type discovery struct {
	ctx  context.Context
	src  Source
	opts Options
	all  map[string]File
}

// wrap turns any error into an *Error carrying the source and the file.
func (d *discovery) wrap(err error, file string) error {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Reason: ReasonUnavailable, Message: "reading failed", Err: err}
	} else {
		cp := *e
		e = &cp
	}
	if e.File == "" {
		e.File = file
	}
	if e.Source == "" {
		e.Source = d.src.Describe()
	}
	return e
}

func (d *discovery) run() (Metadata, error) {
	files, err := d.src.List(d.ctx)
	if err != nil {
		return Metadata{}, err
	}
	d.all = make(map[string]File, len(files))
	root := map[string]File{}
	for _, f := range files {
		d.all[f.Path] = f
		if !strings.Contains(f.Path, "/") {
			root[f.Path] = f
		}
	}
	format, weights := weightFiles(root)
	if format == "" {
		return Metadata{}, Errorf(ReasonNotFound, "", "no weight files (*.safetensors, *.gguf, *.bin, *.pt, *.pth) at the model's root among its %d files", len(files))
	}
	m := Metadata{Format: format}
	var cfg Config
	if cfgFile, ok := root[ConfigFile]; ok {
		if cfg, err = d.config(cfgFile); err != nil {
			return Metadata{}, err
		}
	} else if format != FormatGGUF {
		return Metadata{}, Errorf(ReasonConfigMissing, ConfigFile, "the model has no config.json at its root (%d files listed)", len(files))
	}
	m.applyConfig(cfg)
	switch format {
	case FormatSafetensors:
		err = d.safetensors(&m, root, weights, cfg.Quant.WeightBits)
	case FormatGGUF:
		err = d.gguf(&m, weights)
	default:
		m.WeightsBytes = sumSizes(weights)
	}
	if err != nil {
		return Metadata{}, err
	}
	m.Source, m.DownloadBytes = d.src.Describe(), sumSizes(files)
	return m, nil
}

func (m *Metadata) applyConfig(c Config) {
	m.Architecture, m.ModelType, m.DType, m.MaxTokens = c.Architecture, c.ModelType, c.DType, c.MaxTokens
	m.Quantization, m.QuantMethodRaw = c.Quant.Name, c.Quant.Method
	if c.FrameworkVersionRaw != "" {
		m.Framework = FrameworkTransformers
		m.FrameworkVersion, m.FrameworkVersionRaw = c.FrameworkVersion, c.FrameworkVersionRaw
	}
}

func sumSizes(files []File) int64 {
	var sum int64
	for _, f := range files {
		if f.Size > 0 {
			if s, ok := addInt64(sum, f.Size); ok {
				sum = s
			}
		}
	}
	return sum
}

func (d *discovery) config(f File) (Config, error) {
	data, err := d.readAll(f, d.opts.MaxConfigBytes)
	if err != nil {
		return Config{}, err
	}
	c, err := ParseConfig(data)
	if err != nil {
		return Config{}, &Error{Reason: ReasonHeaderMalformed, File: f.Path, Message: err.Error()}
	}
	return c, nil
}

// readAll reads a whole small file, at most limit bytes.
func (d *discovery) readAll(f File, limit int64) ([]byte, error) {
	if f.Size > limit {
		return nil, Errorf(ReasonTooLarge, f.Path, "%d bytes is more than the cap of %d", f.Size, limit)
	}
	if f.Size == 0 {
		return nil, nil
	}
	length := f.Size
	if length < 0 {
		length = limit + 1
	}
	data, err := d.read(f.Path, 0, length, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, Errorf(ReasonTooLarge, f.Path, "more than the cap of %d bytes", limit)
	}
	return data, nil
}

// read returns up to min(length, limit) bytes of path from offset.
func (d *discovery) read(path string, offset, length, limit int64) ([]byte, error) {
	if err := d.ctx.Err(); err != nil {
		return nil, d.wrap(err, path)
	}
	rc, err := d.src.ReadRange(d.ctx, path, offset, length)
	if err != nil {
		return nil, d.wrap(err, path)
	}
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(io.LimitReader(rc, min(length, limit)))
	if err != nil {
		return nil, d.wrap(err, path)
	}
	return data, nil
}

// header reads one safetensors header: one request of prefetch bytes, and a
// second for the rest of a longer header.
func (d *discovery) header(f File, prefetch int64) (Header, error) {
	first := min(prefetch, 8+d.opts.MaxHeaderBytes)
	if f.Size >= 0 {
		first = min(first, f.Size)
	}
	if first < 8 {
		first = 8
	}
	head, err := d.read(f.Path, 0, first, first)
	if err != nil {
		return Header{}, err
	}
	n, err := ReadHeaderLen(bytes.NewReader(head), d.opts.MaxHeaderBytes, f.Size)
	if err != nil {
		return Header{}, d.wrap(err, f.Path)
	}
	raw := head[8:]
	if int64(len(raw)) > n {
		raw = raw[:n]
	} else if int64(len(head)) == first && int64(len(raw)) < n {
		rest, err := d.read(f.Path, int64(len(head)), n-int64(len(raw)), n)
		if err != nil {
			return Header{}, err
		}
		raw = append(raw, rest...)
	}
	h, err := finishHeader(raw, n, f.Size)
	if err != nil {
		return Header{}, d.wrap(err, f.Path)
	}
	return h, nil
}

func (d *discovery) gguf(m *Metadata, weights []File) error {
	head, err := d.read(weights[0].Path, 0, 8, 8)
	if err != nil {
		return err
	}
	if len(head) < 8 || string(head[:4]) != "GGUF" {
		return Errorf(ReasonHeaderMalformed, weights[0].Path, "not a GGUF file (no GGUF magic)")
	}
	m.FormatVersion = fmt.Sprint(binary.LittleEndian.Uint32(head[4:]))
	m.WeightsBytes = sumSizes(weights)
	return nil
}

// shards is the safetensors files to read: the values of the index's
// weight_map when the model has model.safetensors.index.json, every
// *.safetensors at the root otherwise. want maps each shard to the tensors
// the index puts in it (nil without an index).
func (d *discovery) shards(root map[string]File, weights []File) ([]File, map[string][]string, error) {
	idx, ok := root[IndexFile]
	if !ok {
		return weights, nil, nil
	}
	data, err := d.readAll(idx, d.opts.MaxIndexBytes)
	if err != nil {
		return nil, nil, err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		return nil, nil, Errorf(ReasonHeaderMalformed, IndexFile, "not a valid index: %v", err)
	}
	if len(index.WeightMap) == 0 {
		return nil, nil, Errorf(ReasonHeaderMalformed, IndexFile, "weight_map is empty")
	}
	want := map[string][]string{}
	for tensor, shard := range index.WeightMap {
		want[shard] = append(want[shard], tensor)
	}
	if len(want) > d.opts.MaxShards {
		return nil, nil, Errorf(ReasonTooLarge, IndexFile, "%d shards is more than the cap of %d", len(want), d.opts.MaxShards)
	}
	files := make([]File, 0, len(want))
	for shard := range want {
		f, ok := d.all[shard]
		if !ok {
			return nil, nil, Errorf(ReasonNotFound, shard, "listed in %s's weight_map but not in the model's files", IndexFile)
		}
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, want, nil
}

func (d *discovery) safetensors(m *Metadata, root map[string]File, weights []File, weightBits int64) error {
	m.FormatVersion = FormatSafetensorsVersion
	files, want, err := d.shards(root, weights)
	if err != nil {
		return err
	}
	if len(files) > d.opts.MaxShards {
		return Errorf(ReasonTooLarge, "", "%d safetensors files is more than the cap of %d", len(files), d.opts.MaxShards)
	}
	for _, f := range files {
		h, err := d.header(f, prefetchFor(want[f.Path]))
		if err != nil {
			return err
		}
		if err := checkIndexed(h, want[f.Path], f.Path, want != nil); err != nil {
			return err
		}
		n, err := HeaderParams(h, weightBits)
		if err != nil {
			return Errorf(ReasonHeaderMalformed, f.Path, "%v", err)
		}
		var ok1, ok2 bool
		m.ParameterCount, ok1 = addInt64(m.ParameterCount, n)
		m.WeightsBytes, ok2 = addInt64(m.WeightsBytes, h.FileSize())
		if !ok1 || !ok2 {
			return Errorf(ReasonHeaderMalformed, f.Path, "parameter count or size overflows")
		}
	}
	return nil
}

// checkIndexed checks that every tensor the index places in a shard is in
// its header. A header may hold tensors the index does not list: they are
// counted, as loaders that read every tensor of a shard load them.
func checkIndexed(h Header, names []string, shard string, indexed bool) error {
	if !indexed {
		return nil
	}
	have := make(map[string]bool, len(h.Tensors))
	for _, t := range h.Tensors {
		have[t.Name] = true
	}
	for _, name := range names {
		if !have[name] {
			return Errorf(ReasonHeaderMalformed, shard, "%s places tensor %q here but the header does not have it", IndexFile, name)
		}
	}
	return nil
}
