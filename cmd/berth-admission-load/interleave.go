package main

import (
	"fmt"
	"slices"
	"strings"
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

// turns are a round's paths (indexes in order) as they run: all in one
// stream when interleaved, else each alone, one after another.
func turns(order []int, interleave bool) [][]int {
	if interleave {
		return [][]int{order}
	}
	out := make([][]int, len(order))
	for k, i := range order {
		out[k] = []int{i}
	}
	return out
}

// pathsAt are the paths at the indexes, in their order.
func pathsAt(paths []podPath, at []int) []podPath {
	out := make([]podPath, len(at))
	for k, i := range at {
		out[k] = paths[i]
	}
	return out
}

// names are the paths' names, joined.
func names(paths []podPath) string {
	out := make([]string, len(paths))
	for k, p := range paths {
		out[k] = p.name
	}
	return strings.Join(out, ", ")
}
