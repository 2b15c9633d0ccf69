package testengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
)

// unreachableAttempts is how many workers (or prefill/decode pairs) a
// request tries when the ones picked cannot be connected to: a worker
// deleted a moment ago may still be listed (discovery follows the pod
// watch).
const unreachableAttempts = 2

// unreachable reports whether err is a worker that could not be connected
// to, so that nothing was sent and another may be tried.
func unreachable(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.dial
}

func (r *Router) models(w http.ResponseWriter, req *http.Request) {
	role := RoleRegular
	if r.cfg.PD {
		role = RoleDecode
	}
	for attempt := 1; ; attempt++ {
		wk, ok := r.workers.pick(role)
		if !ok {
			writeError(w, r.noWorkers(role))
			return
		}
		resp, err := r.send(req.Context(), http.MethodGet, wk, "/v1/models", nil)
		if err == nil {
			copyResponse(w, resp)
			return
		}
		if !unreachable(err) || attempt >= min(unreachableAttempts, r.workers.count(role)) {
			writeError(w, err)
			return
		}
		r.log.Warn("worker unreachable, trying another", "endpoint", "/v1/models", "worker", wk.URL, "error", err)
	}
}

// generate proxies a completions or chat request: to one worker, or in PD
// mode to a prefill and a decode at once.
func (r *Router) generate(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		writeError(w, badRequest("the request body is unreadable or over %d bytes", maxBody))
		return
	}
	r.metrics.running.Add(1)
	defer r.metrics.running.Add(-1)
	if r.cfg.PD {
		r.generatePD(w, req, body)
		return
	}
	// Try a second worker when the first cannot be reached.
	var lastErr error
	for range min(2, max(1, r.workers.count(RoleRegular))) {
		wk, ok := r.workers.pick(RoleRegular)
		if !ok {
			writeError(w, r.noWorkers(RoleRegular))
			return
		}
		resp, err := r.send(req.Context(), http.MethodPost, wk, req.URL.Path, body)
		if err == nil {
			r.log.Info("request proxied", "endpoint", req.URL.Path, "worker", wk.URL, "status", resp.StatusCode)
			copyResponse(w, resp)
			return
		}
		r.log.Warn("worker unreachable", "endpoint", req.URL.Path, "worker", wk.URL, "error", err)
		lastErr = err
	}
	writeError(w, lastErr)
}

// generatePD sends the request, with bootstrap_host, bootstrap_port and
// bootstrap_room added as SGLang's PD router adds them, to a prefill and a
// decode of one pairing at once, and answers with the decode's reply. A
// pair that cannot be connected to is replaced once by another.
func (r *Router) generatePD(w http.ResponseWriter, req *http.Request, body []byte) {
	var fields map[string]json.RawMessage
	for attempt := 1; ; attempt++ {
		prefill, decode, ok, missing := r.workers.pickPair() // same pairing only (pairing.go)
		if !ok {
			writeError(w, r.noPair(missing))
			return
		}
		if fields == nil {
			if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
				why := "null"
				if err != nil {
					why = err.Error()
				}
				writeError(w, badRequest("the request body is not a JSON object: %s", why))
				return
			}
		}
		err := r.proxyPD(w, req, fields, prefill, decode)
		if err == nil {
			return
		}
		if !unreachable(err) || attempt >= min(unreachableAttempts, r.workers.count(RolePrefill)*r.workers.count(RoleDecode)) {
			writeError(w, err)
			return
		}
		r.log.Warn("PD pair unreachable, trying another", "prefill", prefill.URL, "decode", decode.URL, "error", err)
	}
}

// proxyPD sends one PD request to prefill and decode and relays the
// decode's reply; on an error nothing has been written and it is
// returned.
func (r *Router) proxyPD(w http.ResponseWriter, req *http.Request, fields map[string]json.RawMessage, prefill, decode Worker) error {
	u, _ := url.Parse(prefill.URL)
	room := rand.Int64()
	host, _ := json.Marshal(u.Hostname())
	fields["bootstrap_host"] = host
	fields["bootstrap_room"] = json.RawMessage(fmt.Sprint(room))
	fields["bootstrap_port"] = json.RawMessage("null")
	if prefill.BootstrapPort > 0 {
		fields["bootstrap_port"] = json.RawMessage(itoa(prefill.BootstrapPort))
	}
	injected, _ := json.Marshal(fields)

	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	prefillDone := make(chan error, 1)
	go func() {
		status, err := r.sendAndDrain(ctx, prefill, req.URL.Path, injected)
		if err != nil && (status == 0 || status >= 500) {
			// The decode would wait for KV that never comes. (A 4xx is the
			// request's fault: the decode rejects it the same way.)
			cancel()
		}
		prefillDone <- err
	}()
	resp, err := r.send(ctx, http.MethodPost, decode, req.URL.Path, injected)
	if err != nil {
		byPrefill := ctx.Err() != nil // the prefill failed first and cancelled the decode
		cancel()
		if perr := <-prefillDone; perr != nil && byPrefill {
			err = perr
		}
		r.log.Warn("PD request failed", "prefill", prefill.URL, "decode", decode.URL, "room", room, "error", err)
		return err
	}
	r.log.Info("request proxied", "endpoint", req.URL.Path, "prefill", prefill.URL, "decode", decode.URL,
		"bootstrap_room", room, "status", resp.StatusCode)
	copyResponse(w, resp)
	if perr := <-prefillDone; perr != nil {
		r.log.Warn("prefill failed after the decode answered", "prefill", prefill.URL, "room", room, "error", perr)
	}
	return nil
}

// send makes one request to a worker; a transport error is a 502 naming it.
func (r *Router) send(ctx context.Context, method string, wk Worker, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, wk.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.metrics.upstream.WithLabelValues(wk.Role, "error").Inc()
		var op *net.OpError
		return nil, &apiError{Status: http.StatusBadGateway, Type: "BadGatewayError",
			Message: fmt.Sprintf("%s worker %s: %v", wk.Role, wk.URL, err), dial: errors.As(err, &op) && op.Op == "dial"}
	}
	r.metrics.upstream.WithLabelValues(wk.Role, itoa(resp.StatusCode)).Inc()
	return resp, nil
}

// sendAndDrain sends to the prefill and reads its reply away; a non-2xx
// reply is an error carrying the prefill's message, with its status (0
// when the prefill could not be reached).
func (r *Router) sendAndDrain(ctx context.Context, wk Worker, path string, body []byte) (int, error) {
	resp, err := r.send(ctx, http.MethodPost, wk, path, body)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, &apiError{Status: http.StatusBadGateway, Type: "BadGatewayError",
			Message: fmt.Sprintf("prefill worker %s answered %d: %s", wk.URL, resp.StatusCode, bytes.TrimSpace(msg))}
	}
	return resp.StatusCode, nil
}

// copyResponse relays a worker's answer, flushing as it goes so SSE
// streams pass through unbuffered.
func copyResponse(w http.ResponseWriter, resp *http.Response) {
	defer func() { _ = resp.Body.Close() }()
	for _, h := range []string{"Content-Type", "Cache-Control", HeaderStandIn} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}
