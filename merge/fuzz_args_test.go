package merge

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// The properties of MergeArgs, checked against the grammar of doc.go
// ("Args") written out again here, independently of args.go.

// fuzzArgv decodes a fuzz string into an argv: tokens separated by single
// spaces, so empty tokens occur; "" is no args.
func fuzzArgv(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, " ")
}

// specLine is a command line as the grammar reads it: the command prefix
// (positionals before the first flag), the flags each with the tokens it
// owns, and the "--" tail.
type specLine struct {
	prefix  []string
	flags   [][]string
	tail    []string
	hasTail bool
}

// specIsFlag: "-" followed by anything but a digit or '.' (negative
// numbers are values), except "--" itself.
func specIsFlag(tok string) bool {
	return len(tok) >= 2 && tok[0] == '-' && tok != "--" && !strings.ContainsRune("0123456789.", rune(tok[1]))
}

// specKey: a flag is named by what precedes its first '='.
func specKey(flag string) string {
	k, _, _ := strings.Cut(flag, "=")
	return k
}

func specParse(args []string) specLine {
	var l specLine
	for _, tok := range args {
		switch {
		case l.hasTail:
			l.tail = append(l.tail, tok)
		case tok == "--":
			l.hasTail, l.tail = true, []string{tok}
		case specIsFlag(tok):
			l.flags = append(l.flags, []string{tok})
		case len(l.flags) == 0:
			l.prefix = append(l.prefix, tok)
		default:
			l.flags[len(l.flags)-1] = append(l.flags[len(l.flags)-1], tok)
		}
	}
	return l
}

// occurrences lists the flags of l named key, in order.
func (l specLine) occurrences(key string) [][]string {
	var out [][]string
	for _, f := range l.flags {
		if specKey(f[0]) == key {
			out = append(out, f)
		}
	}
	return out
}

// keys lists the flag names of l in order of first occurrence.
func (l specLine) keys() []string {
	var out []string
	for _, f := range l.flags {
		if k := specKey(f[0]); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// overlayPrefix: over's i-th positional replaces base's i-th; base's
// further positionals stay.
func overlayPrefix(base, over []string) []string {
	out := slices.Clone(over)
	if len(base) > len(over) {
		out = append(out, base[len(over):]...)
	}
	return out
}

// checkMergeArgs checks every documented property of MergeArgs(base, over).
func checkMergeArgs(t *testing.T, base, over []string) []string {
	t.Helper()
	baseIn, overIn := slices.Clone(base), slices.Clone(over)
	got := MergeArgs(base, over)
	require.Equal(t, baseIn, base, "base must not be modified")
	require.Equal(t, overIn, over, "over must not be modified")
	require.Equal(t, got, MergeArgs(base, over), "deterministic")
	if len(got) > 0 && len(base) > 0 {
		got[0] += "x" // the result must not alias base
		require.Equal(t, baseIn, base, "result aliases base")
		got[0] = strings.TrimSuffix(got[0], "x")
	}
	require.Equal(t, emptyToNil(got), emptyToNil(MergeArgs(got, over)),
		"idempotent: %q over %q gave %q", over, base, got)
	if len(over) == 0 {
		require.Equal(t, emptyToNil(base), emptyToNil(got), "empty over keeps base")
	}

	g, b, o := specParse(got), specParse(base), specParse(over)
	require.Equal(t, emptyToNil(overlayPrefix(b.prefix, o.prefix)), emptyToNil(g.prefix),
		"positionals: over's keep their place, base's beyond them stay")
	for _, k := range g.keys() {
		want := b.occurrences(k)
		if len(o.occurrences(k)) > 0 {
			want = o.occurrences(k)
		}
		require.Equal(t, want, g.occurrences(k), "flag %s: over's occurrences, else base's", k)
	}
	wantKeys := b.keys()
	for _, k := range o.keys() {
		if !slices.Contains(wantKeys, k) {
			wantKeys = append(wantKeys, k)
		}
	}
	require.Equal(t, wantKeys, g.keys(), "order: base's flags, then over's new ones")
	for _, k := range o.keys() {
		first := slices.IndexFunc(g.flags, func(f []string) bool { return specKey(f[0]) == k })
		n := len(o.occurrences(k))
		for _, f := range g.flags[first : first+n] {
			require.Equal(t, k, specKey(f[0]), "over's occurrences of %s stay together", k)
		}
	}
	want, wantTail := b.tail, b.hasTail
	if o.hasTail {
		want, wantTail = o.tail, true
	}
	require.Equal(t, wantTail, g.hasTail, "--: over's, else base's")
	require.Equal(t, want, g.tail, "--: over's, else base's, verbatim")
	return got
}

// FuzzMergeArgs: MergeArgs(MergeArgs(a, b), b) == MergeArgs(a, b); the
// positionals of b keep their place and a's beyond them stay; the flags of
// b replace a's, the others stay, in a's order then b's; the "--" tail is
// b's, else a's; deterministic; inputs untouched.
func FuzzMergeArgs(f *testing.F) {
	for _, s := range [][2]string{
		{"--a --b=1 x", "--b 2 y"},
		{"--a", "x"},
		{"-- --a", "--a -1"},
		{"--lora a --lora b", "--lora c"},
		{"0 -A", "-A"},
		{"--model-path /mnt/models --port 8080", "serve --port 8000"},
		{"--a v x", "--a"},
		{"serve /mnt/models --port 8080", "serve --port 8000"},
		{"--prefill-selector a=1 b=2 --decode-selector a=2 b=2", "--prefill-selector c=3"},
		{"--s a b --t c b", ""},
		{"x --a", "--a x"},
		{"--seed -1 -", "--seed -.5 --"},
		{"--=x -= - ", " --=y"},
		{"-v 2 -abc -p8080", "-v=3 -p 80"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, base, over string) {
		checkMergeArgs(t, fuzzArgv(base), fuzzArgv(over))
	})
}

// fuzzLayer decodes a layer of a container: "!" followed by args sets a
// command ("sh") as well.
func fuzzLayer(s string) *corev1.Container {
	c := &corev1.Container{}
	if rest, ok := strings.CutPrefix(s, "!"); ok {
		c.Command = []string{"sh"}
		s = rest
	}
	c.Args = fuzzArgv(s)
	return c
}

// FuzzMergeArgsLayers composes an incoming pod's args with the runtime's,
// the accelerator's and the user's, as ComposePod does, and checks that
// re-composing its own output changes nothing (the pod webhook is
// reinvoked), that a layer setting a command owns the command line, and
// that the command prefix is the overlay of the layers since then.
func FuzzMergeArgsLayers(f *testing.F) {
	for _, s := range [][4]string{
		{"", "--model-path /mnt/models --port 8080", "--tp 2", "serve --port 8000"},
		{"0 -A", "-A", "", "-A"},
		{"", "!--port 8080 --tp 1", "--tp 2 --x", "!-c run"},
		{"--a v x", "--a", "y", "--a"},
		{"serve /m --p 1 -- z", "--p 2", "-- w", "chat"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, pod, runtime, accel, user string) {
		layers := []*corev1.Container{fuzzLayer(runtime), fuzzLayer(accel), fuzzLayer(user)}
		c := fuzzLayer(pod)
		for _, l := range layers {
			mergeContainer(c, l, true)
		}
		once := c.DeepCopy()
		for _, l := range layers {
			mergeContainer(c, l, true)
		}
		require.Equal(t, emptyToNil(once.Args), emptyToNil(c.Args), "re-composing changed the args")
		require.Equal(t, once.Command, c.Command)

		// The layers since the last one that sets a command (the incoming
		// pod when none does) merge by flag; the others are not applied.
		from, args := 0, fuzzLayer(pod).Args
		for i, l := range layers {
			if len(l.Command) > 0 {
				from, args = i+1, l.Args
			}
		}
		prefix := specParse(args).prefix
		for _, l := range layers[from:] {
			args = checkMergeArgs(t, args, l.Args)
			prefix = overlayPrefix(prefix, specParse(l.Args).prefix)
		}
		require.Equal(t, emptyToNil(args), emptyToNil(once.Args))
		require.Equal(t, emptyToNil(prefix), emptyToNil(specParse(once.Args).prefix))
	})
}
