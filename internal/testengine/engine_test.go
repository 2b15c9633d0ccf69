package testengine

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEngineAPI(t *testing.T) {
	dir := modelDir(t, "LlamaForCausalLM")
	_, srv := startEngine(t, EngineOptions{}, "python3", "-m", "sglang.launch_server", "--model-path", dir,
		"--served-model-name", "llama-1b", "--tp-size", "1")
	tests := []struct {
		name, method, path, body string
		status                   int
		contains                 []string
	}{
		{name: "health", method: "GET", path: "/health", status: 200},
		{name: "health_generate", method: "GET", path: "/health_generate", status: 200},
		{name: "models", method: "GET", path: "/v1/models", status: 200,
			contains: []string{`"id":"llama-1b"`, `"owned_by":"berth-test-engine"`, `"object":"list"`, `"max_model_len":4096`}},
		{name: "completion", method: "POST", path: "/v1/completions", status: 200,
			body: `{"model":"llama-1b","prompt":"Say hello to the cluster"}`,
			contains: []string{`"object":"text_completion"`, `"text":"berth-test-engine (a stand-in for SGLang, not a model) served llama-1b (LlamaForCausalLM) on pod pod-a: Say hello to the cluster"`,
				`"prompt_tokens":5`, `"finish_reason":"stop"`}},
		{name: "completion without model uses the served name", method: "POST", path: "/v1/completions", status: 200,
			body: `{"prompt":["a b","c"]}`, contains: []string{`served llama-1b (LlamaForCausalLM) on pod pod-a: a b c"`, `"prompt_tokens":3`}},
		{name: "token id prompt", method: "POST", path: "/v1/completions", status: 200,
			body: `{"prompt":[1,2,3]}`, contains: []string{`(3 token ids)`}},
		{name: "chat", method: "POST", path: "/v1/chat/completions", status: 200,
			body:     `{"model":"llama-1b","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi there"}]}]}`,
			contains: []string{`"object":"chat.completion"`, `"role":"assistant"`, `on pod pod-a: be brief hi there"`, `"prompt_tokens":4`}},
		{name: "long prompts are cut", method: "POST", path: "/v1/completions", status: 200,
			body: `{"prompt":"1 2 3 4 5 6 7 8 9 10 11 12 13 14"}`, contains: []string{`: 1 2 3 4 5 6 7 8 9 10 11 12 ..."`, `"prompt_tokens":14`}},
		{name: "bad JSON", method: "POST", path: "/v1/completions", body: `{"prompt":`, status: 400,
			contains: []string{`"error":{`, `"type":"BadRequestError"`, `"code":400`, "not valid JSON"}},
		{name: "no prompt", method: "POST", path: "/v1/completions", body: `{}`, status: 400, contains: []string{"prompt is required"}},
		{name: "no messages", method: "POST", path: "/v1/chat/completions", body: `{"messages":[]}`, status: 400, contains: []string{"messages is required"}},
		{name: "bad content", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":7}]}`, status: 400,
			contains: []string{"messages[0].content"}},
		{name: "unknown model", method: "POST", path: "/v1/completions", body: `{"model":"gpt-4","prompt":"x"}`, status: 404,
			contains: []string{"The model `gpt-4` does not exist.", `"type":"NotFoundError"`, `"param":"model"`}},
		{name: "model info", method: "GET", path: "/get_model_info", status: 200,
			contains: []string{`"model_path":"` + dir + `"`, `"is_generation":true`, `"architecture":"LlamaForCausalLM"`}},
		{name: "server info", method: "GET", path: "/get_server_info", status: 200,
			contains: []string{`"served_model_name":"llama-1b"`, `"disaggregation_mode":"null"`, `ignored flag --tp-size 1`, `"stand_in_for":"SGLang"`}},
		{name: "unknown path", method: "GET", path: "/v2/models", status: 404, contains: []string{"serves no such endpoint"}},
		{name: "vLLM's LoRA path is not SGLang's", method: "POST", path: "/v1/load_lora_adapter", body: `{}`, status: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, tt.method, srv.URL+tt.path, tt.body)
			assert.Equal(t, tt.status, a.status, a.body)
			assert.Equal(t, "stand-in", a.header.Get(HeaderStandIn))
			for _, c := range tt.contains {
				assert.Contains(t, a.body, c)
			}
		})
	}
}

func TestEngineMetrics(t *testing.T) {
	for _, tt := range []struct {
		argv    []string
		running string
	}{
		{argv: []string{"python3", "-m", "sglang.launch_server", "--model-path"}, running: "sglang:num_running_reqs 0"},
		{argv: []string{"vllm", "serve"}, running: "vllm:num_requests_running 0"},
	} {
		_, srv := startEngine(t, EngineOptions{}, append(tt.argv, modelDir(t, "X"))...)
		call(t, "POST", srv.URL+"/v1/completions", `{"prompt":"a"}`)
		call(t, "POST", srv.URL+"/v1/completions", `{`)
		m := call(t, "GET", srv.URL+"/metrics", "").body
		for _, want := range []string{
			`berth_test_engine_requests_total{code="200",endpoint="/v1/completions"} 1`,
			`berth_test_engine_requests_total{code="400",endpoint="/v1/completions"} 1`,
			"berth_test_engine_running_requests 0", "berth_test_engine_queue_depth 0",
			"berth_test_engine_lora_adapters_loaded 0", tt.running,
		} {
			assert.Contains(t, m, want)
		}
	}
}

func TestEngineNotReady(t *testing.T) {
	cfg, err := Parse([]string{"vllm", "serve", modelDir(t, "X")})
	require.NoError(t, err)
	model, err := LoadModel(cfg.ModelPath)
	require.NoError(t, err)
	e, err := NewEngine(cfg, model, EngineOptions{})
	require.NoError(t, err)
	srv := newLoopback(t, e.Handler())
	assert.Equal(t, http.StatusServiceUnavailable, call(t, "GET", srv+"/health", "").status)
	assert.Equal(t, http.StatusServiceUnavailable, call(t, "POST", srv+"/v1/completions", `{"prompt":"a"}`).status)
	e.SetReady()
	assert.Equal(t, http.StatusOK, call(t, "GET", srv+"/health", "").status)
}

func TestEngineStream(t *testing.T) {
	_, srv := startEngine(t, EngineOptions{}, "vllm", "serve", modelDir(t, "MistralForCausalLM"), "--served-model-name", "m")
	for _, tt := range []struct {
		path, body, object string
		usage              bool
	}{
		{path: "/v1/completions", body: `{"prompt":"one two","stream":true}`, object: "text_completion"},
		{path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"one two"}],"stream":true,"stream_options":{"include_usage":true}}`,
			object: "chat.completion.chunk", usage: true},
	} {
		a := call(t, "POST", srv.URL+tt.path, tt.body)
		require.Equal(t, 200, a.status, a.body)
		assert.Equal(t, "text/event-stream", a.header.Get("Content-Type"))
		events := strings.Split(strings.TrimSpace(a.body), "\n\n")
		require.Greater(t, len(events), 3)
		assert.Equal(t, "data: [DONE]", events[len(events)-1])
		var text strings.Builder
		finished, usage := false, false
		for _, ev := range events[:len(events)-1] {
			require.True(t, strings.HasPrefix(ev, "data: "), ev)
			chunk := decodeJSON(t, strings.TrimPrefix(ev, "data: "))
			assert.Equal(t, tt.object, chunk["object"])
			if u, ok := chunk["usage"].(map[string]any); ok {
				usage = true
				assert.EqualValues(t, 2, u["prompt_tokens"])
				continue
			}
			choice := chunk["choices"].([]any)[0].(map[string]any)
			if choice["finish_reason"] == "stop" {
				finished = true
			}
			if d, ok := choice["delta"].(map[string]any); ok {
				if c, ok := d["content"].(string); ok {
					text.WriteString(c)
				}
			} else {
				text.WriteString(choice["text"].(string))
			}
		}
		assert.True(t, finished)
		assert.Equal(t, tt.usage, usage)
		assert.Equal(t, "berth-test-engine (a stand-in for vLLM, not a model) served m (MistralForCausalLM) on pod pod-a: one two", text.String())
	}
}
