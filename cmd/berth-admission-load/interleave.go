package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/internal/loadrun"
)

// pathNames are the paths a run can measure, in their default order.
var pathNames = []string{"without", "composed", "noop", "replay", "with"}

// selectPaths reads -paths: known names, each once, one at least.
func selectPaths(list string) ([]string, error) {
	var names []string
	for _, f := range strings.Split(list, ",") {
		n := strings.TrimSpace(f)
		switch {
		case n == "":
			continue
		case !slices.Contains(pathNames, n):
			return nil, fmt.Errorf("%q is no path (%s)", n, strings.Join(pathNames, ", "))
		case slices.Contains(names, n):
			return nil, fmt.Errorf("%q is named twice", n)
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no path named (%s)", strings.Join(pathNames, ", "))
	}
	return names, nil
}

// pick is the paths named, in names' order.
func pick(all []podPath, names []string) []podPath {
	var out []podPath
	for _, n := range names {
		if i := slices.IndexFunc(all, func(p podPath) bool { return p.name == n }); i >= 0 {
			out = append(out, all[i])
		}
	}
	return out
}

// measureInterleaved runs one stream of rate creates a second for
// duration in all, split into rounds, in which the paths take turns
// request by request (loadrun.Interleaved; each round starts with the
// next path, loadrun.RoundOrder). Each path's result holds its own
// creates and its webhook's calls; the processes' CPU time belongs to the
// stream.
func measureInterleaved(ctx context.Context, kube kubernetes.Interface, m measure, paths []podPath, rate int, duration time.Duration, rounds, workers int) (rateResult, error) {
	res := rateResult{paths: make([]*result, len(paths))}
	for round := 0; round < rounds; round++ {
		order := loadrun.RoundOrder(round, len(paths))
		before := make([]webhookCalls, len(paths))
		for i, p := range paths {
			if p.webhook != "" {
				before[i] = scrapeWebhookCalls(ctx, kube, p.webhook)
			}
		}
		hBefore := scrapeHandler(ctx, m.probeURL)
		cpu0 := m.procs.cpu()
		d := duration / time.Duration(rounds)
		progress("%d/s in all, %s taking turns, for %s", rate, names(paths, order), d)
		rs := loadrun.Interleaved(rate, d, workers, len(paths), func(i int) error {
			p := paths[order[i%len(order)]]
			return create(ctx, kube, p.pod(fmt.Sprintf("%s-%d-%d-%d", p.name, rate, round, i)))
		})
		if err := ctx.Err(); err != nil {
			return res, err
		}
		stream := &result{Result: (*loadrun.Result)(nil), cpu: m.procs.cpu().minus(cpu0)}
		for k, r := range rs {
			i := order[k]
			got := &result{Result: r}
			if paths[i].webhook != "" {
				got.calls = scrapeWebhookCalls(ctx, kube, paths[i].webhook).minus(before[i])
			}
			res.paths[i] = res.paths[i].merge(got)
			stream.Result = stream.Result.Merge(r)
		}
		stream.Elapsed = rs[0].Elapsed // the paths share it
		if slices.ContainsFunc(paths, func(p podPath) bool { return p.webhook == podWebhook }) {
			res.handled = res.handled.plus(scrapeHandler(ctx, m.probeURL).minus(hBefore))
		}
		res.stream = res.stream.merge(stream)
		if err := clean(ctx, kube); err != nil {
			return res, err
		}
	}
	return res, nil
}

// names are the paths' names in order, joined.
func names(paths []podPath, order []int) string {
	out := make([]string, len(order))
	for k, i := range order {
		out[k] = paths[i].name
	}
	return strings.Join(out, ", ")
}
