package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Engine is the inference engine next to the sidecar, through its own
// HTTP API: its health, and its LoRA adapters.
type Engine struct {
	Kind       string // sglang or vllm
	Base       string
	HealthPath string
	Client     *http.Client
}

// Healthy asks the engine's health endpoint; nil when it answers 200.
func (e Engine) Healthy(ctx context.Context) error {
	status, text, err := doHTTP(ctx, e.Client, http.MethodGet, e.url(e.HealthPath), nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", e.Kind, e.HealthPath, status, clip(text))
	}
	return nil
}

func (e Engine) url(path string) string { return strings.TrimSuffix(e.Base, "/") + path }

// loraPaths are the engine's LoRA endpoints: vLLM's need
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, SGLang's --enable-lora.
func (e Engine) loraPaths() (load, unload string) {
	if e.Kind == EngineVLLM {
		return "/v1/load_lora_adapter", "/v1/unload_lora_adapter"
	}
	return "/load_lora_adapter", "/unload_lora_adapter"
}

// Load loads the adapter: both engines take {"lora_name","lora_path"}.
// vLLM answers 200 with a plain-text success; SGLang answers
// {"success":..., "error_message":...}.
func (e Engine) Load(ctx context.Context, a Adapter) error {
	load, _ := e.loraPaths()
	body, _ := json.Marshal(map[string]string{"lora_name": a.Name, "lora_path": a.Source})
	return e.loraCall(ctx, load, body)
}

// Unload unloads the adapter named name.
func (e Engine) Unload(ctx context.Context, name string) error {
	_, unload := e.loraPaths()
	body, _ := json.Marshal(map[string]string{"lora_name": name})
	return e.loraCall(ctx, unload, body)
}

func (e Engine) loraCall(ctx context.Context, path string, body []byte) error {
	status, text, err := doHTTP(ctx, e.Client, http.MethodPost, e.url(path), body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", e.Kind, path, status, engineMessage(text))
	}
	if e.Kind == EngineSGLang {
		var ans struct {
			Success      *bool  `json:"success"`
			ErrorMessage string `json:"error_message"`
		}
		if json.Unmarshal([]byte(text), &ans) == nil && ans.Success != nil && !*ans.Success {
			return fmt.Errorf("%s %s: %s", e.Kind, path, ans.ErrorMessage)
		}
	}
	return nil
}

// Loaded lists the adapters the engine serves now: the entries of
// GET /v1/models with a parent (vLLM's and SGLang's OpenAI-compatible
// model list), by name → path.
func (e Engine) Loaded(ctx context.Context) (map[string]string, error) {
	status, text, err := doHTTP(ctx, e.Client, http.MethodGet, e.url("/v1/models"), nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%s /v1/models: %d %s", e.Kind, status, clip(text))
	}
	var list struct {
		Data []struct {
			ID     string  `json:"id"`
			Root   string  `json:"root"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(text), &list); err != nil {
		return nil, fmt.Errorf("%s /v1/models: %v", e.Kind, err)
	}
	out := map[string]string{}
	for _, m := range list.Data {
		if m.Parent != nil && *m.Parent != "" {
			out[m.ID] = m.Root
		}
	}
	return out, nil
}

// engineMessage is the message of an OpenAI-style error body, else the
// body.
func engineMessage(text string) string {
	var e struct {
		Message string `json:"message"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
		ErrorMessage string `json:"error_message"`
	}
	if json.Unmarshal([]byte(text), &e) == nil {
		switch {
		case e.Error != nil && e.Error.Message != "":
			return e.Error.Message
		case e.ErrorMessage != "":
			return e.ErrorMessage
		case e.Message != "":
			return e.Message
		}
	}
	return clip(text)
}

func clip(s string) string {
	const n = 300
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
