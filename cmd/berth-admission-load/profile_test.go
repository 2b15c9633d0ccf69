package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
)

// cpuProfile is a CPU profile of one sample of nanos in fn.
func cpuProfile(fn string, nanos int64) *profile.Profile {
	f := &profile.Function{ID: 1, Name: fn}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: f}}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
		Sample:   []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{nanos / 10_000_000, nanos}}},
		Location: []*profile.Location{loc}, Function: []*profile.Function{f},
	}
}

// Each path's rounds are pooled into one profile per rate and path, whose
// CPU is the rounds' sum, and the next rate starts afresh.
func TestProfilerPoolsEachPathsRounds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profiles")
	p := &profiler{dir: dir, byPath: map[string][]*profile.Profile{
		"noop": {cpuProfile("admit", 20_000_000), cpuProfile("admit", 30_000_000)},
		"with": {cpuProfile("admit", 40_000_000), cpuProfile("patch", 70_000_000)},
	}}
	paths := []podPath{{name: "noop"}, {name: "with"}}
	if err := p.write(100, paths); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int64{"noop": 50_000_000, "with": 110_000_000} {
		f, err := os.Open(filepath.Join(dir, "apiserver-100-"+path+".pprof"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := profile.Parse(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var cpu int64
		for _, s := range got.Sample {
			cpu += s.Value[1]
		}
		if cpu != want {
			t.Errorf("%s: %d ns of CPU pooled, want %d", path, cpu, want)
		}
	}
	if p.byPath != nil {
		t.Errorf("profiles of rate 100 kept for the next rate: %v", p.byPath)
	}
}

// Without -apiserver-profiles nothing is asked of the API server or written.
func TestProfilerOff(t *testing.T) {
	p := &profiler{}
	if err := p.during(t.Context(), 0)("with"); err != nil {
		t.Fatal(err)
	}
	if err := p.write(100, []podPath{{name: "with"}}); err != nil {
		t.Fatal(err)
	}
}
