package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/pprof/profile"
	"k8s.io/client-go/kubernetes"
)

// profiler collects the API server's CPU profile of each phase
// (-apiserver-profiles) and writes them pooled by rate and path, so that
// `go tool pprof -diff_base` shows what one path costs the API server
// beyond another: every path creates as many pods.
type profiler struct {
	dir  string // "": off
	kube kubernetes.Interface
	// byPath are the current rate's profiles, by path.
	byPath map[string][]*profile.Profile
}

// during profiles the API server for d, from now, in the background; the
// returned func waits for the profile and keeps it under path.
func (p *profiler) during(ctx context.Context, d time.Duration) func(path string) error {
	if p.dir == "" {
		return func(string) error { return nil }
	}
	type got struct {
		raw []byte
		err error
	}
	done := make(chan got, 1)
	secs := max(int(d/time.Second), 1)
	go func() {
		raw, err := p.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(secs)).Timeout(d + time.Minute).DoRaw(ctx)
		done <- got{raw, err}
	}()
	return func(path string) error {
		g := <-done
		if g.err != nil {
			return fmt.Errorf("the API server's CPU profile: %w", g.err)
		}
		prof, err := profile.Parse(bytes.NewReader(g.raw))
		if err != nil {
			return fmt.Errorf("the API server's CPU profile: %w", err)
		}
		if p.byPath == nil {
			p.byPath = map[string][]*profile.Profile{}
		}
		p.byPath[path] = append(p.byPath[path], prof)
		return nil
	}
}

// write pools each path's profiles of rate into
// <dir>/apiserver-<rate>-<path>.pprof, prints how to compare them, and
// starts the next rate afresh.
func (p *profiler) write(rate int, paths []podPath) error {
	if p.dir == "" {
		return nil
	}
	defer func() { p.byPath = nil }()
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{}
	for _, path := range paths {
		merged, err := profile.Merge(p.byPath[path.name])
		if err != nil {
			return fmt.Errorf("pooling the API server's profiles of %s: %w", path.name, err)
		}
		file := filepath.Join(p.dir, fmt.Sprintf("apiserver-%d-%s.pprof", rate, path.name))
		var buf bytes.Buffer
		if err := merged.Write(&buf); err != nil {
			return err
		}
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			return err
		}
		files[path.name] = file
	}
	fmt.Printf("%6d the API server's CPU profiles: %s\n", rate, p.dir)
	if files["noop"] != "" && files["with"] != "" {
		fmt.Printf("%6s what berth's call costs it beyond the no-op's: go tool pprof -top -diff_base %s %s\n", "", files["noop"], files["with"])
	}
	return nil
}
