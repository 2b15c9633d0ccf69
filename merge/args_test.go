package merge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMergeArgs(t *testing.T) {
	tests := []struct {
		name             string
		base, over, want []string
	}{
		{name: "empty over keeps base", base: []string{"--a=1"}, want: []string{"--a=1"}},
		{name: "empty base takes over", over: []string{"--a=1", "--b"}, want: []string{"--a=1", "--b"}},
		{name: "k=v replaced in place", base: []string{"--a=1", "--b=2"}, over: []string{"--a=3"}, want: []string{"--a=3", "--b=2"}},
		{name: "k v replaced by k=v", base: []string{"--tp", "2", "--x"}, over: []string{"--tp=4"}, want: []string{"--tp=4", "--x"}},
		{name: "k=v replaced by k v", base: []string{"--tp=2"}, over: []string{"--tp", "4"}, want: []string{"--tp", "4"}},
		{name: "bare flag kept once", base: []string{"--trust-remote-code"}, over: []string{"--trust-remote-code", "--new"}, want: []string{"--trust-remote-code", "--new"}},
		{name: "new flags appended in order", base: []string{"--a"}, over: []string{"--c", "--b"}, want: []string{"--a", "--c", "--b"}},
		{name: "repeated flags replace all earlier occurrences", base: []string{"--lora", "x", "--p", "--lora", "y"}, over: []string{"--lora", "z"}, want: []string{"--lora", "z", "--p"}},
		{name: "repeated flags in over stay repeated", base: []string{"--p"}, over: []string{"--lora", "a", "--lora", "b"}, want: []string{"--p", "--lora", "a", "--lora", "b"}},
		{name: "negative number is a value", base: []string{"--seed", "-1"}, over: []string{"--seed", "-2"}, want: []string{"--seed", "-2"}},
		{name: "single dash flags", base: []string{"-v", "2"}, over: []string{"-v", "3"}, want: []string{"-v", "3"}},
		{name: "positional not repeated", base: []string{"serve", "--a"}, over: []string{"serve", "--b"}, want: []string{"serve", "--a", "--b"}},
		{name: "everything after -- is one positional", base: []string{"--a", "--", "x", "--y"}, over: []string{"--", "z"}, want: []string{"--a", "--", "z"}},
		{name: "value with equals inside", base: []string{`--json={"a":1}`}, over: []string{`--json={"a":2}`}, want: []string{`--json={"a":2}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := append([]string(nil), tc.base...)
			got := MergeArgs(tc.base, tc.over)
			assert.Equal(t, tc.want, emptyToNil(got))
			assert.Equal(t, base, tc.base, "base must not be modified")
			assert.Equal(t, emptyToNil(got), emptyToNil(MergeArgs(got, tc.over)), "merging the same layer twice changes nothing")
		})
	}
}

// TestMergeArgsLayers encodes the design page rule: runtime flags, then new
// accelerator flags, then new user flags; runtime < accelerator < user.
func TestMergeArgsLayers(t *testing.T) {
	runtime := []string{"--port=8080", "--tp-size=1", "--mem-fraction-static=0.8"}
	accel := []string{"--tp-size=2", "--enable-cuda-graph"}
	user := []string{"--mem-fraction-static=0.9", "--tp-size=8", "--trust-remote-code"}
	got := MergeArgs(MergeArgs(runtime, accel), user)
	assert.Equal(t, []string{"--port=8080", "--tp-size=8", "--mem-fraction-static=0.9", "--enable-cuda-graph", "--trust-remote-code"}, got)
}

func emptyToNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// FuzzMergeArgs: never panics, and merging the same layer again changes
// nothing (the pod webhook is reinvoked on its own output).
func FuzzMergeArgs(f *testing.F) {
	f.Add("--a --b=1 x", "--b 2 y")
	f.Add("--a", "x")
	f.Add("-- --a", "--a -1")
	f.Add("--lora a --lora b", "--lora c")
	f.Fuzz(func(t *testing.T, base, over string) {
		b, o := strings.Fields(base), strings.Fields(over)
		once := MergeArgs(b, o)
		assert.Equal(t, emptyToNil(once), emptyToNil(MergeArgs(once, o)), "base %q over %q", b, o)
	})
}
