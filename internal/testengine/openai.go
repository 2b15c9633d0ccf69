package testengine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// HeaderStandIn is set on every answer of the test engine and its router.
const HeaderStandIn = "X-Berth-Test-Engine"

// OwnedBy is the owned_by of every model the test engine lists.
const OwnedBy = "berth-test-engine"

const maxBody = 4 << 20

// genRequest is the part of an OpenAI completions or chat request the test
// engine reads, with the fields SGLang's PD router injects.
type genRequest struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	Messages      []chatMessage   `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	BootstrapHost string `json:"bootstrap_host"`
	BootstrapPort *int   `json:"bootstrap_port"`
	BootstrapRoom *int64 `json:"bootstrap_room"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// apiError is an error answered in OpenAI's shape.
type apiError struct {
	Status  int
	Type    string
	Param   string
	Message string
	// dial: a worker could not be connected to, so nothing reached it and
	// the router may try another (proxy.go).
	dial bool
}

func (e *apiError) Error() string { return e.Message }

func badRequest(format string, a ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "BadRequestError", Message: fmt.Sprintf(format, a...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: err.Error()}
	}
	var param any
	if ae.Param != "" {
		param = ae.Param
	}
	writeJSON(w, ae.Status, map[string]any{"error": map[string]any{
		"message": ae.Message, "type": ae.Type, "param": param, "code": ae.Status,
	}})
}

// decodeBody reads a JSON body into v, capped, as a 400 on any error.
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return badRequest("reading the request body: %v", err)
	}
	if len(body) > maxBody {
		return badRequest("request body over %d bytes", maxBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("the request body is not valid JSON for this endpoint: %v", err)
	}
	return nil
}

// promptText is the text a request asks about: a completion's prompt or the
// chat's messages' text, joined by spaces.
func promptText(req *genRequest, chat bool) (string, error) {
	if chat {
		if len(req.Messages) == 0 {
			return "", badRequest("messages is required and must not be empty")
		}
		parts := make([]string, 0, len(req.Messages))
		for i, m := range req.Messages {
			t, err := contentText(m.Content)
			if err != nil {
				return "", badRequest("messages[%d].content: %v", i, err)
			}
			parts = append(parts, t)
		}
		return strings.Join(parts, " "), nil
	}
	if len(req.Prompt) == 0 || string(req.Prompt) == "null" {
		return "", badRequest("prompt is required")
	}
	var s string
	if json.Unmarshal(req.Prompt, &s) == nil {
		return s, nil
	}
	var ss []string
	if json.Unmarshal(req.Prompt, &ss) == nil {
		return strings.Join(ss, " "), nil
	}
	var toks []int64
	if json.Unmarshal(req.Prompt, &toks) == nil {
		return fmt.Sprintf("(%d token ids)", len(toks)), nil
	}
	return "", badRequest("prompt must be a string, a list of strings or a list of token ids")
}

func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or a list of content parts")
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, " "), nil
}

// echoWords is how many words of the prompt a reply echoes.
const echoWords = 12

func echo(prompt string) string {
	w := strings.Fields(prompt)
	if len(w) > echoWords {
		return strings.Join(w[:echoWords], " ") + " ..."
	}
	return strings.Join(w, " ")
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func countUsage(prompt, reply string) usage {
	p, c := len(strings.Fields(prompt)), len(strings.Fields(reply))
	return usage{PromptTokens: p, CompletionTokens: c, TotalTokens: p + c}
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// reply is one answer to write, whole or streamed.
type reply struct {
	chat    bool
	model   string
	text    string
	usage   usage
	created int64
	id      string
}

func (rp reply) object() string {
	if rp.chat {
		return "chat.completion"
	}
	return "text_completion"
}

func (rp reply) whole() map[string]any {
	choice := map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil}
	if rp.chat {
		choice["message"] = map[string]any{"role": "assistant", "content": rp.text}
	} else {
		choice["text"] = rp.text
	}
	return map[string]any{"id": rp.id, "object": rp.object(), "created": rp.created, "model": rp.model,
		"choices": []any{choice}, "usage": rp.usage}
}

func (rp reply) chunk(text string, first bool, finish any) map[string]any {
	choice := map[string]any{"index": 0, "finish_reason": finish, "logprobs": nil}
	if rp.chat {
		delta := map[string]any{}
		if first {
			delta["role"] = "assistant"
		}
		if text != "" {
			delta["content"] = text
		}
		choice["delta"] = delta
	} else {
		choice["text"] = text
	}
	obj := "text_completion"
	if rp.chat {
		obj = "chat.completion.chunk"
	}
	return map[string]any{"id": rp.id, "object": obj, "created": rp.created, "model": rp.model, "choices": []any{choice}}
}

// stream writes the reply as server-sent events, a word per chunk, then
// the finish chunk, the usage chunk when asked, and [DONE].
func (rp reply) stream(w http.ResponseWriter, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	words := strings.Fields(rp.text)
	for i, word := range words {
		if i > 0 {
			word = " " + word
		}
		send(rp.chunk(word, i == 0, nil))
	}
	send(rp.chunk("", len(words) == 0, "stop"))
	if includeUsage {
		u := rp.chunk("", false, nil)
		u["choices"] = []any{}
		u["usage"] = rp.usage
		send(u)
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

func now() int64 { return time.Now().Unix() }
