package modelmeta

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/internal/hubtest"
)

// The published figures of the three models the test Hub serves (model
// cards and the Hub's safetensors parameter counts).
func TestDiscoverHubModels(t *testing.T) {
	hub := hubtest.NewServer()
	defer hub.Close()
	tests := []struct {
		uri  string
		want Metadata
	}{{
		uri: "hf://meta-llama/Llama-3.1-8B-Instruct",
		want: Metadata{Format: "safetensors", FormatVersion: "1.0.0", Framework: "transformers",
			FrameworkVersion: "4.42.3", FrameworkVersionRaw: "4.42.3", ModelType: "llama",
			Architecture: "LlamaForCausalLM", DType: "bfloat16", ParameterCount: 8_030_261_248,
			MaxTokens: 131072, Source: "hf://meta-llama/Llama-3.1-8B-Instruct@0e9e39f249a16976918f6564b8830bc894c89659"},
	}, {
		uri: "hf://Qwen/Qwen2.5-7B-Instruct",
		want: Metadata{Format: "safetensors", FormatVersion: "1.0.0", Framework: "transformers",
			FrameworkVersion: "4.43.1", FrameworkVersionRaw: "4.43.1", ModelType: "qwen2",
			Architecture: "Qwen2ForCausalLM", DType: "bfloat16", ParameterCount: 7_615_616_512,
			MaxTokens: 32768, Source: "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28"},
	}, {
		// 8,030,261,248 weights + 224 linears x (weight_scale + input_scale).
		uri: "hf://RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8",
		want: Metadata{Format: "safetensors", FormatVersion: "1.0.0", Framework: "transformers",
			FrameworkVersion: "4.43.3", FrameworkVersionRaw: "4.43.3", ModelType: "llama",
			Architecture: "LlamaForCausalLM", DType: "bfloat16", Quantization: "fp8",
			QuantMethodRaw: "compressed-tensors", ParameterCount: 8_030_261_248 + 448, MaxTokens: 131072},
	}}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			src, err := NewHF(tt.uri, HFOptions{Endpoint: hub.URL, Token: hubtest.Token})
			require.NoError(t, err)
			before := hub.BytesServed()
			got, err := Discover(context.Background(), src, Options{})
			require.NoError(t, err)
			served := hub.BytesServed() - before
			assert.Less(t, served, int64(2<<20), "discovery must read headers, never weights")
			assert.Greater(t, got.WeightsBytes, int64(8_000_000_000))
			if tt.want.Source == "" {
				tt.want.Source = src.Describe()
				assert.Regexp(t, `^hf://RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8@[0-9a-f]{40}$`, got.Source)
			}
			tt.want.WeightsBytes = got.WeightsBytes
			assert.Greater(t, got.DownloadBytes, got.WeightsBytes, "every file of the repository is downloaded")
			tt.want.DownloadBytes = got.DownloadBytes
			assert.Equal(t, tt.want, got)
		})
	}
}

// The weight bytes are the shards' sizes as the Hub lists them: BF16 is two
// bytes a parameter plus the headers, FP8 one byte for the linear weights.
func TestDiscoverHubWeightsBytes(t *testing.T) {
	hub := hubtest.NewServer()
	defer hub.Close()
	for uri, bounds := range map[string][2]int64{
		"hf://meta-llama/Llama-3.1-8B-Instruct":        {2 * 8_030_261_248, 2*8_030_261_248 + 1<<20},
		"hf://Qwen/Qwen2.5-7B-Instruct":                {2 * 7_615_616_512, 2*7_615_616_512 + 1<<20},
		"hf://RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8": {9_000_000_000, 9_100_000_000},
	} {
		src, err := NewHF(uri, HFOptions{Endpoint: hub.URL, Token: hubtest.Token})
		require.NoError(t, err)
		got, err := Discover(context.Background(), src, Options{})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, got.WeightsBytes, bounds[0], uri)
		assert.Less(t, got.WeightsBytes, bounds[1], uri)
	}
}

func TestDiscoverHubRefusals(t *testing.T) {
	hub := hubtest.NewServer()
	defer hub.Close()
	tests := []struct {
		name, uri, token string
		reason           Reason
		file             string
	}{
		{"private repo without a token", "hf://meta-llama/Llama-3.1-8B-Instruct", "", ReasonUnauthorized, ""},
		{"private repo with a wrong token", "hf://meta-llama/Llama-3.1-8B-Instruct", "hf_wrong", ReasonUnauthorized, ""},
		{"unknown repo without a token looks private", "hf://nobody/nothing", "", ReasonUnauthorized, ""},
		{"unknown repo with a token", "hf://nobody/nothing", hubtest.Token, ReasonNotFound, ""},
		{"unknown revision", "hf://Qwen/Qwen2.5-7B-Instruct@v9", "", ReasonNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := NewHF(tt.uri, HFOptions{Endpoint: hub.URL, Token: tt.token})
			require.NoError(t, err)
			_, err = Discover(context.Background(), src, Options{})
			require.Error(t, err)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.reason, e.Reason, err.Error())
			assert.Equal(t, tt.file, e.File)
			if tt.token != "" {
				assert.NotContains(t, err.Error(), tt.token, "errors never carry the token")
			}
		})
	}
}

func TestDiscoverHubPinnedRevision(t *testing.T) {
	hub := hubtest.NewServer()
	defer hub.Close()
	src, err := NewHF("hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28", HFOptions{Endpoint: hub.URL + "/"})
	require.NoError(t, err)
	got, err := Discover(context.Background(), src, Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(7_615_616_512), got.ParameterCount)
}

// A Llama-3.1-405B-shaped checkpoint saved in 5 GB shards has 191 of them,
// as the published one does. Discovery makes one request for the listing,
// one each for config.json and the index, and one per shard header (which
// the test Hub, like the Hub, answers with a redirect to its CDN: two
// requests).
func TestDiscoverHub405B(t *testing.T) {
	hub := hubtest.NewServer(hubtest.Llama405B())
	defer hub.Close()
	src, err := NewHF("hf://bench/Llama-3.1-405B-shaped", HFOptions{Endpoint: hub.URL})
	require.NoError(t, err)
	got, err := Discover(context.Background(), src, Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(405_853_388_800), got.ParameterCount)
	assert.Equal(t, int64(3+2*191), hub.Requests())
}
