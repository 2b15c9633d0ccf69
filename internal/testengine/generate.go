package testengine

import (
	"fmt"
	"net/http"
	"slices"
	"time"
)

// generate answers /v1/completions (chat false) and /v1/chat/completions.
func (e *Engine) generate(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if e.notReady(w) {
			return
		}
		var req genRequest
		if err := decodeBody(r, &req); err != nil {
			writeError(w, err)
			return
		}
		name, err := e.resolveModel(req.Model)
		if err != nil {
			writeError(w, err)
			return
		}
		prompt, err := promptText(&req, chat)
		if err != nil {
			writeError(w, err)
			return
		}
		release, err := e.acquire(r.Context())
		if err != nil {
			return // the client went away while queued
		}
		defer release()
		if e.opts.Delay > 0 {
			select {
			case <-time.After(e.opts.Delay):
			case <-r.Context().Done():
				return
			}
		}
		note, err := e.disaggregate(r, &req, prompt)
		if err != nil {
			e.opts.Log.Warn("generation failed", "endpoint", r.URL.Path, "error", err)
			writeError(w, err)
			return
		}
		text := e.replyText(name, prompt, note)
		rp := reply{chat: chat, model: name, text: text, usage: countUsage(prompt, text), created: now(), id: newID("cmpl-")}
		if chat {
			rp.id = newID("chatcmpl-")
		}
		e.opts.Log.Info("request answered", "endpoint", r.URL.Path, "model", name, "stream", req.Stream,
			"prompt_tokens", rp.usage.PromptTokens, "completion_tokens", rp.usage.CompletionTokens, "pd", note)
		if req.Stream {
			rp.stream(w, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
			return
		}
		writeJSON(w, http.StatusOK, rp.whole())
	}
}

// resolveModel maps a request's model to a served name or a loaded
// adapter; empty is the primary served name.
func (e *Engine) resolveModel(name string) (string, error) {
	if name == "" {
		return e.servedNames()[0], nil
	}
	if slices.Contains(e.servedNames(), name) {
		return name, nil
	}
	if _, ok := e.adapters.get(name); ok {
		return name, nil
	}
	return "", &apiError{Status: http.StatusNotFound, Type: "NotFoundError", Param: "model",
		Message: fmt.Sprintf("The model `%s` does not exist.", name)}
}

// replyText is the deterministic answer: what served it, where, and the
// first words of the prompt.
func (e *Engine) replyText(name, prompt, note string) string {
	what := e.model.Architecture
	if a, ok := e.adapters.get(name); ok {
		what = fmt.Sprintf("LoRA adapter %s of %s, %s", a.Path, e.servedNames()[0], e.model.Architecture)
	}
	where := "on pod " + e.opts.Pod
	if note != "" {
		where += ", " + note
	}
	return fmt.Sprintf("berth-test-engine (a stand-in for %s, not a model) served %s (%s) %s: %s",
		e.engineName(), name, what, where, echo(prompt))
}
