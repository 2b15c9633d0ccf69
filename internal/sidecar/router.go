package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Worker is what the sidecar registers: the engine at URL in a role.
type Worker struct {
	URL           string
	Type          string // regular, prefill or decode
	BootstrapPort int    // prefill only; 0: the router's default
}

// Router is a router's worker registry, as small as the sidecar needs:
// add, remove and ask about one worker. A second router is one more
// implementation.
type Router interface {
	// Register adds the worker (adding it again is not an error).
	Register(ctx context.Context, w Worker) error
	// Unregister removes the worker (a worker the router does not know is
	// not an error).
	Unregister(ctx context.Context, w Worker) error
	// Registered reports whether the router lists the worker.
	Registered(ctx context.Context, w Worker) (bool, error)
}

// SGLangRouter speaks the SGLang model gateway's (sgl-router's) worker
// management API: POST /workers, GET /workers, DELETE /workers/{url}.
type SGLangRouter struct {
	Base   string
	Client *http.Client
}

type sglangWorkerBody struct {
	URL           string `json:"url"`
	WorkerType    string `json:"worker_type"`
	BootstrapPort *int   `json:"bootstrap_port,omitempty"`
}

// Register is POST /workers.
func (r SGLangRouter) Register(ctx context.Context, w Worker) error {
	body := sglangWorkerBody{URL: w.URL, WorkerType: w.Type}
	if w.Type == WorkerPrefill && w.BootstrapPort > 0 {
		bp := w.BootstrapPort
		body.BootstrapPort = &bp
	}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	status, text, err := r.do(ctx, http.MethodPost, "/workers", data)
	if err != nil {
		return err
	}
	if status/100 != 2 && !(status == http.StatusConflict || strings.Contains(strings.ToLower(text), "already exists")) {
		return fmt.Errorf("router POST /workers: %d %s", status, text)
	}
	return nil
}

// Unregister is DELETE /workers/{url}.
func (r SGLangRouter) Unregister(ctx context.Context, w Worker) error {
	status, text, err := r.do(ctx, http.MethodDelete, "/workers/"+url.PathEscape(w.URL), nil)
	if err != nil {
		return err
	}
	if status/100 != 2 && status != http.StatusNotFound {
		return fmt.Errorf("router DELETE /workers/%s: %d %s", w.URL, status, text)
	}
	return nil
}

// Registered reads GET /workers.
func (r SGLangRouter) Registered(ctx context.Context, w Worker) (bool, error) {
	status, text, err := r.do(ctx, http.MethodGet, "/workers", nil)
	if err != nil {
		return false, err
	}
	if status != http.StatusOK {
		return false, fmt.Errorf("router GET /workers: %d %s", status, text)
	}
	var list struct {
		Workers []struct {
			URL        string `json:"url"`
			WorkerType string `json:"worker_type"`
		} `json:"workers"`
	}
	if err := json.Unmarshal([]byte(text), &list); err != nil {
		return false, fmt.Errorf("router GET /workers: %v", err)
	}
	for _, x := range list.Workers {
		if strings.TrimSuffix(x.URL, "/") == w.URL {
			return true, nil
		}
	}
	return false, nil
}

// maxAnswer bounds what the sidecar reads of an answer.
const maxAnswer = 1 << 20

func (r SGLangRouter) do(ctx context.Context, method, path string, body []byte) (int, string, error) {
	return doHTTP(ctx, r.Client, method, strings.TrimSuffix(r.Base, "/")+path, body)
}

// doHTTP sends one request and returns the status and (bounded) body.
func doHTTP(ctx context.Context, c *http.Client, method, u string, body []byte) (int, string, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return resp.StatusCode, "", fmt.Errorf("%s %s: reading the answer: %w", method, u, err)
	}
	return resp.StatusCode, strings.TrimSpace(string(data)), nil
}

// noRouter is the Router of TOPO_TYPE=none: nothing to register with.
type noRouter struct{}

func (noRouter) Register(context.Context, Worker) error           { return nil }
func (noRouter) Unregister(context.Context, Worker) error         { return nil }
func (noRouter) Registered(context.Context, Worker) (bool, error) { return true, nil }
