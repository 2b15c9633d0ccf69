package main

import "github.com/berthdev/berth/internal/cli"

// explain, render and lint are internal/cli's commands, shared with the
// kubectl plugin (cmd/kubectl-berth).
func init() {
	for _, c := range cli.Commands() {
		if c.Name == "explain" {
			registerCLI(c)
		}
	}
}

// registerCLI registers one of internal/cli's commands. Its ErrFailed
// (the command printed its failures) exits 1 without another message.
func registerCLI(c cli.Command) {
	register(command{Name: c.Name, Summary: c.Summary, Run: c.Run})
}
