package testengine

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// EngineOptions are what an engine takes besides its command line.
type EngineOptions struct {
	Log *slog.Logger
	// Pod names the pod in replies: POD_NAME, else the hostname.
	Pod string
	// Delay is added to every generation (BERTH_TEST_ENGINE_DELAY), so
	// running and queued requests can be observed.
	Delay time.Duration
	// KVWait bounds how long a decode waits for a room's KV (default 10s).
	KVWait time.Duration
	// RuntimeLoRA is vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING: without it
	// vLLM serves no /v1/load_lora_adapter.
	RuntimeLoRA bool
}

// Engine is the SGLang or vLLM stand-in: an OpenAI-compatible server that
// answers with a deterministic text saying what it is.
type Engine struct {
	cfg      Config
	model    Model
	opts     EngineOptions
	ready    atomic.Bool
	metrics  *metrics
	adapters *adapterSet
	slots    chan struct{} // nil: no limit
	rooms    *roomStore    // prefill only
	kvClient *http.Client  // decode only
	created  int64
}

// NewEngine builds an engine for a parsed command line and a loaded model.
// It answers 503 on /health until SetReady.
func NewEngine(cfg Config, model Model, opts EngineOptions) (*Engine, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Pod == "" {
		opts.Pod = PodName()
	}
	if opts.KVWait <= 0 {
		opts.KVWait = 10 * time.Second
	}
	e := &Engine{cfg: cfg, model: model, opts: opts, metrics: newMetrics(cfg.Mode), created: now()}
	e.adapters = newAdapterSet(cfg.MaxLoadedLoRAs, &e.metrics.adapters)
	for _, a := range cfg.LoRAModules {
		if err := e.adapters.add(a, e.servedNames()); err != nil {
			return nil, fmt.Errorf("LoRA adapter %s from the command line: %w", a.Name, err)
		}
	}
	if cfg.MaxRunning > 0 {
		e.slots = make(chan struct{}, cfg.MaxRunning)
	}
	switch cfg.Disaggregation {
	case "prefill":
		e.rooms = newRoomStore()
	case "decode":
		e.kvClient = &http.Client{Timeout: 2 * time.Second}
	}
	return e, nil
}

// PodName is POD_NAME, else the hostname (a pod's hostname is its name).
func PodName() string {
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "unknown-pod"
}

// SetReady marks the model loaded: /health answers 200 from now on.
func (e *Engine) SetReady() { e.ready.Store(true) }

// engineName is the engine the test engine stands in for.
func (e *Engine) engineName() string {
	if e.cfg.Mode == ModeVLLM {
		return "vLLM"
	}
	return "SGLang"
}

func (e *Engine) servedNames() []string {
	if len(e.cfg.ServedNames) > 0 {
		return e.cfg.ServedNames
	}
	return []string{e.cfg.ModelPath}
}

// Handler serves the engine's HTTP API.
func (e *Engine) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern, endpoint string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, e.metrics.instrument(endpoint, h))
	}
	route("GET /health", "/health", e.health)
	route("GET /health_generate", "/health_generate", e.healthGenerate)
	route("GET /v1/models", "/v1/models", e.listModels)
	route("POST /v1/completions", "/v1/completions", e.generate(false))
	route("POST /v1/chat/completions", "/v1/chat/completions", e.generate(true))
	route("GET /get_model_info", "/get_model_info", e.modelInfo)
	route("GET /get_server_info", "/get_server_info", e.serverInfo)
	mux.Handle("GET /metrics", e.metrics.handler())
	if e.cfg.Mode == ModeVLLM {
		route("POST /v1/load_lora_adapter", "/v1/load_lora_adapter", e.vllmLoad)
		route("POST /v1/unload_lora_adapter", "/v1/unload_lora_adapter", e.vllmUnload)
	} else {
		route("POST /load_lora_adapter", "/load_lora_adapter", e.sglangLoad)
		route("POST /unload_lora_adapter", "/unload_lora_adapter", e.sglangUnload)
	}
	route("/", "other", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "NotFoundError",
			Message: fmt.Sprintf("%s %s: berth-test-engine (a stand-in for %s) serves no such endpoint", r.Method, r.URL.Path, e.engineName())})
	})
	return mux
}

func (e *Engine) notReady(w http.ResponseWriter) bool {
	if e.ready.Load() {
		return false
	}
	writeError(w, &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError",
		Message: "the model is still loading"})
	return true
}

func (e *Engine) health(w http.ResponseWriter, _ *http.Request) {
	if e.notReady(w) {
		return
	}
	w.WriteHeader(http.StatusOK)
}

// healthGenerate is SGLang's deeper probe: it runs one generation.
func (e *Engine) healthGenerate(w http.ResponseWriter, _ *http.Request) {
	if e.notReady(w) {
		return
	}
	_ = e.replyText(e.servedNames()[0], "health check", "")
	w.WriteHeader(http.StatusOK)
}

func (e *Engine) listModels(w http.ResponseWriter, _ *http.Request) {
	maxLen := any(nil)
	if e.model.MaxLength > 0 {
		maxLen = e.model.MaxLength
	}
	data := []map[string]any{}
	for _, n := range e.servedNames() {
		data = append(data, map[string]any{"id": n, "object": "model", "created": e.created, "owned_by": OwnedBy,
			"root": e.cfg.ModelPath, "parent": nil, "max_model_len": maxLen})
	}
	for _, a := range e.adapters.list() {
		data = append(data, map[string]any{"id": a.Name, "object": "model", "created": e.created, "owned_by": OwnedBy,
			"root": a.Path, "parent": e.servedNames()[0], "max_model_len": maxLen})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (e *Engine) modelInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path": e.cfg.ModelPath, "tokenizer_path": e.cfg.ModelPath, "is_generation": true,
		"served_model_name": e.servedNames()[0], "architecture": e.model.Architecture,
		"preferred_sampling_params": nil, "stand_in": "berth-test-engine: not a model",
	})
}

func (e *Engine) serverInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"host": e.cfg.Host, "port": e.cfg.Port, "model_path": e.cfg.ModelPath,
		"served_model_name": e.servedNames()[0], "disaggregation_mode": cmpOr(e.cfg.Disaggregation, "null"),
		"disaggregation_bootstrap_port": e.cfg.BootstrapPort, "enable_lora": e.cfg.EnableLoRA,
		"max_loras_per_batch": e.cfg.MaxLoRAs, "max_loaded_loras": e.cfg.MaxLoadedLoRAs,
		"max_running_requests": e.cfg.MaxRunning, "ignored_flags": e.cfg.Ignored,
		"version": "berth-test-engine", "stand_in_for": e.engineName(), "pod": e.opts.Pod,
	})
}

// acquire waits for a running slot, counted as queued meanwhile.
func (e *Engine) acquire(ctx context.Context) (func(), error) {
	if e.slots != nil {
		e.metrics.waiting.Add(1)
		select {
		case e.slots <- struct{}{}:
			e.metrics.waiting.Add(-1)
		case <-ctx.Done():
			e.metrics.waiting.Add(-1)
			return nil, ctx.Err()
		}
	}
	e.metrics.running.Add(1)
	return func() {
		e.metrics.running.Add(-1)
		if e.slots != nil {
			<-e.slots
		}
	}, nil
}
