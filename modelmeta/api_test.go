package modelmeta

import (
	"testing"

	"github.com/stretchr/testify/assert"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestParameterSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1K"}, {1500, "1.5K"}, {999_995, "1M"}, {999_994, "999.99K"},
		{494_032_768, "494.03M"}, {7_615_616_512, "7.62B"}, {8_030_261_248, "8.03B"},
		{8_030_261_696, "8.03B"}, {405_853_388_800, "405.85B"}, {1_005_000_000_000, "1.01T"},
		{7_000_000_000, "7B"}, {1<<63 - 1, "9223372.04T"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ParameterSize(tt.n), tt.n)
	}
}

func TestToAPI(t *testing.T) {
	m := Metadata{Format: "safetensors", FormatVersion: "1.0.0", Framework: "transformers",
		FrameworkVersion: "4.43.3", FrameworkVersionRaw: "4.43.3", ModelType: "llama",
		Architecture: "LlamaForCausalLM", Quantization: "fp8", QuantMethodRaw: "compressed-tensors",
		DType: "bfloat16", ParameterCount: 8_030_261_696, MaxTokens: 131072, WeightsBytes: 9_081_287_016,
		DownloadBytes: 9_100_000_000, Source: "hf://RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8@abc"}
	want := v1beta1.ModelMetadata{
		ModelFormat:        &v1beta1.ModelFormat{Name: "safetensors", Version: p("1.0.0")},
		ModelFramework:     &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: p("4.43.3")},
		ModelType:          p("llama"),
		ModelArchitecture:  p("LlamaForCausalLM"),
		Quantization:       p(v1beta1.ModelQuantization("fp8")),
		ModelParameterSize: p("8.03B"),
		ParameterCount:     p(int64(8_030_261_696)),
		MaxTokens:          p(int32(131072)),
		DType:              "bfloat16",
		WeightsBytes:       p(int64(9_081_287_016)),
		DownloadBytes:      p(int64(9_100_000_000)),
		Source:             "hf://RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8@abc",
	}
	assert.Equal(t, want, m.ToAPI())
	assert.Equal(t, v1beta1.ModelMetadata{}, Metadata{}.ToAPI(), "what the files did not tell stays unset")
	gguf := Metadata{Format: "gguf", FormatVersion: "3", WeightsBytes: 10}.ToAPI()
	assert.Equal(t, &v1beta1.ModelFormat{Name: "gguf", Version: p("3")}, gguf.ModelFormat)
	assert.Nil(t, gguf.ModelFramework)
}

func p[T any](v T) *T { return &v }
