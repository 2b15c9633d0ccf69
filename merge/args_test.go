package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseArgs(t *testing.T) {
	l := parseArgs([]string{"serve", "/mnt/models", "-1", "--port", "8080", "--enable-x", "--sel", "a=1", "b=2",
		"--seed", "-1", "-v=3", "x", "-", "--k=v", "w", "--", "--port", "1"})
	assert.Equal(t, []string{"serve", "/mnt/models", "-1"}, l.prefix)
	assert.Equal(t, []argFlag{
		{"--port", []string{"--port", "8080"}},
		{"--enable-x", []string{"--enable-x"}},
		{"--sel", []string{"--sel", "a=1", "b=2"}},
		{"--seed", []string{"--seed", "-1"}},
		{"-v", []string{"-v=3", "x", "-"}},
		{"--k", []string{"--k=v", "w"}},
	}, l.flags)
	assert.Equal(t, []string{"--", "--port", "1"}, l.tail)
	assert.Nil(t, parseArgs([]string{"--a"}).tail)
}

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
		{name: "bare flag replaces a flag with a value", base: []string{"--a", "v", "--b"}, over: []string{"--a"}, want: []string{"--a", "--b"}},
		{name: "new flags appended in order", base: []string{"--a"}, over: []string{"--c", "--b"}, want: []string{"--a", "--c", "--b"}},
		{name: "repeated flags replace all earlier occurrences", base: []string{"--lora", "x", "--p", "--lora", "y"}, over: []string{"--lora", "z"}, want: []string{"--lora", "z", "--p"}},
		{name: "repeated flags in over stay repeated", base: []string{"--p"}, over: []string{"--lora", "a", "--lora", "b"}, want: []string{"--p", "--lora", "a", "--lora", "b"}},
		{name: "repeated flags in over stay together", base: []string{"--p"}, over: []string{"--lora", "a", "--q", "--lora", "b"}, want: []string{"--p", "--lora", "a", "--lora", "b", "--q"}},
		{name: "multi-value flag replaced whole", base: []string{"--prefill-selector", "a=1", "b=2", "--decode-selector", "a=2", "b=2"}, over: []string{"--prefill-selector", "c=3"},
			want: []string{"--prefill-selector", "c=3", "--decode-selector", "a=2", "b=2"}},
		{name: "tokens after k=v belong to the flag", base: []string{"--a=1", "x", "--b"}, over: []string{"--a=2"}, want: []string{"--a=2", "--b"}},
		{name: "negative number is a value", base: []string{"--seed", "-1"}, over: []string{"--seed", "-2"}, want: []string{"--seed", "-2"}},
		{name: "single dash flags", base: []string{"-v", "2"}, over: []string{"-v", "3"}, want: []string{"-v", "3"}},
		{name: "short and long flags are distinct", base: []string{"-p", "1"}, over: []string{"--port", "2"}, want: []string{"-p", "1", "--port", "2"}},
		{name: "positional not repeated", base: []string{"serve", "--a"}, over: []string{"serve", "--b"}, want: []string{"serve", "--a", "--b"}},
		{name: "subcommand stays first", base: []string{"--model-path", "/mnt/models", "--port", "8080"}, over: []string{"serve", "--port", "8000"},
			want: []string{"serve", "--model-path", "/mnt/models", "--port", "8000"}},
		{name: "positional i replaces positional i", base: []string{"serve", "/mnt/models", "--port", "8080"}, over: []string{"chat"},
			want: []string{"chat", "/mnt/models", "--port", "8080"}},
		{name: "shorter prefix keeps the rest", base: []string{"serve", "/mnt/models", "--port", "8080"}, over: []string{"serve", "--port", "8000"},
			want: []string{"serve", "/mnt/models", "--port", "8000"}},
		{name: "longer prefix extends", base: []string{"serve", "--a"}, over: []string{"serve", "/m", "--b"}, want: []string{"serve", "/m", "--a", "--b"}},
		{name: "negative number positional", base: []string{"--a"}, over: []string{"-1"}, want: []string{"-1", "--a"}},
		{name: "everything after -- is one unit", base: []string{"--a", "--", "x", "--y"}, over: []string{"--", "z"}, want: []string{"--a", "--", "z"}},
		{name: "-- of base stays last", base: []string{"--a", "--", "x"}, over: []string{"--b"}, want: []string{"--a", "--b", "--", "x"}},
		{name: "value with equals inside", base: []string{`--json={"a":1}`}, over: []string{`--json={"a":2}`}, want: []string{`--json={"a":2}`}},

		// Found by fuzzing the previous MergeArgs (one value per flag,
		// positionals appended after the flags): each lost or moved a
		// positional on the second merge.
		{name: "issue 10: positional before a flag over it", base: []string{"-A"}, over: []string{"0", "-A"}, want: []string{"0", "-A"}},
		{name: "fuzz: empty positional", base: []string{"-B"}, over: []string{"", "-B"}, want: []string{"", "-B"}},
		{name: "fuzz: bare flag over a flag with a value", base: []string{"--b", "", ""}, over: []string{"--b"}, want: []string{"--b"}},
		{name: "fuzz: value then positional", base: []string{"-A", ""}, over: []string{"-A", "0", ""}, want: []string{"-A", "0", ""}},
		{name: "fuzz: empty value", base: []string{"-A", ""}, over: []string{"-A=", ""}, want: []string{"-A=", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := checkMergeArgs(t, tc.base, tc.over)
			assert.Equal(t, tc.want, emptyToNil(got))
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

// TestMergeArgsReinvoked: the pod webhook composes its own output again;
// found by fuzzing the previous MergeArgs, whose second pass moved "0".
func TestMergeArgsReinvoked(t *testing.T) {
	layers := [][]string{{"-A"}, {"0"}, {"1"}}
	var once []string
	for _, l := range layers {
		once = MergeArgs(once, l)
	}
	require.Equal(t, []string{"1", "-A"}, once)
	again := once
	for _, l := range layers {
		again = MergeArgs(again, l)
	}
	assert.Equal(t, once, again)
}

func emptyToNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
