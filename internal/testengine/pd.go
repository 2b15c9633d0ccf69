package testengine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// kvEntry is the "KV cache" a prefill hands to a decode: enough to prove
// the decode got the room it was told to fetch, from the pod that made it.
type kvEntry struct {
	Room         int64  `json:"bootstrap_room"`
	Pod          string `json:"prefill_pod"`
	Model        string `json:"model"`
	PromptDigest string `json:"prompt_digest"`
	PromptTokens int    `json:"prompt_tokens"`
	stored       time.Time
}

// roomStore keeps the rooms a prefill computed, bounded in number and age
// so the stand-in stays small.
type roomStore struct {
	mu    sync.Mutex
	rooms map[int64]kvEntry
}

const (
	maxRooms = 4096
	roomTTL  = 5 * time.Minute
)

func newRoomStore() *roomStore { return &roomStore{rooms: map[int64]kvEntry{}} }

func (s *roomStore) put(e kvEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.stored = time.Now()
	if len(s.rooms) >= maxRooms {
		var oldest int64
		first := true
		for k, v := range s.rooms {
			if time.Since(v.stored) > roomTTL {
				delete(s.rooms, k)
				continue
			}
			if first || v.stored.Before(s.rooms[oldest].stored) {
				oldest, first = k, false
			}
		}
		if len(s.rooms) >= maxRooms {
			delete(s.rooms, oldest)
		}
	}
	s.rooms[e.Room] = e
}

func (s *roomStore) get(room int64) (kvEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.rooms[room]
	return e, ok
}

func digest(prompt string) string {
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:8])
}

// BootstrapHandler serves a prefill's bootstrap port: GET /kv/{room} is
// the room's KV (404 until the prefill has it), GET /health is 200.
func (e *Engine) BootstrapHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(HeaderStandIn, "stand-in")
	})
	mux.HandleFunc("GET /kv/{room}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderStandIn, "stand-in")
		room, err := strconv.ParseInt(r.PathValue("room"), 10, 64)
		if err != nil {
			writeError(w, badRequest("room %q is not an integer", r.PathValue("room")))
			return
		}
		if e.rooms == nil {
			writeError(w, badRequest("pod %s is not a prefill engine", e.opts.Pod))
			return
		}
		kv, ok := e.rooms.get(room)
		if !ok {
			writeError(w, &apiError{Status: http.StatusNotFound, Type: "NotFoundError",
				Message: fmt.Sprintf("room %d is not prefilled on pod %s (yet)", room, e.opts.Pod)})
			return
		}
		e.metrics.kv.WithLabelValues("served").Inc()
		writeJSON(w, http.StatusOK, kv)
	})
	return mux
}

// disaggregate does the request's prefill/decode part and returns what the
// reply says about it: a prefill stores the room's KV, a decode fetches it.
func (e *Engine) disaggregate(r *http.Request, req *genRequest, prompt string) (string, error) {
	switch e.cfg.Disaggregation {
	case "prefill":
		if req.BootstrapRoom == nil {
			return "", nil
		}
		e.rooms.put(kvEntry{Room: *req.BootstrapRoom, Pod: e.opts.Pod, Model: req.Model,
			PromptDigest: digest(prompt), PromptTokens: len(strings.Fields(prompt))})
		e.metrics.kv.WithLabelValues("stored").Inc()
		return fmt.Sprintf("prefill of room %d", *req.BootstrapRoom), nil
	case "decode":
		if req.BootstrapHost == "" || req.BootstrapPort == nil || req.BootstrapRoom == nil {
			return "", badRequest("pod %s is a decode engine: a request needs bootstrap_host, bootstrap_port and bootstrap_room (the SGLang PD router adds them)", e.opts.Pod)
		}
		kv, err := e.fetchKV(r, req.BootstrapHost, *req.BootstrapPort, *req.BootstrapRoom)
		if err != nil {
			return "", err
		}
		if kv.PromptDigest != digest(prompt) {
			return "", &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError",
				Message: fmt.Sprintf("the KV of room %d from pod %s was prefilled for another prompt", kv.Room, kv.Pod)}
		}
		e.metrics.kv.WithLabelValues("fetched").Inc()
		return fmt.Sprintf("decoding KV of room %d prefilled on pod %s", kv.Room, kv.Pod), nil
	}
	return "", nil
}

// fetchKV polls the prefill's bootstrap server until it has the room, the
// request ends, or KVWait passes.
func (e *Engine) fetchKV(r *http.Request, host string, port int, room int64) (kvEntry, error) {
	url := fmt.Sprintf("http://%s/kv/%d", net.JoinHostPort(host, strconv.Itoa(port)), room)
	deadline := time.Now().Add(e.opts.KVWait)
	var last string
	for {
		kv, status, err := e.getKV(r, url)
		switch {
		case err == nil && status == http.StatusOK:
			return kv, nil
		case err != nil:
			last = err.Error()
		default:
			last = fmt.Sprintf("HTTP %d", status)
		}
		if time.Now().After(deadline) || r.Context().Err() != nil {
			return kvEntry{}, &apiError{Status: http.StatusBadGateway, Type: "KVTransferError",
				Message: fmt.Sprintf("decode pod %s got no KV for room %d from the prefill's bootstrap server %s within %s: %s", e.opts.Pod, room, url, e.opts.KVWait, last)}
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-r.Context().Done():
		}
	}
}

func (e *Engine) getKV(r *http.Request, url string) (kvEntry, int, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, url, nil)
	if err != nil {
		return kvEntry{}, 0, err
	}
	resp, err := e.kvClient.Do(req)
	if err != nil {
		return kvEntry{}, 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return kvEntry{}, resp.StatusCode, nil
	}
	var kv kvEntry
	if err := json.NewDecoder(resp.Body).Decode(&kv); err != nil {
		return kvEntry{}, 0, fmt.Errorf("bad KV answer: %w", err)
	}
	return kv, http.StatusOK, nil
}
