// Command berth-engine-sidecar is berth's engine runtime sidecar: run next
// to an inference engine (SGLang or vLLM) in the engine's pod, it registers
// the pod as a worker with the router and keeps it registered, unregisters
// it on SIGTERM, and keeps the engine's LoRA adapters equal to a file the
// kubelet updates. See internal/sidecar and docs/engine-sidecar.md.
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/berthdev/berth/internal/sidecar"
)

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(sidecar.Main(os.Args[1:], os.Getenv, os.Stderr, sigs))
}
