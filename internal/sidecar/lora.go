package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Adapter is one LoRA adapter: the name requests use, and where the engine
// loads it from (its lora_path).
type Adapter struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// AdapterState is what the sidecar reports on /adapters.
type AdapterState struct {
	// Loaded are the adapters the engine served at the last check, by name.
	Loaded []Adapter `json:"loaded"`
	// Failed are the wanted adapters whose last load failed, with the
	// engine's reason.
	Failed []AdapterFailure `json:"failed,omitempty"`
	// Desired is how many adapters the adapters file asked for.
	Desired int `json:"desired"`
	// Error is why the last check could not run (file or engine), if so.
	Error string `json:"error,omitempty"`
	// CheckedAt is when the last check ran.
	CheckedAt time.Time `json:"checkedAt"`
}

// AdapterFailure is a load that failed.
type AdapterFailure struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// ParseAdapters reads the adapters file: a JSON list of {name, source}; an
// empty file is no adapter.
func ParseAdapters(data []byte) ([]Adapter, error) {
	if strings.TrimSpace(string(data)) == "" {
		return nil, nil
	}
	var list []Adapter
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("want a JSON list of {\"name\",\"source\"}: %v", err)
	}
	seen := map[string]bool{}
	for i, a := range list {
		if a.Name == "" || a.Source == "" {
			return nil, fmt.Errorf("[%d]: name and source are required", i)
		}
		if seen[a.Name] {
			return nil, fmt.Errorf("[%d]: adapter %q listed twice", i, a.Name)
		}
		seen[a.Name] = true
	}
	return list, nil
}

// LoRA keeps the engine's adapters equal to the adapters file: it loads
// what is wanted and missing (again after an engine restart, which loses
// them), unloads what is loaded and no longer wanted, and leaves a failed
// load to be tried again on the next pass.
type LoRA struct {
	File     string
	Engine   Engine
	Interval time.Duration
	Log      *slog.Logger
	Metrics  *Metrics

	mu    sync.Mutex
	state AdapterState
	// logged is the last failure logged per adapter: a load that keeps
	// failing the same way is logged once, not on every pass.
	logged map[string]string
}

// State is the last pass's result.
func (l *LoRA) State() AdapterState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Run syncs every Interval until ctx ends.
func (l *LoRA) Run(ctx context.Context) {
	tick := time.NewTicker(l.Interval)
	defer tick.Stop()
	for {
		l.Sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Sync is one pass.
func (l *LoRA) Sync(ctx context.Context) {
	st := AdapterState{CheckedAt: time.Now().UTC(), Loaded: []Adapter{}}
	defer func() {
		l.mu.Lock()
		l.state = st
		l.mu.Unlock()
		l.Metrics.adaptersLoaded.Set(float64(len(st.Loaded)))
		l.Metrics.adaptersFailed.Set(float64(len(st.Failed)))
	}()
	data, err := os.ReadFile(l.File)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		st.Error = fmt.Sprintf("reading %s: %v", l.File, err)
		return
	}
	want, err := ParseAdapters(data)
	if err != nil {
		st.Error = fmt.Sprintf("%s: %v", l.File, err)
		return
	}
	st.Desired = len(want)
	have, err := l.Engine.Loaded(ctx)
	if err != nil {
		st.Error = fmt.Sprintf("listing the engine's adapters: %v", err)
		return
	}
	st.Failed = l.apply(ctx, want, have)
	if have, err = l.Engine.Loaded(ctx); err != nil {
		st.Error = fmt.Sprintf("listing the engine's adapters: %v", err)
		return
	}
	for name, src := range have {
		st.Loaded = append(st.Loaded, Adapter{Name: name, Source: src})
	}
	sort.Slice(st.Loaded, func(i, j int) bool { return st.Loaded[i].Name < st.Loaded[j].Name })
}

// apply unloads and loads; it returns the loads that failed.
func (l *LoRA) apply(ctx context.Context, want []Adapter, have map[string]string) []AdapterFailure {
	var failed []AdapterFailure
	for name := range have {
		if !slices.ContainsFunc(want, func(a Adapter) bool { return a.Name == name }) {
			if err := l.Engine.Unload(ctx, name); err != nil {
				l.Log.Warn("unloading a LoRA adapter failed", "adapter", name, "reason", err)
				continue
			}
			l.Metrics.adapterOps.WithLabelValues("unload").Inc()
			l.Log.Info("LoRA adapter unloaded", "adapter", name)
		}
	}
	for _, a := range want {
		src, ok := have[a.Name]
		if ok && src == a.Source {
			continue
		}
		if ok { // a new source under the same name: unload, then load.
			if err := l.Engine.Unload(ctx, a.Name); err != nil {
				failed = append(failed, AdapterFailure{Name: a.Name, Reason: "unloading the old source: " + err.Error()})
				continue
			}
		}
		if err := l.Engine.Load(ctx, a); err != nil {
			l.Metrics.adapterOps.WithLabelValues("load_failed").Inc()
			if l.logged[a.Name] != err.Error() {
				l.Log.Warn("loading a LoRA adapter failed; trying again on every pass", "adapter", a.Name, "source", a.Source, "reason", err)
				if l.logged == nil {
					l.logged = map[string]string{}
				}
				l.logged[a.Name] = err.Error()
			}
			failed = append(failed, AdapterFailure{Name: a.Name, Reason: err.Error()})
			continue
		}
		delete(l.logged, a.Name)
		l.Metrics.adapterOps.WithLabelValues("load").Inc()
		l.Log.Info("LoRA adapter loaded", "adapter", a.Name, "source", a.Source)
	}
	return failed
}
