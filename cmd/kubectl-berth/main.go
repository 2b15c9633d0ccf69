// Command kubectl-berth is berth's kubectl plugin: with it on PATH,
// `kubectl berth explain|render|lint|repin ...` runs the same commands as
// `berth explain|render|lint|repin ...` (package internal/cli), reading the
// kubeconfig kubectl uses.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/berthdev/berth/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := cli.Commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range cmds {
		if c.Name != args[0] {
			continue
		}
		err := c.Run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, cli.ErrFailed):
			return 1
		}
		fmt.Fprintf(stderr, "kubectl berth %s: %v\n", c.Name, err)
		return 1
	}
	fmt.Fprintf(stderr, "kubectl berth: unknown command %q\n\n", args[0])
	usage(stderr, cmds)
	return 2
}

func usage(w io.Writer, cmds []cli.Command) {
	fmt.Fprintln(w, "usage: kubectl berth <command> [flags]\n\ncommands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-8s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintln(w, "\nRun `kubectl berth <command> -h` for its flags and examples.")
}
