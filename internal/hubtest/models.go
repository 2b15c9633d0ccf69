package hubtest

import (
	"embed"
	"fmt"
)

//go:embed testdata
var testdata embed.FS

// Repository ids of the models the test Hub serves.
const (
	LlamaID = "meta-llama/Llama-3.1-8B-Instruct"
	QwenID  = "Qwen/Qwen2.5-7B-Instruct"
	FP8ID   = "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8"
)

// llamaLayer is one Llama decoder layer (hidden h, kv width kv, mlp m) with
// linear weights of dtype w and norms in BF16.
func llamaLayer(h, kv, m int64, w string) []tensor {
	return []tensor{
		t("model.layers.%d.self_attn.q_proj.weight", w, h, h),
		t("model.layers.%d.self_attn.k_proj.weight", w, kv, h),
		t("model.layers.%d.self_attn.v_proj.weight", w, kv, h),
		t("model.layers.%d.self_attn.o_proj.weight", w, h, h),
		t("model.layers.%d.mlp.gate_proj.weight", w, m, h),
		t("model.layers.%d.mlp.up_proj.weight", w, m, h),
		t("model.layers.%d.mlp.down_proj.weight", w, h, m),
		t("model.layers.%d.input_layernorm.weight", "BF16", h),
		t("model.layers.%d.post_attention_layernorm.weight", "BF16", h),
	}
}

// llamaSpec is a Llama-architecture checkpoint: vocab v, hidden h, kv width
// kv, mlp m, n layers, BF16.
func llamaSpec(id string, v, h, kv, m int64, n int) spec {
	return spec{
		id:       id,
		shardCap: 5_000_000_000,
		pre:      []tensor{t("model.embed_tokens.weight", "BF16", v, h)},
		layer:    llamaLayer(h, kv, m, "BF16"),
		layers:   n,
		post:     []tensor{t("model.norm.weight", "BF16", h), t("lm_head.weight", "BF16", v, h)},
	}
}

// Llama-3.1-8B-Instruct: vocab 128256, hidden 4096, 8 KV heads of 128, MLP
// 14336, 32 layers, BF16, four shards of at most 5 GB. 8,030,261,248
// parameters. Gated on the Hub, so private here.
func llamaSpec8B() spec {
	s := llamaSpec(LlamaID, 128256, 4096, 1024, 14336, 32)
	s.sha = "0e9e39f249a16976918f6564b8830bc894c89659"
	s.private = true
	s.others = []File{
		{Path: ".gitattributes", Size: 1519}, {Path: "LICENSE", Size: 7627}, {Path: "README.md", Size: 44040},
		{Path: "USE_POLICY.md", Size: 4691}, {Path: "generation_config.json", Size: 184},
		{Path: "original/consolidated.00.pth", Size: 16060617592, LFS: true},
		{Path: "original/params.json", Size: 199}, {Path: "original/tokenizer.model", Size: 2183982, LFS: true},
		{Path: "special_tokens_map.json", Size: 296}, {Path: "tokenizer.json", Size: 9085657, LFS: true},
		{Path: "tokenizer_config.json", Size: 55351},
	}
	return s
}

// Qwen2.5-7B-Instruct: vocab 152064, hidden 3584, 4 KV heads of 128, MLP
// 18944, 28 layers with q/k/v biases, BF16, four shards of at most 4 GB.
// 7,615,616,512 parameters.
func qwenSpec() spec {
	const h, kv, m = 3584, 512, 18944
	layer := []tensor{
		t("model.layers.%d.self_attn.q_proj.weight", "BF16", h, h),
		t("model.layers.%d.self_attn.q_proj.bias", "BF16", h),
		t("model.layers.%d.self_attn.k_proj.weight", "BF16", kv, h),
		t("model.layers.%d.self_attn.k_proj.bias", "BF16", kv),
		t("model.layers.%d.self_attn.v_proj.weight", "BF16", kv, h),
		t("model.layers.%d.self_attn.v_proj.bias", "BF16", kv),
		t("model.layers.%d.self_attn.o_proj.weight", "BF16", h, h),
		t("model.layers.%d.mlp.gate_proj.weight", "BF16", m, h),
		t("model.layers.%d.mlp.up_proj.weight", "BF16", m, h),
		t("model.layers.%d.mlp.down_proj.weight", "BF16", h, m),
		t("model.layers.%d.input_layernorm.weight", "BF16", h),
		t("model.layers.%d.post_attention_layernorm.weight", "BF16", h),
	}
	return spec{
		id:       QwenID,
		sha:      "a09a35458c702b33eeacc393d103063234e8bc28",
		shardCap: 4_000_000_000,
		pre:      []tensor{t("model.embed_tokens.weight", "BF16", 152064, h)},
		layer:    layer,
		layers:   28,
		post:     []tensor{t("model.norm.weight", "BF16", h), t("lm_head.weight", "BF16", 152064, h)},
		others: []File{
			{Path: ".gitattributes", Size: 1519}, {Path: "LICENSE", Size: 11343}, {Path: "README.md", Size: 6240},
			{Path: "generation_config.json", Size: 243}, {Path: "merges.txt", Size: 1671853},
			{Path: "tokenizer.json", Size: 7031645}, {Path: "tokenizer_config.json", Size: 7305},
			{Path: "vocab.json", Size: 2776833},
		},
	}
}

// Meta-Llama-3.1-8B-Instruct-FP8 (llm-compressor, compressed-tensors): the
// seven linear layers of every decoder layer hold F8_E4M3 weights, each
// with a one-element BF16 weight_scale and input_scale (per-tensor FP8
// weights, static per-tensor FP8 activations); embeddings, norms and lm_head
// stay BF16. Two shards of at most 5 GB. Parameters: the 8,030,261,248
// weights plus 32 layers x 7 linears x 2 scales = 448, i.e. 8,030,261,696.
func fp8Spec() spec {
	const h, kv, m = 4096, 1024, 14336
	var layer []tensor
	for _, x := range llamaLayer(h, kv, m, "F8_E4M3") {
		if x.dtype != "F8_E4M3" {
			layer = append(layer, x)
			continue
		}
		base := x.name[:len(x.name)-len(".weight")]
		layer = append(layer, x, t(base+".input_scale", "BF16", 1), t(base+".weight_scale", "BF16", 1))
	}
	return spec{
		id:       FP8ID,
		shardCap: 5_000_000_000,
		pre:      []tensor{t("model.embed_tokens.weight", "BF16", 128256, h)},
		layer:    layer,
		layers:   32,
		post:     []tensor{t("model.norm.weight", "BF16", h), t("lm_head.weight", "BF16", 128256, h)},
		others: []File{
			{Path: ".gitattributes", Size: 1519}, {Path: "README.md", Size: 11542},
			{Path: "generation_config.json", Size: 177}, {Path: "special_tokens_map.json", Size: 296},
			{Path: "tokenizer.json", Size: 9085657, LFS: true}, {Path: "tokenizer_config.json", Size: 50977},
		},
	}
}

func load(s spec) *Repo {
	config, err := testdata.ReadFile("testdata/" + s.id + "/config.json")
	if err != nil {
		panic(fmt.Sprintf("hubtest: fixture for %s: %v", s.id, err)) // embedded: cannot happen
	}
	return s.build(config)
}

// Llama returns meta-llama/Llama-3.1-8B-Instruct (private: needs the token).
func Llama() *Repo { return load(llamaSpec8B()) }

// Qwen returns Qwen/Qwen2.5-7B-Instruct.
func Qwen() *Repo { return load(qwenSpec()) }

// LlamaFP8 returns RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8.
func LlamaFP8() *Repo { return load(fp8Spec()) }

// Models returns the three real models the test Hub serves by default.
func Models() []*Repo { return []*Repo{Llama(), Qwen(), LlamaFP8()} }

// Llama405B returns a Llama-3.1-405B-shaped checkpoint (vocab 128256, hidden
// 16384, 8 KV heads of 128, MLP 53248, 126 layers, BF16, 5 GB shards) with
// the Llama-3.1-8B config.json, for benchmarks: 191 shards and their index,
// 405,853,388,800 parameters.
func Llama405B() *Repo {
	s := llamaSpec("bench/Llama-3.1-405B-shaped", 128256, 16384, 1024, 53248, 126)
	config, err := testdata.ReadFile("testdata/" + LlamaID + "/config.json")
	if err != nil {
		panic(err)
	}
	return s.build(config)
}

// Tiny IDs: small Llama-shaped repositories for download tests.
const (
	TinyID        = "berthdev/tiny-llama"
	TinyPrivateID = "berthdev/tiny-llama-gated"
)

// Tiny returns a Llama-shaped repository of about 220 kB (vocab 256,
// hidden 64, 2 layers, two shards of at most 120 kB and their index, a
// tokenizer, .gitattributes and original/params.json), small enough to
// download in a test; its LFS files' sha256 are the real ones. private
// makes it TinyPrivateID, which needs Token.
func Tiny(private bool) *Repo {
	id := TinyID
	if private {
		id = TinyPrivateID
	}
	s := llamaSpec(id, 256, 64, 32, 128, 2)
	s.shardCap, s.private = 120_000, private
	s.others = []File{
		{Path: ".gitattributes", Size: 26, Head: []byte("*.safetensors filter=lfs\n\n")},
		{Path: "tokenizer.json", Size: 17, Head: []byte(`{"version":"1.0"}`)},
		{Path: "original/params.json", Size: 14, Head: []byte(`{"dim":64}` + "\n\n\n\n")},
	}
	config, err := testdata.ReadFile("testdata/" + LlamaID + "/config.json")
	if err != nil {
		panic(fmt.Sprintf("hubtest: fixture for %s: %v", LlamaID, err)) // embedded: cannot happen
	}
	return s.build(config)
}
