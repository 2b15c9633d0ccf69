package testengine

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// Worker roles.
const (
	RoleRegular = "regular"
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// Worker sources.
const (
	SourceFlag      = "flag"
	SourceAPI       = "api"
	SourceDiscovery = "discovery"
)

// Worker is an engine the router sends requests to.
type Worker struct {
	URL           string `json:"url"`
	Role          string `json:"role"`
	BootstrapPort int    `json:"bootstrap_port,omitempty"`
	Source        string `json:"source"`
	Pod           string `json:"pod,omitempty"` // namespace/name, discovered workers only
	// Pairing is the pod's ome.io/pairing label (LabelPairing): a prefill
	// is paired only with a decode of the same pairing.
	Pairing string `json:"pairing,omitempty"`
}

// workerSet holds the router's workers by URL and hands them out round
// robin per role.
type workerSet struct {
	mu     sync.RWMutex
	byURL  map[string]Worker
	byPod  map[string]string // discovered pod → URL
	sorted map[string][]Worker
	next   map[string]*atomic.Uint64
}

func newWorkerSet() *workerSet {
	s := &workerSet{byURL: map[string]Worker{}, byPod: map[string]string{}, sorted: map[string][]Worker{},
		next: map[string]*atomic.Uint64{}}
	for _, r := range []string{RoleRegular, RolePrefill, RoleDecode} {
		s.next[r] = &atomic.Uint64{}
	}
	return s
}

// put adds or replaces a worker; it reports whether anything changed.
func (s *workerSet) put(w Worker) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.Pod != "" {
		if old, ok := s.byPod[w.Pod]; ok && old != w.URL {
			delete(s.byURL, old)
		}
		s.byPod[w.Pod] = w.URL
	}
	if old, ok := s.byURL[w.URL]; ok && old == w {
		return false
	}
	s.byURL[w.URL] = w
	s.rebuild()
	return true
}

// remove drops the worker at url; it reports whether there was one.
func (s *workerSet) remove(url string) (Worker, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.byURL[url]
	if !ok {
		return w, false
	}
	delete(s.byURL, url)
	if w.Pod != "" {
		delete(s.byPod, w.Pod)
	}
	s.rebuild()
	return w, true
}

// removePod drops the worker a discovered pod was in role.
func (s *workerSet) removePod(pod, role string) (Worker, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	url, ok := s.byPod[pod]
	if !ok || s.byURL[url].Role != role {
		return Worker{}, false
	}
	w := s.byURL[url]
	delete(s.byURL, url)
	delete(s.byPod, pod)
	s.rebuild()
	return w, true
}

func (s *workerSet) rebuild() {
	sorted := map[string][]Worker{}
	for _, w := range s.byURL {
		sorted[w.Role] = append(sorted[w.Role], w)
	}
	for _, ws := range sorted {
		sort.Slice(ws, func(i, j int) bool { return ws[i].URL < ws[j].URL })
	}
	s.sorted = sorted
}

// pick is the next worker of a role, round robin.
func (s *workerSet) pick(role string) (Worker, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ws := s.sorted[role]
	if len(ws) == 0 {
		return Worker{}, false
	}
	n := s.next[role].Add(1) - 1
	return ws[n%uint64(len(ws))], true
}

// all lists every worker, by role then URL.
func (s *workerSet) all() []Worker {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Worker
	for _, r := range []string{RolePrefill, RoleDecode, RoleRegular} {
		out = append(out, s.sorted[r]...)
	}
	return slices.Clip(out)
}

func (s *workerSet) count(role string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.sorted[role])
}
