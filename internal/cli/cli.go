// Package cli holds the commands `berth explain`, `berth render`,
// `berth lint` and `berth repin`, shared by the berth CLI (cmd/berth) and
// the kubectl plugin (cmd/kubectl-berth). The first three answer from files
// (offline) or from a cluster (online, read-only lists) with the webhook's
// own handlers (webhook/handlers, offline.go): there is no second
// implementation of a rule, so what they print is what admission would
// say. repin is the one that writes: a merge patch of annotation
// ome.io/repin, the user's request for a new decision, which the webhook
// then makes.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string
	// Run gets the arguments after the subcommand's name. It returns
	// flag.ErrHelp after printing the help for -h.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// Commands are explain, render, lint and repin.
func Commands() []Command {
	return []Command{explainCommand(), renderCommand(), lintCommand(), repinCommand()}
}

// ErrFailed is returned when a command printed its failures itself (lint
// problems, a denied service): the caller exits non-zero and adds nothing.
var ErrFailed = errors.New("failed")

// multi is a repeatable flag; each value may hold comma-separated items.
type multi []string

func (m *multi) String() string { return strings.Join(*m, ",") }

func (m *multi) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*m = append(*m, s)
		}
	}
	return nil
}

// parse parses flags placed anywhere among the positional arguments
// (`berth explain isvc/x -n team`), and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// usageFunc prints a command's help: what it does and examples, then its
// flags.
func usageFunc(fs *flag.FlagSet, w io.Writer, text string) func() {
	return func() {
		fmt.Fprint(w, strings.TrimLeft(text, "\n"))
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}
