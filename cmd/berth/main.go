// Command berth is the berth CLI. Each subcommand lives in its own file and
// registers itself in an init function, so packages add commands without
// touching this dispatcher.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/berthdev/berth/internal/cli"
)

// command is one subcommand: `berth <name> [flags]`.
type command struct {
	Name    string
	Summary string
	// Run gets a context cancelled on Ctrl-C or SIGTERM and the arguments
	// after the subcommand name.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.Name]; dup {
		panic("berth: command registered twice: " + c.Name) // programming error at init, not user input
	}
	commands[c.Name] = c
}

func main() {
	// Debian's etcd 3.4 cannot serve streaming watch-lists; see internal/devenv/cluster.
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "berth: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if err := c.Run(ctx, args[1:], stdout, stderr); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		if err == cli.ErrFailed {
			return 1
		}
		fmt.Fprintf(stderr, "berth %s: %v\n", c.Name, err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: berth <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].Summary)
	}
	fmt.Fprintln(w, "\nRun `berth <command> -h` for its flags.")
}
