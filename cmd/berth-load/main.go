// Command berth-load measures the berth pod webhook under load. It starts
// the webhook as a child process (so the webhook's RSS is its own) with a
// synthetic cache of the given size, then drives pod admissions over TLS at
// a fixed rate against a no-op handler and against the real pod handler,
// in the same run, in -rounds rounds that each send to both (the one that
// went second going first in the next: package loadrun), and reports each
// handler's p50/p99 latency over its rounds, throughput and the ratio.
// Only 127.0.0.1 is ever dialled.
//
//	go run ./cmd/berth-load -rate 1000 -duration 20s -runtimes 1000 -classes 200 -nodes 5000
//
// With -sweep it then reports, for both handlers, the throughput at
// saturation (-workers requests in flight, back to back) and the highest
// fixed rate, in steps of -sweep-step per second, whose p99 stays under
// 10 ms with no error; each step sends for -sweep-duration.
//
//	go run ./cmd/berth-load -rate 1000 -duration 10s -sweep -sweep-step 500 -sweep-duration 5s
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"runtime"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/loadrun"
	"github.com/berthdev/berth/internal/loadwebhook"
	"github.com/berthdev/berth/internal/procstat"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/webhook/server"
)

func intOrString(i int) intstr.IntOrString { return intstr.FromInt32(int32(i)) }

func main() {
	var (
		serve    = flag.Bool("serve", false, "internal: run the webhook side")
		certDir  = flag.String("cert-dir", "", "internal: certificate directory of the webhook side")
		rate     = flag.Int("rate", 1000, "admissions per second")
		duration = flag.Duration("duration", 20*time.Second, "how long each handler is sent to in all")
		rounds   = flag.Int("rounds", 4, "rounds -duration is split into; each sends to both handlers, starting with the other one than the round before")
		workers  = flag.Int("workers", 128, "concurrent in-flight requests at most")
		nRT      = flag.Int("runtimes", 1000, "cached ClusterServingRuntimes")
		nClasses = flag.Int("classes", 200, "cached AcceleratorClasses")
		nNodes   = flag.Int("nodes", 5000, "cached nodes")
		doSweep  = flag.Bool("sweep", false, "also measure saturation throughput and the highest rate with p99 under 10 ms")
		step     = flag.Int("sweep-step", 500, "rate step of the sweep, per second")
		sweepDur = flag.Duration("sweep-duration", 5*time.Second, "how long each sweep step sends")
		gogc     = flag.String("webhook-gogc", "", "GOGC of the webhook side only (empty: berth-webhook's default, app.DefaultGOGC, unless GOGC is in the environment); the driver keeps its own")
	)
	flag.Parse()
	var err error
	if *serve {
		err = serveSide(*certDir, *nRT, *nClasses, *nNodes)
	} else {
		err = drive(*rate, *duration, *rounds, *workers, *nRT, *nClasses, *nNodes, *gogc, sweepConfig{*doSweep, *step, *sweepDur})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "berth-load:", err)
		os.Exit(1)
	}
}

// serveSide builds the synthetic cache and serves /mutate/pods and /noop
// (internal/loadwebhook).
func serveSide(certDir string, nRT, nClasses, nNodes int) error {
	w, err := buildWorld(nRT, nClasses, nNodes)
	if err != nil {
		return err
	}
	runtime.GC()
	return loadwebhook.Serve(certDir, []server.Route{
		{Path: server.PathMutatePods, Name: "mutate-pods", Decide: w.podHandler().Mutate},
		{Path: "/noop", Name: "noop", Decide: loadwebhook.Allow},
	})
}

// sweepConfig says whether and how drive sweeps after the fixed rate.
type sweepConfig struct {
	on       bool
	step     int
	duration time.Duration
}

// podPath is the pod handler's route.
const podPath = server.PathMutatePods

func drive(rate int, duration time.Duration, rounds, workers, nRT, nClasses, nNodes int, gogc string, sw sweepConfig) error {
	if rate < 1 || rounds < 1 || duration/time.Duration(rounds) < time.Second {
		return fmt.Errorf("-rate %d, -rounds %d, -duration %s: want a rate of 1/s or more and each round to send for 1s at least", rate, rounds, duration)
	}
	if sw.on && (sw.step < 1 || sw.duration < time.Second) {
		return fmt.Errorf("-sweep-step %d, -sweep-duration %s: want a step of 1/s or more and steps of 1s at least", sw.step, sw.duration)
	}
	dir, err := os.MkdirTemp("", "berth-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var env []string
	if gogc != "" {
		env = []string{"GOGC=" + gogc}
	}
	start := time.Now()
	side, err := loadwebhook.Start(dir, []string{"-serve", "-cert-dir", dir, "-runtimes", fmt.Sprint(nRT), "-classes", fmt.Sprint(nClasses), "-nodes", fmt.Sprint(nNodes)}, env)
	if err != nil {
		return err
	}
	defer side.Stop()
	addr := side.Addr
	fmt.Printf("webhook pid %d on %s, cache built and serving after %s (%d runtimes, %d classes, %d nodes)\n",
		side.PID(), addr, time.Since(start).Round(time.Millisecond), nRT, nClasses, nNodes)
	fmt.Printf("webhook RSS idle: %s\n", rss(side.PID()))

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(side.CA)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers,
	}}
	body, err := podReview()
	if err != nil {
		return err
	}
	// Warm up at the full rate, so that every phase finds the same pool
	// of open TLS connections (handshakes would otherwise land in the
	// first).
	phase(client, "https://"+addr+podPath, body, rate, 3*time.Second, workers)
	handlers := []struct{ name, path string }{{"no-op", "/noop"}, {"mutate-pods", podPath}}
	res := make([]*loadrun.Result, len(handlers))
	for round := 0; round < rounds; round++ {
		for _, i := range loadrun.RoundOrder(round, len(handlers)) {
			res[i] = res[i].Merge(phase(client, "https://"+addr+handlers[i].path, body, rate, duration/time.Duration(rounds), workers))
		}
	}
	noop, real := res[0], res[1]
	fmt.Printf("webhook RSS after load: %s\n", rss(side.PID()))
	fmt.Printf("%-10s %8s %8s %10s %10s %10s %8s\n", "handler", "sent", "errors", "p50", "p99", "max", "rps")
	for i, h := range handlers {
		r := res[i]
		fmt.Printf("%-10s %8d %8d %10s %10s %10s %8.0f\n", h.name, r.Sent, r.Errors,
			us(r.Quantile(0.50)), us(r.Quantile(0.99)), us(r.Quantile(1)), r.Throughput())
	}
	fmt.Printf("ratio mutate-pods/no-op: p50 %.2fx, p99 %.2fx\n",
		float64(real.Quantile(0.5))/float64(noop.Quantile(0.5)), float64(real.Quantile(0.99))/float64(noop.Quantile(0.99)))
	for i, h := range handlers {
		if r := res[i]; r.Errors > 0 {
			return fmt.Errorf("%s: %d admissions failed; first: %s", h.name, r.Errors, r.FirstError)
		}
	}
	if sw.on {
		if err := sweep(client, "https://"+addr, body, sw.duration, workers, sw.step); err != nil {
			return err
		}
		fmt.Printf("webhook RSS after the sweep: %s\n", rss(side.PID()))
	}
	return nil
}

// podReview is one CREATE of a skeleton pod of the synthetic service, as
// the reconciler builds it.
func podReview() ([]byte, error) {
	svc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: serviceName, Namespace: serviceNamespace}}
	raw, err := json.Marshal(merge.SkeletonPod(svc, v1beta1.ComponentEngine, merge.GroupIdentity{}))
	if err != nil {
		return nil, err
	}
	review := map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid": "load", "operation": "CREATE", "namespace": serviceNamespace,
			"kind":     map[string]any{"group": "", "version": "v1", "kind": "Pod"},
			"resource": map[string]any{"group": "", "version": "v1", "resource": "pods"},
			"object":   json.RawMessage(raw),
		},
	}
	return json.Marshal(review)
}

// us is d rounded to the microsecond, for printing.
func us(d time.Duration) time.Duration { return d.Round(time.Microsecond) }

// rss is a process's VmRSS as /proc/<pid>/status writes it ("1968 kB"):
// "unknown (why)" when the file cannot be read, "unknown" when it has no
// VmRSS (procstat.Memory).
func rss(pid int) string {
	m, err := procstat.Memory(pid)
	if _, unread := errors.AsType[*fs.PathError](err); unread {
		return "unknown (" + err.Error() + ")"
	}
	if err != nil {
		return "unknown"
	}
	return m.KB()
}
