package merge

import "strings"

// argItem is one unit of a command line: a flag with its value tokens
// ("--k=v" is one token, "--k v" two, a bare "--flag" one) or a positional.
type argItem struct {
	key    string // "--k" for flags, "\x00"+token for positionals
	tokens []string
}

// isFlag reports whether tok starts a flag. Negative numbers ("-1", "-.5")
// are values, not flags; a lone "-" (stdin) is a positional.
func isFlag(tok string) bool {
	if len(tok) < 2 || tok[0] != '-' {
		return false
	}
	c := tok[1]
	if c >= '0' && c <= '9' || c == '.' {
		return false
	}
	return tok != "--"
}

// parseArgs splits args into items. A token that follows a flag written
// without "=" and does not itself look like a flag is that flag's value,
// as in OME's MergeArgs. Everything after "--" is kept as one positional.
func parseArgs(args []string) []argItem {
	items := make([]argItem, 0, len(args))
	for i := 0; i < len(args); i++ {
		tok := args[i]
		switch {
		case tok == "--":
			items = append(items, argItem{key: "--", tokens: args[i:]})
			return items
		case isFlag(tok):
			key, _, hasValue := strings.Cut(tok, "=")
			it := argItem{key: key, tokens: []string{tok}}
			if !hasValue && i+1 < len(args) && !isFlag(args[i+1]) && args[i+1] != "--" {
				it.tokens = append(it.tokens, args[i+1])
				i++
			}
			items = append(items, it)
		default:
			items = append(items, argItem{key: "\x00" + tok, tokens: []string{tok}})
		}
	}
	return items
}

// MergeArgs merges over into base by flag and returns a new slice.
//
// Every flag over sets replaces all of base's occurrences of that flag, at
// the position of the first one; a flag repeated in over ("--lora a --lora
// b") is kept repeated. Flags and positionals new to base are appended in
// over's order, and a positional already present is not repeated, so merging
// the same layer twice changes nothing (the pod webhook is reinvoked).
// "--k=v", "--k v" and "--k" are the same flag "--k". A "--" block (what
// follows it is passed through verbatim) always stays last; over's replaces
// base's.
func MergeArgs(base, over []string) []string {
	if len(over) == 0 {
		return append([]string(nil), base...)
	}
	overItems := parseArgs(over)
	byKey := make(map[string][]argItem, len(overItems))
	for _, it := range overItems {
		byKey[it.key] = append(byKey[it.key], it)
	}
	out := make([]string, 0, len(base)+len(over))
	done := make(map[string]bool, len(overItems))
	// A positional counts as present when any base token equals it: after a
	// bare flag ("--a" then "x") a re-parse reads it as the flag's value, and
	// it must not be appended again on the next merge.
	for _, tok := range base {
		if _, positional := byKey["\x00"+tok]; positional {
			done["\x00"+tok] = true
		}
	}
	var tail []string
	for _, it := range parseArgs(base) {
		if it.key == "--" {
			tail = it.tokens
			continue
		}
		repl, overridden := byKey[it.key]
		if !overridden || strings.HasPrefix(it.key, "\x00") {
			// Base positionals stay where they are, even when over repeats them.
			out = append(out, it.tokens...)
			continue
		}
		if done[it.key] {
			continue
		}
		done[it.key] = true
		for _, r := range repl {
			out = append(out, r.tokens...)
		}
	}
	for _, it := range overItems {
		if it.key == "--" {
			tail = it.tokens
			continue
		}
		if done[it.key] {
			continue
		}
		// Append every item of a key the first time the key is seen, then
		// mark it done so repeated flags are emitted once, in order.
		done[it.key] = true
		for _, r := range byKey[it.key] {
			out = append(out, r.tokens...)
		}
	}
	return append(out, tail...)
}
