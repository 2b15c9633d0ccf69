package testengine

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Router is the SGLang router's stand-in: a proxy over engines found on
// the command line, through its worker API, or by watching pods.
type Router struct {
	cfg     RouterConfig
	log     *slog.Logger
	workers *workerSet
	metrics *metrics
	client  *http.Client

	mu           sync.Mutex
	discoveryErr map[string]string // role → why pods cannot be listed
}

// NewRouter builds a router with the workers its command line names.
func NewRouter(cfg Config, log *slog.Logger) (*Router, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	transport := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
	}
	r := &Router{cfg: cfg.Router, log: log, workers: newWorkerSet(), metrics: newMetrics(ModeRouter),
		client: &http.Client{Transport: transport}, discoveryErr: map[string]string{}}
	for _, role := range []string{RoleRegular, RolePrefill, RoleDecode} {
		r.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "berth_test_engine_router_workers", Help: "Workers the router knows, by role.",
			ConstLabels: prometheus.Labels{"role": role},
		}, func() float64 { return float64(r.workers.count(role)) }))
	}
	add := func(w Worker) error {
		u, err := normalizeURL(w.URL)
		if err != nil {
			return err
		}
		w.URL, w.Source = u, SourceFlag
		r.workers.put(w)
		return nil
	}
	for _, u := range cfg.Router.WorkerURLs {
		if err := add(Worker{URL: u, Role: RoleRegular}); err != nil {
			return nil, fmt.Errorf("--worker-urls: %w", err)
		}
	}
	for _, p := range cfg.Router.Prefill {
		if err := add(Worker{URL: p.URL, Role: RolePrefill, BootstrapPort: p.BootstrapPort}); err != nil {
			return nil, fmt.Errorf("--prefill: %w", err)
		}
	}
	for _, u := range cfg.Router.Decode {
		if err := add(Worker{URL: u, Role: RoleDecode}); err != nil {
			return nil, fmt.Errorf("--decode: %w", err)
		}
	}
	return r, nil
}

// normalizeURL accepts http://host:port (a path-less base URL).
func normalizeURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("worker URL %q: want http://host:port", raw)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		return "", fmt.Errorf("worker URL %q: want http://host:port without a path or query", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

// Handler serves the router's HTTP API.
func (r *Router) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern, endpoint string, h http.HandlerFunc) {
		mux.HandleFunc(pattern, r.metrics.instrument(endpoint, h))
	}
	route("GET /health", "/health", r.health)
	// The SGLang model gateway's probe paths, which OME's runtimes use.
	route("GET /readiness", "/readiness", r.readiness)
	route("GET /liveness", "/liveness", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	route("GET /v1/models", "/v1/models", r.models)
	route("POST /v1/completions", "/v1/completions", r.generate)
	route("POST /v1/chat/completions", "/v1/chat/completions", r.generate)
	route("POST /add_worker", "/add_worker", r.addWorker)
	route("POST /remove_worker", "/remove_worker", r.removeWorker)
	route("GET /list_workers", "/list_workers", r.listWorkers)
	// The newer worker management API (workerapi.go).
	route("POST /workers", "/workers", r.postWorker)
	route("GET /workers", "/workers", r.getWorkers)
	route("GET /workers/{id}", "/workers/{id}", r.getWorker)
	route("DELETE /workers/{id}", "/workers/{id}", r.deleteWorker)
	mux.Handle("GET /metrics", r.metrics.handler())
	route("/", "other", func(w http.ResponseWriter, req *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "NotFoundError",
			Message: fmt.Sprintf("%s %s: berth-test-engine (a stand-in for the SGLang router) serves no such endpoint", req.Method, req.URL.Path)})
	})
	return mux
}

// setDiscoveryError records (err != "") or clears why a role's pods cannot
// be listed, logging each change once.
func (r *Router) setDiscoveryError(role, msg string) {
	r.mu.Lock()
	old := r.discoveryErr[role]
	if msg == "" {
		delete(r.discoveryErr, role)
	} else {
		r.discoveryErr[role] = msg
	}
	r.mu.Unlock()
	switch {
	case msg != "" && msg != old:
		r.log.Error("SERVICE DISCOVERY FAILING: the router routes to no discovered pod until this is fixed", "role", role, "reason", msg)
	case msg == "" && old != "":
		r.log.Info("service discovery works again", "role", role)
	}
}

func (r *Router) discoveryProblems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.discoveryErr))
	for _, m := range r.discoveryErr {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

func (r *Router) health(w http.ResponseWriter, _ *http.Request) {
	body := map[string]any{"workers": map[string]int{RoleRegular: r.workers.count(RoleRegular),
		RolePrefill: r.workers.count(RolePrefill), RoleDecode: r.workers.count(RoleDecode)}}
	if p := r.discoveryProblems(); len(p) > 0 {
		body["status"], body["reason"] = "unhealthy", strings.Join(p, "; ")
		writeJSON(w, http.StatusServiceUnavailable, body)
		return
	}
	body["status"] = "healthy"
	writeJSON(w, http.StatusOK, body)
}

// readiness is the SGLang model gateway's /readiness: a PD router is
// ready once it has a prefill and a decode worker of one pairing (the
// gateway's: a healthy prefill and a healthy decode; discovery adds only
// Ready pods), so a router whose selectors find no Ready pair of its
// pairing gets no traffic; failing discovery is not ready either. A
// regular router answers as /health.
func (r *Router) readiness(w http.ResponseWriter, _ *http.Request) {
	body := map[string]any{}
	var why []string
	if p := r.discoveryProblems(); len(p) > 0 {
		why = append(why, p...)
	}
	if r.cfg.PD {
		pairings := r.workers.pairings()
		body["pairings"] = pairings
		if len(pairings) == 0 {
			why = append(why, fmt.Sprintf("no prefill and decode worker of one pairing (%d prefill, %d decode workers)",
				r.workers.count(RolePrefill), r.workers.count(RoleDecode)))
		}
	} else {
		r.health(w, nil) // a regular router: as /health
		return
	}
	if len(why) > 0 {
		body["status"], body["reason"] = "not ready", strings.Join(why, "; ")
		writeJSON(w, http.StatusServiceUnavailable, body)
		return
	}
	body["status"] = "ready"
	writeJSON(w, http.StatusOK, body)
}

func (r *Router) addWorker(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	u, err := normalizeURL(q.Get("url"))
	if err != nil {
		writeError(w, badRequest("add_worker: %v", err))
		return
	}
	role := RoleRegular
	if r.cfg.PD {
		role = q.Get("role")
		if role != RolePrefill && role != RoleDecode {
			writeError(w, badRequest("add_worker: a PD router needs role=prefill or role=decode, got %q", role))
			return
		}
	} else if rl := q.Get("role"); rl != "" && rl != RoleRegular {
		writeError(w, badRequest("add_worker: role=%s needs a router started with --pd-disaggregation", rl))
		return
	}
	wk := Worker{URL: u, Role: role, Source: SourceAPI}
	if role == RolePrefill {
		wk.BootstrapPort = DefaultBootstrapPort
		if bp := q.Get("bootstrap_port"); bp != "" && bp != "none" {
			if wk.BootstrapPort, err = parsePort(bp); err != nil {
				writeError(w, badRequest("add_worker: bootstrap_port: %v", err))
				return
			}
		} else if bp == "none" {
			wk.BootstrapPort = 0
		}
	}
	r.workers.put(wk)
	r.log.Info("worker added", "url", u, "role", role, "source", SourceAPI)
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "message": fmt.Sprintf("added %s worker %s", role, u)})
}

func (r *Router) removeWorker(w http.ResponseWriter, req *http.Request) {
	u, err := normalizeURL(req.URL.Query().Get("url"))
	if err != nil {
		writeError(w, badRequest("remove_worker: %v", err))
		return
	}
	if _, ok := r.workers.remove(u); !ok {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "NotFoundError",
			Message: fmt.Sprintf("remove_worker: no worker %s", u)})
		return
	}
	r.log.Info("worker removed", "url", u, "source", SourceAPI)
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "message": "removed worker " + u})
}

func (r *Router) listWorkers(w http.ResponseWriter, _ *http.Request) {
	all := r.workers.all()
	urls := make([]string, 0, len(all))
	for _, wk := range all {
		urls = append(urls, wk.URL)
	}
	writeJSON(w, http.StatusOK, map[string]any{"urls": urls, "workers": all})
}

// noWorkers explains where the router looks for workers of a role.
func (r *Router) noWorkers(role string) error {
	where := []string{"POST /add_worker"}
	switch {
	case role == RolePrefill:
		where = append(where, "--prefill")
	case role == RoleDecode:
		where = append(where, "--decode")
	default:
		where = append(where, "--worker-urls")
	}
	if r.cfg.ServiceDiscovery {
		sel := map[string]map[string]string{RoleRegular: r.cfg.Selector, RolePrefill: r.cfg.PrefillSelector, RoleDecode: r.cfg.DecodeSelector}[role]
		where = append(where, fmt.Sprintf("Running and Ready pods in namespace %s with labels %s (port %d)",
			r.cfg.Namespace, formatSelector(sel), r.cfg.DiscoveryPort))
	}
	msg := fmt.Sprintf("no %s worker: the router found none (from %s)", role, strings.Join(where, ", "))
	if p := r.discoveryProblems(); len(p) > 0 {
		msg += "; service discovery fails: " + strings.Join(p, "; ")
	}
	return &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: msg}
}

func formatSelector(sel map[string]string) string {
	keys := make([]string, 0, len(sel))
	for k := range sel {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+sel[k])
	}
	return strings.Join(parts, ",")
}

func itoa(n int) string { return strconv.Itoa(n) }
