// Command berth-pause is the sandbox ("pause") process of the local real
// node's pods: it holds the pod's namespaces, reaps the zombies of a pod
// that shares its process namespace (it is then PID 1), and exits 0 on
// SIGINT or SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(make(chan os.Signal, 8)))
}

// run waits for SIGINT or SIGTERM, reaping children on SIGCHLD.
func run(sigs chan os.Signal) int {
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		return 0
	}
	return 0
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
