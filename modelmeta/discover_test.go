package modelmeta

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const oneTensor = `{"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}}`

var plainConfig = []byte(`{"architectures":["LlamaForCausalLM"],"model_type":"llama","torch_dtype":"bfloat16","transformers_version":"4.43.0.dev0","max_position_embeddings":8192}`)

func TestDiscoverFiles(t *testing.T) {
	tests := []struct {
		name  string
		files map[string][]byte
		opts  Options
		want  Metadata
	}{{
		name:  "single model.safetensors",
		files: map[string][]byte{"config.json": plainConfig, "model.safetensors": stFile(oneTensor, 8)},
		want: Metadata{Format: "safetensors", FormatVersion: "1.0.0", Framework: "transformers", FrameworkVersion: "4.43.0",
			FrameworkVersionRaw: "4.43.0.dev0", ModelType: "llama", Architecture: "LlamaForCausalLM", DType: "bfloat16",
			ParameterCount: 4, MaxTokens: 8192, WeightsBytes: int64(len(stFile(oneTensor, 8)))},
	}, {
		name: "shards without an index are all read",
		files: map[string][]byte{"config.json": []byte(`{}`), "a.safetensors": stFile(oneTensor, 8), "b.safetensors": stFile(oneTensor, 8),
			"sub/c.safetensors": stFile(oneTensor, 8)},
		want: Metadata{Format: "safetensors", FormatVersion: "1.0.0", ParameterCount: 8, WeightsBytes: 2 * int64(len(stFile(oneTensor, 8)))},
	}, {
		name: "AWQ qweight unpacked per the config",
		files: map[string][]byte{
			"config.json":       []byte(`{"quantization_config":{"quant_method":"awq","bits":4}}`),
			"model.safetensors": stFile(`{"l.qweight":{"dtype":"I32","shape":[4,2],"data_offsets":[0,32]},"l.qzeros":{"dtype":"I32","shape":[1,2],"data_offsets":[32,40]},"l.scales":{"dtype":"F16","shape":[1,16],"data_offsets":[40,72]}}`, 72),
		},
		want: Metadata{Format: "safetensors", FormatVersion: "1.0.0", Quantization: "int4", QuantMethodRaw: "awq",
			ParameterCount: 64 + 2 + 16, WeightsBytes: int64(len(stFile(`{"l.qweight":{"dtype":"I32","shape":[4,2],"data_offsets":[0,32]},"l.qzeros":{"dtype":"I32","shape":[1,2],"data_offsets":[32,40]},"l.scales":{"dtype":"F16","shape":[1,16],"data_offsets":[40,72]}}`, 72)))},
	}, {
		name: "a shard's tensors the index does not list are counted",
		files: map[string][]byte{"config.json": []byte(`{}`), IndexFile: jsonOf(map[string]any{"weight_map": map[string]string{"w": "a.safetensors"}}),
			"a.safetensors":        stFile(`{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[3],"data_offsets":[1,4]}}`, 4),
			"unlisted.safetensors": stFile(oneTensor, 8)},
		want: Metadata{Format: "safetensors", FormatVersion: "1.0.0", ParameterCount: 4,
			WeightsBytes: int64(len(stFile(`{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[3],"data_offsets":[1,4]}}`, 4)))},
	}, {
		name:  "gguf without config.json",
		files: map[string][]byte{"model-Q4_K_M.gguf": append([]byte("GGUF\x03\x00\x00\x00"), make([]byte, 92)...), "README.md": []byte("hi")},
		want:  Metadata{Format: "gguf", FormatVersion: "3", WeightsBytes: 100},
	}, {
		name:  "pytorch .bin",
		files: map[string][]byte{"config.json": []byte(`{"transformers_version":"4.30.2"}`), "pytorch_model.bin": make([]byte, 50), "training_args.bin": make([]byte, 7)},
		want:  Metadata{Format: "pytorch", Framework: "transformers", FrameworkVersion: "4.30.2", FrameworkVersionRaw: "4.30.2", WeightsBytes: 50},
	}, {
		name: "safetensors win over .bin",
		files: map[string][]byte{"config.json": []byte(`{}`), "pytorch_model.bin": make([]byte, 50),
			"model.safetensors": stFile(oneTensor, 8)},
		want: Metadata{Format: "safetensors", FormatVersion: "1.0.0", ParameterCount: 4, WeightsBytes: int64(len(stFile(oneTensor, 8)))},
	}, {
		name:  "a header longer than the first read takes a second",
		files: map[string][]byte{"config.json": []byte(`{}`), "model.safetensors": stFile(bigHeader(100000), 100000)},
		want:  Metadata{Format: "safetensors", FormatVersion: "1.0.0", ParameterCount: 100000, WeightsBytes: int64(len(stFile(bigHeader(100000), 100000)))},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &memSource{repo: repoOf(tt.files)}
			got, err := Discover(context.Background(), src, tt.opts)
			require.NoError(t, err)
			tt.want.Source = "mem://test/model"
			for _, b := range tt.files { // every file is downloaded
				tt.want.DownloadBytes += int64(len(b))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestDiscoverDownloadBytes: the whole listing counts, subdirectories and
// non-weight files included, not only the root weights.
func TestDiscoverDownloadBytes(t *testing.T) {
	files := map[string][]byte{"config.json": []byte(`{}`), "model.safetensors": stFile(oneTensor, 8),
		"original/consolidated.00.pth": make([]byte, 1000), "tokenizer.json": make([]byte, 30)}
	got, err := Discover(context.Background(), &memSource{repo: repoOf(files)}, Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(len(stFile(oneTensor, 8))), got.WeightsBytes)
	assert.Equal(t, int64(2+len(stFile(oneTensor, 8))+1000+30), got.DownloadBytes)
}

// bigHeader is n one-byte U8 tensors of one element each.
func bigHeader(n int) string {
	m := map[string]any{}
	for i := range n {
		m["t"+string(rune('a'+i%26))+itoa(i)] = map[string]any{"dtype": "U8", "shape": []int{1}, "data_offsets": []int{i, i + 1}}
	}
	return string(jsonOf(m))
}

func itoa(i int) string { return string(jsonOf(i)) }

func TestDiscoverErrors(t *testing.T) {
	st := stFile(oneTensor, 8)
	index := func(m map[string]string) []byte { return jsonOf(map[string]any{"weight_map": m}) }
	tests := []struct {
		name   string
		files  map[string][]byte
		opts   Options
		reason Reason
		file   string
		msg    string
	}{
		{"no weights", map[string][]byte{"config.json": []byte(`{}`), "README.md": nil}, Options{}, ReasonNotFound, "", "no weight files"},
		{"no config.json", map[string][]byte{"model.safetensors": st}, Options{}, ReasonConfigMissing, "config.json", "no config.json"},
		{"config.json in a subdirectory only", map[string][]byte{"sub/config.json": []byte(`{}`), "model.safetensors": st}, Options{}, ReasonConfigMissing, "config.json", ""},
		{"config.json not JSON", map[string][]byte{"config.json": []byte(`nope`), "model.safetensors": st}, Options{}, ReasonHeaderMalformed, "config.json", "not a valid config.json"},
		{"config.json over the cap", map[string][]byte{"config.json": []byte(`{"a":"` + string(make([]byte, 100)) + `"}`), "model.safetensors": st}, Options{MaxConfigBytes: 50}, ReasonTooLarge, "config.json", "cap of 50"},
		{"malformed header names the shard", map[string][]byte{"config.json": []byte(`{}`), "model.safetensors": stFile(`{"w":{"dtype":"BF16","shape":[-2,2],"data_offsets":[0,8]}}`, 8)}, Options{}, ReasonHeaderMalformed, "model.safetensors", "negative dimension"},
		{"header over the configured cap", map[string][]byte{"config.json": []byte(`{}`), "model.safetensors": st}, Options{MaxHeaderBytes: 16}, ReasonTooLarge, "model.safetensors", "cap of 16"},
		{"index names a missing shard", map[string][]byte{"config.json": []byte(`{}`), "a.safetensors": st, IndexFile: index(map[string]string{"w": "b.safetensors"})}, Options{}, ReasonNotFound, "b.safetensors", "weight_map"},
		{"index places a tensor the shard lacks", map[string][]byte{"config.json": []byte(`{}`), "a.safetensors": st, IndexFile: index(map[string]string{"w": "a.safetensors", "v": "a.safetensors"})}, Options{}, ReasonHeaderMalformed, "a.safetensors", `tensor "v"`},
		{"empty weight_map", map[string][]byte{"config.json": []byte(`{}`), "a.safetensors": st, IndexFile: []byte(`{"weight_map":{}}`)}, Options{}, ReasonHeaderMalformed, IndexFile, "empty"},
		{"index not JSON", map[string][]byte{"config.json": []byte(`{}`), "a.safetensors": st, IndexFile: []byte(`{`)}, Options{}, ReasonHeaderMalformed, IndexFile, ""},
		{"too many shards", map[string][]byte{"config.json": []byte(`{}`), "a.safetensors": st, "b.safetensors": st}, Options{MaxShards: 1}, ReasonTooLarge, "", "2 safetensors files"},
		{"too many indexed shards", map[string][]byte{"config.json": []byte(`{}`), "a.safetensors": st, "b.safetensors": st, IndexFile: index(map[string]string{"w": "a.safetensors", "v": "b.safetensors"})}, Options{MaxShards: 1}, ReasonTooLarge, IndexFile, "2 shards"},
		{"truncated shard", map[string][]byte{"config.json": []byte(`{}`), "model.safetensors": st[:20]}, Options{}, ReasonHeaderMalformed, "model.safetensors", ""},
		{"gguf without magic", map[string][]byte{"m.gguf": []byte("NOPE1234")}, Options{}, ReasonHeaderMalformed, "m.gguf", "GGUF magic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Discover(context.Background(), &memSource{repo: repoOf(tt.files)}, tt.opts)
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.reason, e.Reason, err.Error())
			assert.Equal(t, tt.file, e.File, err.Error())
			assert.Equal(t, "mem://test/model", e.Source)
			assert.Contains(t, e.Message, tt.msg)
		})
	}
}

func TestDiscoverSourceErrors(t *testing.T) {
	files := map[string][]byte{"config.json": []byte(`{}`), "model.safetensors": stFile(oneTensor, 8)}
	_, err := Discover(context.Background(), &memSource{repo: repoOf(files), err: errors.New("connection reset")}, Options{})
	assert.Equal(t, ReasonUnavailable, ReasonOf(err))
	assert.ErrorContains(t, err, "connection reset")

	_, err = Discover(context.Background(), &memSource{repo: repoOf(files), err: Errorf(ReasonUnauthorized, "", "denied")}, Options{})
	assert.Equal(t, ReasonUnauthorized, ReasonOf(err))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Discover(ctx, &memSource{repo: repoOf(files)}, Options{})
	assert.Equal(t, ReasonUnavailable, ReasonOf(err))
	assert.ErrorIs(t, err, context.Canceled)
}

func TestReasonOf(t *testing.T) {
	assert.Equal(t, Reason(""), ReasonOf(nil))
	assert.Equal(t, ReasonUnavailable, ReasonOf(errors.New("x")))
	assert.Equal(t, ReasonTooLarge, ReasonOf(fmtWrap(Errorf(ReasonTooLarge, "f", "big"))))
	e := &Error{Reason: ReasonNotFound, Source: "hf://a/b@c", File: "config.json", Message: "gone", Err: errors.New("404")}
	assert.Equal(t, "NotFound: hf://a/b@c: config.json: gone: 404", e.Error())
}

func fmtWrap(err error) error { return errors.Join(errors.New("context"), err) }

// A shard header is read in one request when the index says how many
// tensors it holds, in two when it is longer than the first read.
func TestDiscoverHeaderReads(t *testing.T) {
	big := stFile(bigHeader(5000), 5000)
	tests := []struct {
		name  string
		files map[string][]byte
		reads int
	}{
		{"indexed shard: one read", map[string][]byte{"config.json": []byte(`{}`), "a.safetensors": big,
			IndexFile: jsonOf(map[string]any{"weight_map": tensorNames(big, "a.safetensors")})}, 3},
		{"no index, header over 64 KiB: two reads", map[string][]byte{"config.json": []byte(`{}`), "a.safetensors": big}, 3},
		{"no index, small header: one read", map[string][]byte{"config.json": []byte(`{}`), "a.safetensors": stFile(oneTensor, 8)}, 2},
	}
	for _, tt := range tests {
		src := &memSource{repo: repoOf(tt.files)}
		_, err := Discover(context.Background(), src, Options{})
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.reads, src.reads, tt.name)
	}
}

func tensorNames(file []byte, shard string) map[string]string {
	h, err := ParseHeader(bytes.NewReader(file), DefaultMaxHeaderBytes, -1)
	if err != nil {
		panic(err)
	}
	m := map[string]string{}
	for _, t := range h.Tensors {
		m[t.Name] = shard
	}
	return m
}
