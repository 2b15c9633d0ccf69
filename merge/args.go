package merge

import (
	"slices"
	"strings"
)

// argLine is a command line read by the grammar of the package comment
// ("Args"): the command prefix, the flags, and the "--" tail.
type argLine struct {
	// prefix: the positionals before the first flag (a subcommand, a model
	// path), matched by position.
	prefix []string
	// flags in order; one entry per occurrence.
	flags []argFlag
	// tail: "--" and everything after it, verbatim; nil when there is none.
	tail []string
}

// argFlag is one occurrence of a flag: its token ("--k", "--k=v", "-v")
// and every token after it up to the next flag or "--" (its values).
type argFlag struct {
	key    string // the token up to its first '='
	tokens []string
}

// isFlag reports whether tok starts a flag: a '-' followed by anything but
// a digit or a '.', so negative numbers ("-1", "-.5") are values and a lone
// "-" (stdin) is not a flag. "--" is the end of flags, not a flag.
func isFlag(tok string) bool {
	if len(tok) < 2 || tok[0] != '-' || tok == "--" {
		return false
	}
	c := tok[1]
	return !(c >= '0' && c <= '9' || c == '.')
}

// parseArgs reads args by the grammar. The result's slices share args'
// array; nothing is copied.
func parseArgs(args []string) argLine {
	var l argLine
	i := 0
	for i < len(args) && !isFlag(args[i]) && args[i] != "--" {
		i++
	}
	l.prefix = args[:i]
	for i < len(args) {
		if args[i] == "--" {
			l.tail = args[i:]
			break
		}
		j := i + 1
		for j < len(args) && !isFlag(args[j]) && args[j] != "--" {
			j++
		}
		key, _, _ := strings.Cut(args[i], "=")
		l.flags = append(l.flags, argFlag{key: key, tokens: args[i:j]})
		i = j
	}
	return l
}

// MergeArgs lays the args over over base, by the grammar of the package
// comment ("Args"), and returns a new slice:
//
//   - command prefix: over's i-th positional replaces base's i-th; base's
//     positionals beyond over's stay;
//   - flags: every flag over has replaces all of base's occurrences of it,
//     values included, at the place of base's first occurrence; over's
//     occurrences of a repeated flag stay together, in over's order. Flags
//     new to base follow base's, in over's order;
//   - "--": over's tail, when it has one, replaces base's; it stays last.
//
// MergeArgs(MergeArgs(a, b), b) == MergeArgs(a, b), since the pod webhook
// is reinvoked on its own output, and MergeArgs(a, nil) == a.
func MergeArgs(base, over []string) []string {
	if len(over) == 0 {
		return slices.Clone(base)
	}
	b, o := parseArgs(base), parseArgs(over)
	out := make([]string, 0, len(base)+len(over))

	out = append(out, o.prefix...)
	if len(b.prefix) > len(o.prefix) {
		out = append(out, b.prefix[len(o.prefix):]...)
	}

	overKeys := make(map[string]bool, len(o.flags))
	for _, f := range o.flags {
		overKeys[f.key] = true
	}
	emitted := make(map[string]bool, len(o.flags))
	emit := func(key string) { // all of over's occurrences of key, once
		if emitted[key] {
			return
		}
		emitted[key] = true
		for _, f := range o.flags {
			if f.key == key {
				out = append(out, f.tokens...)
			}
		}
	}
	for _, f := range b.flags {
		if overKeys[f.key] {
			emit(f.key)
		} else {
			out = append(out, f.tokens...)
		}
	}
	for _, f := range o.flags {
		emit(f.key)
	}

	if o.tail != nil {
		out = append(out, o.tail...)
	} else {
		out = append(out, b.tail...)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
