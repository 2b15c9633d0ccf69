package testengine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Multi-node groups (SGLang's --dist-init-addr HOST:PORT --nnodes N
// --node-rank R): the rank 0 engine (the leader) serves a rendezvous on
// the port of --dist-init-addr and turns ready once every other rank has
// joined; a rank > 0 engine resolves HOST by DNS, as SGLang's workers do
// through torch.distributed, joins, and turns ready once it has. So a
// group is ready only when its workers reach their leader by name.

// MultiNode is the multi-node part of the command line.
type MultiNode struct {
	DistInitAddr string // HOST:PORT of rank 0
	NNodes       int    // pods in the group (0 and 1: none)
	NodeRank     int
}

// enabled reports whether the engine is part of a multi-node group.
func (m MultiNode) enabled() bool { return m.NNodes > 1 }

func (m MultiNode) validate() error {
	if !m.enabled() {
		return nil
	}
	if m.NodeRank < 0 || m.NodeRank >= m.NNodes {
		return fmt.Errorf("--node-rank %d is not in [0, --nnodes %d)", m.NodeRank, m.NNodes)
	}
	host, port, err := net.SplitHostPort(m.DistInitAddr)
	if err != nil || host == "" {
		return fmt.Errorf("--dist-init-addr %q is not HOST:PORT (with --nnodes %d)", m.DistInitAddr, m.NNodes)
	}
	if _, err := parsePort(port); err != nil {
		return fmt.Errorf("--dist-init-addr %q: %w", m.DistInitAddr, err)
	}
	return nil
}

// rendezvous is the leader's record of the ranks that joined.
type rendezvous struct {
	mu     sync.Mutex
	joined map[int]string // rank -> pod
	all    chan struct{}  // closed once every rank joined
	want   int
}

func newRendezvous(nnodes int) *rendezvous {
	r := &rendezvous{joined: map[int]string{}, all: make(chan struct{}), want: nnodes - 1}
	if r.want <= 0 {
		close(r.all)
	}
	return r
}

// Handler serves POST /join?rank=R&pod=P and GET /ranks.
func (r *rendezvous) Handler(log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /join", func(w http.ResponseWriter, req *http.Request) {
		rank, err := strconv.Atoi(req.URL.Query().Get("rank"))
		if err != nil || rank < 1 || rank > r.want {
			http.Error(w, fmt.Sprintf("rank %q is not in [1, %d]", req.URL.Query().Get("rank"), r.want), http.StatusBadRequest)
			return
		}
		pod := req.URL.Query().Get("pod")
		r.mu.Lock()
		if _, again := r.joined[rank]; !again {
			log.Info("rank joined", "rank", rank, "pod", pod, "from", req.RemoteAddr)
		}
		r.joined[rank] = pod
		if len(r.joined) == r.want {
			select {
			case <-r.all:
			default:
				close(r.all)
				log.Info("every rank joined", "nnodes", r.want+1)
			}
		}
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /ranks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r.snapshot())
	})
	return mux
}

// RankInfo is one joined rank, as /ranks and /get_server_info list it.
type RankInfo struct {
	Rank int    `json:"rank"`
	Pod  string `json:"pod"`
}

func (r *rendezvous) snapshot() []RankInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RankInfo, 0, len(r.joined))
	for rank, pod := range r.joined {
		out = append(out, RankInfo{rank, pod})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	return out
}

// joinLeader resolves the leader's host and joins its rendezvous, retrying
// until ctx ends. It returns the addresses the name resolved to.
func joinLeader(ctx context.Context, m MultiNode, pod string, log *slog.Logger) ([]string, error) {
	host, port, _ := net.SplitHostPort(m.DistInitAddr)
	client := &http.Client{Timeout: 2 * time.Second}
	var lastErr error
	for attempt := 0; ; attempt++ {
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		if err == nil {
			u := "http://" + net.JoinHostPort(host, port) + "/join?" + url.Values{"rank": {strconv.Itoa(m.NodeRank)}, "pod": {pod}}.Encode()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
			resp, err2 := client.Do(req)
			if err2 == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusNoContent {
					return addrs, nil
				}
				err2 = fmt.Errorf("the leader answered %s", resp.Status)
			}
			err = err2
		}
		if lastErr == nil || err.Error() != lastErr.Error() {
			log.Info("waiting for the leader", "dist_init_addr", m.DistInitAddr, "rank", m.NodeRank, "error", err)
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("rank %d never joined %s: %w", m.NodeRank, m.DistInitAddr, lastErr)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
