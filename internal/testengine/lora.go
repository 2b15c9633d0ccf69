package testengine

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
)

// adapterSet holds the loaded LoRA adapters in load order.
type adapterSet struct {
	mu    sync.RWMutex
	byKey map[string]Adapter
	order []string
	max   int // 0: no cap
	gauge *atomic.Int64
}

func newAdapterSet(maxLoaded int, gauge *atomic.Int64) *adapterSet {
	return &adapterSet{byKey: map[string]Adapter{}, max: maxLoaded, gauge: gauge}
}

// add checks the adapter's directory and loads it; the errors are the
// engines' 400s.
func (s *adapterSet) add(a Adapter, baseNames []string) error {
	if a.Name == "" {
		return badRequest("lora_name is required")
	}
	if slices.Contains(baseNames, a.Name) {
		return badRequest("The lora adapter '%s' has the name of the base model.", a.Name)
	}
	if err := checkAdapterDir(a.Path); err != nil {
		return badRequest("%v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byKey[a.Name]; ok {
		return badRequest("The lora adapter '%s' has already been loaded.", a.Name)
	}
	if s.max > 0 && len(s.order) >= s.max {
		return badRequest("cannot load LoRA adapter '%s': %d adapters are loaded, the --max-loaded-loras limit", a.Name, s.max)
	}
	s.byKey[a.Name] = a
	s.order = append(s.order, a.Name)
	s.gauge.Store(int64(len(s.order)))
	return nil
}

func (s *adapterSet) remove(name string) error {
	if name == "" {
		return badRequest("lora_name is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byKey[name]; !ok {
		return badRequest("The lora adapter '%s' cannot be found.", name)
	}
	delete(s.byKey, name)
	s.order = slices.DeleteFunc(s.order, func(n string) bool { return n == name })
	s.gauge.Store(int64(len(s.order)))
	return nil
}

func (s *adapterSet) get(name string) (Adapter, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.byKey[name]
	return a, ok
}

func (s *adapterSet) list() []Adapter {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Adapter, 0, len(s.order))
	for _, n := range s.order {
		out = append(out, s.byKey[n])
	}
	return out
}

type loraRequest struct {
	Name string `json:"lora_name"`
	Path string `json:"lora_path"`
}

// vllmLoad is vLLM's POST /v1/load_lora_adapter: a plain-text success,
// an OpenAI error otherwise.
func (e *Engine) vllmLoad(w http.ResponseWriter, r *http.Request) {
	req, ok := e.vllmLoRARequest(w, r)
	if !ok {
		return
	}
	if err := e.adapters.add(Adapter{Name: req.Name, Path: req.Path}, e.servedNames()); err != nil {
		writeError(w, err)
		return
	}
	e.opts.Log.Info("LoRA adapter loaded", "name", req.Name, "path", req.Path)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", req.Name)
}

func (e *Engine) vllmUnload(w http.ResponseWriter, r *http.Request) {
	req, ok := e.vllmLoRARequest(w, r)
	if !ok {
		return
	}
	if err := e.adapters.remove(req.Name); err != nil {
		writeError(w, err)
		return
	}
	e.opts.Log.Info("LoRA adapter unloaded", "name", req.Name)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", req.Name)
}

// vllmLoRARequest applies vLLM's gates: the endpoints exist only with
// VLLM_ALLOW_RUNTIME_LORA_UPDATING, and adapters need --enable-lora.
func (e *Engine) vllmLoRARequest(w http.ResponseWriter, r *http.Request) (loraRequest, bool) {
	var req loraRequest
	if !e.opts.RuntimeLoRA {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "NotFoundError",
			Message: "runtime LoRA updating is off: vLLM serves /v1/load_lora_adapter and /v1/unload_lora_adapter only with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True in its environment"})
		return req, false
	}
	if !e.cfg.EnableLoRA {
		writeError(w, badRequest("LoRA is not enabled: start vLLM with --enable-lora"))
		return req, false
	}
	if err := decodeBody(r, &req); err != nil {
		writeError(w, err)
		return req, false
	}
	return req, true
}

// sglangLoad is SGLang's POST /load_lora_adapter: {success, error_message,
// loaded_adapters}.
func (e *Engine) sglangLoad(w http.ResponseWriter, r *http.Request) {
	e.sglangLoRA(w, r, func(req loraRequest) error {
		return e.adapters.add(Adapter{Name: req.Name, Path: req.Path}, e.servedNames())
	}, "loaded")
}

func (e *Engine) sglangUnload(w http.ResponseWriter, r *http.Request) {
	e.sglangLoRA(w, r, func(req loraRequest) error { return e.adapters.remove(req.Name) }, "unloaded")
}

func (e *Engine) sglangLoRA(w http.ResponseWriter, r *http.Request, op func(loraRequest) error, verb string) {
	var req loraRequest
	err := decodeBody(r, &req)
	if err == nil && !e.cfg.EnableLoRA {
		err = badRequest("LoRA is not enabled: start SGLang with --enable-lora or --lora-paths")
	}
	if err == nil {
		err = op(req)
	}
	loaded := map[string]string{}
	for _, a := range e.adapters.list() {
		loaded[a.Name] = a.Path
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"success": false, "error_message": err.Error(), "loaded_adapters": loaded})
		return
	}
	e.opts.Log.Info("LoRA adapter "+verb, "name", req.Name, "path", req.Path)
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "error_message": "", "loaded_adapters": loaded})
}
