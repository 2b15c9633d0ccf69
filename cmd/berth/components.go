package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/process"
)

// components are the berth processes `berth up` and `berth demo` run next
// to the control plane: the webhook, then the reconciler. Their binaries
// are found next to this executable (make build puts bin/berth-webhook
// beside bin/berth), then in $PATH; nothing is built at run time.
func components() ([]devenv.Component, error) {
	webhook, err := devenv.FindComponent("berth-webhook")
	if err != nil {
		return nil, err
	}
	rec, err := devenv.FindComponent("berth-reconciler")
	if err != nil {
		return nil, err
	}
	return []devenv.Component{devenv.Webhook(webhook), devenv.Reconciler(rec, reconcilerArgs...)}, nil
}

// reconcilerArgs run berth-reconciler in the local environment: the Lease
// in kube-system (there is no berth-system namespace), and a fixed identity
// so a reconciler restarted after a crash takes its lease back at once
// instead of waiting for it to expire.
var reconcilerArgs = []string{"--leader-elect-namespace=kube-system", "--leader-elect-identity=devenv-reconciler"}

// deathSummary is one line per component that died during the run, in
// first-death order: "berth-webhook died 2 times (last: signal: killed)".
func deathSummary(deaths []process.Death) []string {
	var names []string
	count := map[string]int{}
	last := map[string]process.Death{}
	for _, d := range deaths {
		if count[d.Name] == 0 {
			names = append(names, d.Name)
		}
		count[d.Name]++
		last[d.Name] = d
	}
	lines := make([]string, len(names))
	for i, n := range names {
		times := "once"
		if count[n] > 1 {
			times = fmt.Sprintf("%d times", count[n])
		}
		lines[i] = fmt.Sprintf("%s died %s (last: %v at %s)", n, times, last[n].Err, last[n].At.Format("15:04:05"))
	}
	return lines
}

// printDeaths tells, on the way out, which components died while the
// environment ran (each death was reported when it happened, too).
func printDeaths(w io.Writer, env *devenv.Env) {
	if lines := deathSummary(env.Deaths()); len(lines) > 0 {
		fmt.Fprintf(w, "berth: during this run %s; each death was followed by a restart.\n", strings.Join(lines, "; "))
	}
}

func runs(env *devenv.Env, name string) bool { return slices.Contains(env.ComponentNames(), name) }
