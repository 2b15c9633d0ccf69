package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestPrintCreatesNotesWrites checks what the report says of the
// reconciler's pod creates: nothing when it counted N, the count when
// not, and why when its metrics could not be read (never a count of 0).
func TestPrintCreatesNotesWrites(t *testing.T) {
	run := func(writes float64, err error) createRun {
		return createRun{path: pathReconciler, n: 10, first: time.Millisecond, created: time.Second,
			running: time.Second, writes: writes, writesErr: err}
	}
	for _, tc := range []struct {
		name string
		run  createRun
		want string // the NOTE line, "" for none
	}{
		{"counted N", run(10, nil), ""},
		{"counted fewer", run(7, nil), "NOTE: at N=10 the reconciler counted 7 pod creates."},
		{"unreadable", run(0, errors.New("before the run: connection refused")),
			"NOTE: at N=10 the reconciler's pod creates could not be read: before the run: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			r := &report{creates: []createRun{{path: pathRaw, n: 10, created: time.Second}, tc.run}}
			r.printCreates(&b)
			var notes []string
			for line := range strings.Lines(b.String()) {
				if strings.HasPrefix(line, "NOTE:") {
					notes = append(notes, strings.TrimSuffix(line, "\n"))
				}
			}
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if strings.Join(notes, "|") != strings.Join(want, "|") {
				t.Errorf("notes %q, want %q", notes, want)
			}
		})
	}
}
