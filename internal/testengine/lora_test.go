package testengine

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVLLMLoRA(t *testing.T) {
	good, missing, noConfig := adapterDir(t), filepath.Join(t.TempDir(), "absent"), t.TempDir()
	badJSON := t.TempDir()
	writeFile(t, filepath.Join(badJSON, "adapter_config.json"), "{")
	_, srv := startEngine(t, EngineOptions{RuntimeLoRA: true}, "vllm", "serve", modelDir(t, "LlamaForCausalLM"),
		"--served-model-name", "base", "--enable-lora", "--max-loras", "2")
	load := func(name, path string) string { return fmt.Sprintf(`{"lora_name":%q,"lora_path":%q}`, name, path) }
	steps := []struct {
		name, path, body string
		status           int
		contains         string
	}{
		{name: "load", path: "/v1/load_lora_adapter", body: load("sql", good), status: 200, contains: "Success: LoRA adapter 'sql' added successfully."},
		{name: "load again", path: "/v1/load_lora_adapter", body: load("sql", good), status: 400, contains: "The lora adapter 'sql' has already been loaded."},
		{name: "missing dir", path: "/v1/load_lora_adapter", body: load("x", missing), status: 400, contains: "LoRA adapter at " + missing},
		{name: "no adapter_config.json", path: "/v1/load_lora_adapter", body: load("x", noConfig), status: 400,
			contains: filepath.Join(noConfig, "adapter_config.json")},
		{name: "bad adapter_config.json", path: "/v1/load_lora_adapter", body: load("x", badJSON), status: 400, contains: "is not valid JSON"},
		{name: "base model's name", path: "/v1/load_lora_adapter", body: load("base", good), status: 400, contains: "has the name of the base model"},
		{name: "no name", path: "/v1/load_lora_adapter", body: `{"lora_path":"/x"}`, status: 400, contains: "lora_name is required"},
		{name: "bad JSON", path: "/v1/load_lora_adapter", body: `[`, status: 400, contains: "not valid JSON"},
		{name: "adapter is servable", path: "/v1/completions", body: `{"model":"sql","prompt":"select"}`, status: 200,
			contains: "served sql (LoRA adapter " + good + " of base, LlamaForCausalLM) on pod pod-a: select"},
		{name: "unload", path: "/v1/unload_lora_adapter", body: `{"lora_name":"sql"}`, status: 200, contains: "Success: LoRA adapter 'sql' removed successfully."},
		{name: "unload again", path: "/v1/unload_lora_adapter", body: `{"lora_name":"sql"}`, status: 400, contains: "The lora adapter 'sql' cannot be found."},
		{name: "unloaded adapter is gone", path: "/v1/completions", body: `{"model":"sql","prompt":"select"}`, status: 404, contains: "does not exist"},
	}
	for _, s := range steps {
		a := call(t, "POST", srv.URL+s.path, s.body)
		assert.Equal(t, s.status, a.status, "%s: %s", s.name, a.body)
		assert.Contains(t, a.body, s.contains, s.name)
	}
}

func TestVLLMLoRAListedWithParent(t *testing.T) {
	a := adapterDir(t)
	_, srv := startEngine(t, EngineOptions{RuntimeLoRA: true}, "vllm", "serve", modelDir(t, "X"), "--served-model-name", "base",
		"--enable-lora", "--lora-modules", "boot="+a)
	require.Equal(t, 200, call(t, "POST", srv.URL+"/v1/load_lora_adapter", fmt.Sprintf(`{"lora_name":"late","lora_path":%q}`, a)).status)
	models := decodeJSON(t, call(t, "GET", srv.URL+"/v1/models", "").body)["data"].([]any)
	require.Len(t, models, 3)
	var ids []string
	for _, m := range models {
		m := m.(map[string]any)
		ids = append(ids, m["id"].(string))
		assert.Equal(t, OwnedBy, m["owned_by"])
		if m["id"] != "base" {
			assert.Equal(t, "base", m["parent"])
			assert.Equal(t, a, m["root"])
		}
	}
	assert.Equal(t, []string{"base", "boot", "late"}, ids)
	assert.Contains(t, call(t, "GET", srv.URL+"/metrics", "").body, "berth_test_engine_lora_adapters_loaded 2")
}

func TestVLLMLoRAGates(t *testing.T) {
	body := fmt.Sprintf(`{"lora_name":"a","lora_path":%q}`, adapterDir(t))
	_, off := startEngine(t, EngineOptions{}, "vllm", "serve", modelDir(t, "X"), "--enable-lora")
	a := call(t, "POST", off.URL+"/v1/load_lora_adapter", body)
	assert.Equal(t, 404, a.status)
	assert.Contains(t, a.body, "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True")

	_, noLoRA := startEngine(t, EngineOptions{RuntimeLoRA: true}, "vllm", "serve", modelDir(t, "X"))
	a = call(t, "POST", noLoRA.URL+"/v1/load_lora_adapter", body)
	assert.Equal(t, 400, a.status)
	assert.Contains(t, a.body, "--enable-lora")
}

func TestSGLangLoRA(t *testing.T) {
	good := adapterDir(t)
	missing := filepath.Join(t.TempDir(), "nope")
	_, srv := startEngine(t, EngineOptions{}, "python3", "-m", "sglang.launch_server", "--model-path", modelDir(t, "Qwen2ForCausalLM"),
		"--served-model-name", "qwen", "--enable-lora", "--max-loaded-loras", "1")
	load := func(name, path string) string { return fmt.Sprintf(`{"lora_name":%q,"lora_path":%q}`, name, path) }
	steps := []struct {
		name, path, body string
		status           int
		contains         string
	}{
		{name: "load", path: "/load_lora_adapter", body: load("a", good), status: 200, contains: `"success":true`},
		{name: "load again", path: "/load_lora_adapter", body: load("a", good), status: 400, contains: "already been loaded"},
		{name: "over --max-loaded-loras", path: "/load_lora_adapter", body: load("b", good), status: 400, contains: "--max-loaded-loras"},
		{name: "servable", path: "/v1/chat/completions", body: `{"model":"a","messages":[{"role":"user","content":"q"}]}`, status: 200,
			contains: "served a (LoRA adapter " + good + " of qwen, Qwen2ForCausalLM)"},
		{name: "unload", path: "/unload_lora_adapter", body: `{"lora_name":"a"}`, status: 200, contains: `"loaded_adapters":{}`},
		{name: "unload unknown", path: "/unload_lora_adapter", body: `{"lora_name":"a"}`, status: 400, contains: `"success":false`},
		{name: "missing dir", path: "/load_lora_adapter", body: load("c", missing), status: 400, contains: "LoRA adapter at " + missing},
		{name: "vLLM's path is not SGLang's", path: "/v1/load_lora_adapter", body: load("c", good), status: 404, contains: "no such endpoint"},
	}
	for _, s := range steps {
		a := call(t, "POST", srv.URL+s.path, s.body)
		assert.Equal(t, s.status, a.status, "%s: %s", s.name, a.body)
		assert.Contains(t, a.body, s.contains, s.name)
	}

	_, plain := startEngine(t, EngineOptions{}, "python3", "-m", "sglang.launch_server", "--model-path", modelDir(t, "X"))
	a := call(t, "POST", plain.URL+"/load_lora_adapter", load("a", good))
	assert.Equal(t, 400, a.status)
	assert.Contains(t, a.body, "LoRA is not enabled")
}

func TestLoRAModulesFromTheCommandLineAreChecked(t *testing.T) {
	cfg, err := Parse([]string{"vllm", "serve", "/m", "--enable-lora", "--lora-modules", "a=" + t.TempDir()})
	require.NoError(t, err)
	_, err = NewEngine(cfg, Model{Architecture: "X"}, EngineOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "LoRA adapter a from the command line")
	assert.Contains(t, err.Error(), "adapter_config.json")
}
