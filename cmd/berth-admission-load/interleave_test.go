package main

import (
	"errors"
	"slices"
	"testing"
)

func TestSelectPaths(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  error
	}{
		{in: "without,composed,noop,replay,with", want: pathNames},
		{in: " with , without ", want: []string{"with", "without"}},
		{in: "with,,without,", want: []string{"with", "without"}},
		{in: "with,bogus", err: errors.New(`"bogus" is no path (without, composed, noop, replay, with)`)},
		{in: "with,with", err: errors.New(`"with" is named twice`)},
		{in: " , ", err: errors.New("no path named (without, composed, noop, replay, with)")},
	} {
		got, err := selectPaths(c.in)
		if c.err != nil {
			if err == nil || err.Error() != c.err.Error() {
				t.Errorf("selectPaths(%q) error = %v, want %v", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("selectPaths(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// pick keeps the order of the names, not of the table.
func TestPickKeepsTheNamedOrder(t *testing.T) {
	all := []podPath{{name: "without"}, {name: "noop", webhook: "n"}, {name: "with", webhook: "w"}}
	got := pick(all, []string{"with", "without"})
	if len(got) != 2 || got[0].name != "with" || got[0].webhook != "w" || got[1].name != "without" {
		t.Errorf("pick = %+v, want with then without", got)
	}
}

// A round's paths run each alone in RoundOrder's order, or all in one
// stream in that order when interleaved.
func TestTurns(t *testing.T) {
	order := []int{2, 0, 1}
	if got := turns(order, false); len(got) != 3 || !slices.Equal(got[0], []int{2}) || !slices.Equal(got[1], []int{0}) || !slices.Equal(got[2], []int{1}) {
		t.Errorf("turns(%v, false) = %v, want [[2] [0] [1]]", order, got)
	}
	if got := turns(order, true); len(got) != 1 || !slices.Equal(got[0], order) {
		t.Errorf("turns(%v, true) = %v, want [%v]", order, got, order)
	}
	paths := []podPath{{name: "without"}, {name: "noop"}, {name: "with"}}
	if got := names(pathsAt(paths, order)); got != "with, without, noop" {
		t.Errorf("names(pathsAt(%v)) = %q, want \"with, without, noop\"", order, got)
	}
}
