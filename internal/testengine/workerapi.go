package testengine

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
)

// The SGLang model gateway's worker management API (sgl-router's
// /workers), as its documentation describes it: POST /workers queues a
// registration and answers 202 Accepted, GET /workers lists the workers
// with per-role counts, GET and DELETE /workers/{worker_id} inspect and
// remove one. The stand-in applies a registration at once (the real router
// health-checks the worker in the background first) and accepts as
// worker_id either the id it listed or the worker's URL, path-escaped.

// workerRequest is POST /workers' body (the fields the stand-in reads;
// others, such as model_id, priority, cost and labels, are accepted and
// ignored).
type workerRequest struct {
	URL           string `json:"url"`
	WorkerType    string `json:"worker_type"`
	BootstrapPort *int   `json:"bootstrap_port"`
}

// workerInfo is one worker in GET /workers.
type workerInfo struct {
	ID             string `json:"id"`
	URL            string `json:"url"`
	WorkerType     string `json:"worker_type"`
	BootstrapPort  *int   `json:"bootstrap_port,omitempty"`
	IsHealthy      bool   `json:"is_healthy"`
	Load           int    `json:"load"`
	ConnectionMode string `json:"connection_mode"`
	Source         string `json:"source"`
}

// workerID is a worker's stable id: a UUID-shaped digest of its URL.
func workerID(u string) string {
	s := sha256.Sum256([]byte(u))
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

func (r *Router) postWorker(w http.ResponseWriter, req *http.Request) {
	var body workerRequest
	if err := decodeBody(req, &body); err != nil {
		writeError(w, err)
		return
	}
	u, err := normalizeURL(body.URL)
	if err != nil {
		writeError(w, badRequest("POST /workers: %v", err))
		return
	}
	role := body.WorkerType
	switch {
	case role == "" || role == RoleRegular:
		role = RoleRegular
		if r.cfg.PD {
			writeError(w, badRequest("POST /workers: a PD router needs worker_type prefill or decode, got %q", body.WorkerType))
			return
		}
	case role == RolePrefill || role == RoleDecode:
		if !r.cfg.PD {
			writeError(w, badRequest("POST /workers: worker_type %s needs a router started with --pd-disaggregation", role))
			return
		}
	default:
		writeError(w, badRequest("POST /workers: worker_type %q: want regular, prefill or decode", body.WorkerType))
		return
	}
	wk := Worker{URL: u, Role: role, Source: SourceAPI}
	if role == RolePrefill {
		wk.BootstrapPort = DefaultBootstrapPort
		if body.BootstrapPort != nil {
			if *body.BootstrapPort < 0 || *body.BootstrapPort > 65535 {
				writeError(w, badRequest("POST /workers: bootstrap_port %d is not a TCP port", *body.BootstrapPort))
				return
			}
			wk.BootstrapPort = *body.BootstrapPort
		}
	}
	r.workers.put(wk)
	r.log.Info("worker added", "url", u, "role", role, "source", SourceAPI, "api", "/workers")
	w.Header().Set("Location", "/workers/"+url.PathEscape(u))
	writeJSON(w, http.StatusAccepted, map[string]any{"status": "accepted", "worker_id": workerID(u),
		"url": u, "message": "Worker addition queued for background processing"})
}

func (r *Router) getWorkers(w http.ResponseWriter, _ *http.Request) {
	all := r.workers.all()
	out := make([]workerInfo, 0, len(all))
	for _, wk := range all {
		out = append(out, infoOf(wk))
	}
	writeJSON(w, http.StatusOK, map[string]any{"workers": out, "total": len(out), "stats": map[string]int{
		"prefill_count": r.workers.count(RolePrefill), "decode_count": r.workers.count(RoleDecode),
		"regular_count": r.workers.count(RoleRegular)}})
}

func infoOf(wk Worker) workerInfo {
	info := workerInfo{ID: workerID(wk.URL), URL: wk.URL, WorkerType: wk.Role, IsHealthy: true,
		ConnectionMode: "Http", Source: wk.Source}
	if wk.Role == RolePrefill {
		bp := wk.BootstrapPort
		info.BootstrapPort = &bp
	}
	return info
}

// findWorker resolves a worker_id path value: an id from GET /workers or a
// worker URL.
func (r *Router) findWorker(id string) (Worker, bool) {
	for _, wk := range r.workers.all() {
		if workerID(wk.URL) == id || wk.URL == id {
			return wk, true
		}
	}
	return Worker{}, false
}

func (r *Router) getWorker(w http.ResponseWriter, req *http.Request) {
	wk, ok := r.findWorker(req.PathValue("id"))
	if !ok {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "NotFoundError",
			Message: fmt.Sprintf("worker %s not found", req.PathValue("id"))})
		return
	}
	writeJSON(w, http.StatusOK, infoOf(wk))
}

func (r *Router) deleteWorker(w http.ResponseWriter, req *http.Request) {
	wk, ok := r.findWorker(req.PathValue("id"))
	if !ok {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "NotFoundError",
			Message: fmt.Sprintf("worker %s not found", req.PathValue("id"))})
		return
	}
	r.workers.remove(wk.URL)
	r.log.Info("worker removed", "url", wk.URL, "source", SourceAPI, "api", "/workers")
	writeJSON(w, http.StatusAccepted, map[string]any{"status": "accepted", "worker_id": workerID(wk.URL),
		"message": "Worker removal queued for background processing"})
}
