// Command berth-test-engine is berth's stand-in for vLLM, SGLang and the
// SGLang router in the test cluster's pods. It is not an inference engine:
// see package internal/testengine and docs/test-engine.md. Run with -h.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/berthdev/berth/internal/testengine"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := testengine.Run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
