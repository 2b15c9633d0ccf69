// Command berth-admission-load measures what berth's pod webhook adds to a
// pod create through the real API server. It starts the local control
// plane (internal/devenv: etcd, kube-apiserver, scheduler,
// controller-manager, one kwok node) with berth-webhook as a supervised
// process and no reconciler, so nothing but the tool creates or deletes
// pods. Then, for each rate of -rates, in one run, it creates pods by five
// paths, in -rounds rounds that each run every path for -duration/-rounds,
// each round starting one path later than the one before:
//
//   - without: pods that carry no ome.io/inferenceservice label, so the
//     webhook's objectSelector never sends them to berth (the API server's
//     own admission only);
//   - composed: the pod as berth's webhook composed it (read back from a
//     probe create), without the label, so it skips the webhook: the
//     API server's cost of the larger pod alone;
//   - noop: the without pod, labelled for a no-op mutating webhook this
//     tool runs as a child process (berth-webhook's server and
//     AdmissionReview codec, answering "allowed" without looking): the API
//     server's cost of calling any webhook;
//   - replay: the without pod, labelled for a second webhook of that child
//     process that answers every pod with one fixed patch making it the
//     composed pod, in the shape of berth's patch, without reading the
//     request: the API server's cost of applying berth's answer, whoever
//     computes it;
//   - with: the pod the reconciler creates for a pinned InferenceService
//     (merge.SkeletonPod), which the API server sends to berth's pod
//     webhook, which composes it.
//
// Each phase creates pods open loop at the fixed rate, from -workers
// goroutines with no client-side rate limit; a create's latency
// runs from its scheduled time, so queueing counts. Pods name a scheduler
// that does not exist, so none is scheduled and nothing else works while
// they are created; each phase's pods are deleted before the next. The
// report pools each path's rounds and gives p50, p99 and the differences
// per rate (with − without: all
// berth adds; with − composed: the webhook call alone; noop − without: any
// webhook's call; with − noop: berth beyond any webhook; replay − noop: the
// API server's price of applying berth's patch; with − replay: berth's
// computing it), the API server's
// mean call to each webhook (its
// apiserver_admission_webhook_admission_duration_seconds) next to the
// webhook's own mean time in its handler (berth_admission_duration_seconds
// of mutate-pods, from the decoded request to the decision: the rest of
// the call is the API server's encoding and patching and the HTTPS round
// trip), and the load average before and after (a shared machine's
// numbers vary with it), and the stalls one spinning thread sees in 5 s
// before and after (loadrun.MeasureStalls: the floor under any p99
// measured on the machine). Pod create → Ready on a real node is not
// measured here. With -apiserver-profiles the local API server serves
// /debug/pprof, and the tool writes its CPU profile of each rate and path,
// pooled over the rounds, for `go tool pprof -diff_base`.
//
// -paths measures only the paths named. With -interleave the paths do not
// run one after another: each round is one stream of the rate's creates a
// second in all, in which the paths take turns request by request
// (loadrun.Interleaved), so each path is sent rate/N a second and a stall
// of the machine, which decides a p99 here, falls on every path alike.
// CPU per create is then the whole stream's. -paths without,with -rates
// 200 -interleave sends each path 100 creates a second.
//
//	make build && bin/berth-admission-load -rates 100,500 -duration 40s -rounds 4
//	make build && bin/berth-admission-load -interleave -paths without,with -rates 200 -duration 80s
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	berthscheme "github.com/berthdev/berth/api/client/clientset/versioned/scheme"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/fleet"
	"github.com/berthdev/berth/internal/loadrun"
	"github.com/berthdev/berth/internal/loadwebhook"
	"github.com/berthdev/berth/internal/procstat"
	"github.com/berthdev/berth/internal/promtext"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/webhook/server"
)

const (
	namespace   = "admission-load"
	serviceName = "svc"
	modelName   = "admission-load-model"
	runtimeName = "admission-load-rt"
	engineImage = "registry.berth.dev/load/engine:v1"
	loadLabel   = "berth.dev/admission-load"
	fieldOwner  = "berth-admission-load"
	noScheduler = "berth-admission-load-none"
	maxRate     = 2000
	// stallSpin is how long the machine's stalls are measured before and
	// after the run (loadrun.MeasureStalls): the floor under its p99s.
	stallSpin = 5 * time.Second
)

func main() {
	os.Setenv(cluster.WatchListEnv, "false") // Debian's etcd 3.4; see internal/devenv/cluster
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	rates := flag.String("rates", "100,500", "comma-separated pod creates per second")
	duration := flag.Duration("duration", 20*time.Second, "how long each path creates pods in all, per rate")
	rounds := flag.Int("rounds", 4, "rounds each rate's duration is split into; each round runs every path once, starting one path later than the round before")
	workers := flag.Int("workers", 64, "concurrent creates in flight at most")
	keep := flag.Bool("keep", false, "keep the run folder (component logs) after exit")
	profiles := flag.String("apiserver-profiles", "", "write the API server's CPU profile of each rate and path, pooled over the rounds, into this folder (the local API server then serves /debug/pprof)")
	serveRefsDir := flag.String("serve-references", "", "internal: serve the reference webhooks (no-op and replay) with the certificate and patch in this directory")
	pathList := flag.String("paths", strings.Join(pathNames, ","), "comma-separated paths to measure, in the order of -rounds' first round")
	interleave := flag.Bool("interleave", false, "the paths take turns in one stream of each rate's creates a second in all (each path rate/N a second), request by request, instead of running one after another; -duration is then the stream's length per rate")
	flag.Parse()
	if *serveRefsDir != "" {
		if err := serveReferences(*serveRefsDir); err != nil {
			fmt.Fprintln(os.Stderr, "berth-admission-load: reference webhooks:", err)
			os.Exit(1)
		}
		return
	}
	var rs []int
	for _, f := range strings.Split(*rates, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > maxRate {
			fmt.Fprintf(os.Stderr, "berth-admission-load: -rates: %q is not a rate from 1 to %d\n", f, maxRate)
			os.Exit(2)
		}
		rs = append(rs, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *rounds < 1 || *duration/time.Duration(*rounds) < time.Second {
		fmt.Fprintf(os.Stderr, "berth-admission-load: -rounds %d: each round must run each path for 1s at least (-duration %s)\n", *rounds, *duration)
		os.Exit(2)
	}
	names, err := selectPaths(*pathList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "berth-admission-load: -paths:", err)
		os.Exit(2)
	}
	if *interleave && *profiles != "" {
		fmt.Fprintln(os.Stderr, "berth-admission-load: -apiserver-profiles profiles each path alone; it cannot split an interleaved stream")
		os.Exit(2)
	}
	opts := options{rates: rs, duration: *duration, rounds: *rounds, workers: *workers, keep: *keep,
		profiles: *profiles, paths: names, interleave: *interleave}
	if err := run(ctx, opts); err != nil {
		fmt.Fprintln(os.Stderr, "berth-admission-load:", err)
		os.Exit(1)
	}
}

// options are the run's flags, checked.
type options struct {
	rates            []int
	duration         time.Duration
	rounds, workers  int
	keep, interleave bool
	profiles         string
	paths            []string // selectPaths
}

func run(ctx context.Context, o options) error {
	bin, err := devenv.FindComponent("berth-webhook")
	if err != nil {
		return err
	}
	progress("starting the local control plane with %s", bin)
	wh := devenv.Webhook(bin)
	env, err := devenv.Up(ctx, devenv.Options{
		Components: []devenv.Component{wh},
		Fleet: &fleet.Fleet{Zones: []string{"us-west-2a"}, Pools: []fleet.Pool{{
			Name: "load", Count: 1, Allocatable: map[string]string{"cpu": "64", "memory": "256Gi", "pods": "110"},
		}}},
		KeepRunDir: o.keep, Log: os.Stderr, APIServerProfiling: o.profiles != "",
	})
	if err != nil {
		return err
	}
	defer env.Stop()
	cfg := env.Cluster.RESTConfig()
	cfg.QPS, cfg.Burst, cfg.UserAgent = -1, 0, fieldOwner // no client-side limit: the server is measured
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	svc, stored, err := fixtures(ctx, env, kube)
	if err != nil {
		return err
	}
	refs, err := startReferences(ctx, kube, filepath.Join(env.Cluster.RunDir, "reference-webhooks"), stored)
	if err != nil {
		return err
	}
	defer refs.Stop()
	paths := pick([]podPath{
		{"without", func(name string) *corev1.Pod { return podFor(svc, name, false) }, ""},
		{"composed", func(name string) *corev1.Pod { return composedPod(stored, name) }, ""},
		{"noop", func(name string) *corev1.Pod {
			pod := podFor(svc, name, false)
			pod.Labels[noopLabel] = "true"
			return pod
		}, noopWebhookName},
		{"replay", func(name string) *corev1.Pod {
			pod := podFor(svc, name, false)
			pod.Labels[replayLabel] = "true"
			return pod
		}, replayWebhookName},
		{"with", func(name string) *corev1.Pod { return podFor(svc, name, true) }, podWebhook},
	}, o.paths)
	fmt.Printf("load average before: %s\n", procstat.LoadAvgString())
	fmt.Printf("stalls before: %s\n", loadrun.MeasureStalls(stallSpin, time.Millisecond, time.Now))
	fmt.Printf("%6s %-9s %7s %7s %10s %10s %8s\n", "rate", "path", "sent", "errors", "p50", "p99", "rps")
	m := measure{procs: measured(env, wh, refs), probeURL: wh.ProbeURL, prof: &profiler{dir: o.profiles, kube: kube}}
	for _, rate := range o.rates {
		res, err := measureRate(ctx, kube, m, paths, rate, o.duration, o.rounds, o.workers, o.interleave)
		if err != nil {
			return err
		}
		report(rate, paths, res)
		if err := m.prof.write(rate, paths); err != nil {
			return err
		}
	}
	fmt.Printf("load average after: %s\n", procstat.LoadAvgString())
	fmt.Printf("stalls after: %s\n", loadrun.MeasureStalls(stallSpin, time.Millisecond, time.Now))
	return nil
}

// measure is where a phase's costs are read: the processes' CPU time,
// berth-webhook's metrics and, with -apiserver-profiles, the API server's
// CPU profile.
type measure struct {
	procs    procSet
	probeURL string
	prof     *profiler
}

// measureRate runs every path at rate for duration in all, in rounds,
// each starting one path later than the round before (package loadrun:
// RoundOrder, so that no path always runs first after a cleanup either).
// A round runs each path alone for duration/rounds, one after another, or,
// interleaved, all of them taking turns in one stream of that length
// (loadrun.Interleaved). It returns each path's results pooled over its
// rounds, berth-webhook's time in its pod handler and, interleaved, the
// streams with the CPU time their paths share.
func measureRate(ctx context.Context, kube kubernetes.Interface, m measure, paths []podPath, rate int, duration time.Duration, rounds, workers int, interleave bool) (rateResult, error) {
	res := rateResult{paths: make([]*result, len(paths))}
	for round := 0; round < rounds; round++ {
		for _, turn := range turns(loadrun.RoundOrder(round, len(paths)), interleave) {
			t, err := runTurn(ctx, kube, m, pathsAt(paths, turn), rate, duration/time.Duration(rounds), workers, round)
			if err != nil {
				return res, err
			}
			for k, i := range turn {
				r := t.paths[k]
				if !interleave {
					r.cpu = t.stream.cpu // the path ran alone
				}
				res.paths[i] = res.paths[i].merge(r)
			}
			if interleave {
				res.stream = res.stream.merge(t.stream)
			}
			res.handled = res.handled.plus(t.handled)
		}
	}
	return res, nil
}

// rateResult is what one rate measured: each path's creates pooled over
// the rounds (in the order of paths), berth-webhook's time in its pod
// handler and, when the paths were interleaved, the whole stream with the
// processes' CPU time, which its paths share.
type rateResult struct {
	paths   []*result
	handled webhookCalls
	stream  *result // nil unless interleaved
}

// runTurn creates pods by paths taking turns in one stream of rate a
// second for d (one path: a phase of its own), with their costs, and
// deletes them after. Each path's result holds its creates and its
// webhook's calls; the stream holds them all and the processes' CPU time.
func runTurn(ctx context.Context, kube kubernetes.Interface, m measure, paths []podPath, rate int, d time.Duration, workers, round int) (rateResult, error) {
	t := rateResult{paths: make([]*result, len(paths))}
	before := make([]webhookCalls, len(paths))
	for k, p := range paths {
		if p.webhook != "" {
			before[k] = scrapeWebhookCalls(ctx, kube, p.webhook)
		}
	}
	berth := slices.ContainsFunc(paths, func(p podPath) bool { return p.webhook == podWebhook })
	var hBefore webhookCalls
	if berth {
		hBefore = scrapeHandler(ctx, m.probeURL)
	}
	cpu0 := m.procs.cpu()
	profiled := m.prof.during(ctx, d)
	if len(paths) == 1 {
		progress("%d/s %s for %s", rate, paths[0].name, d)
	} else {
		progress("%d/s in all, %s taking turns, for %s", rate, names(paths), d)
	}
	rs := loadrun.Interleaved(rate, d, workers, len(paths), func(i int) error {
		p := paths[i%len(paths)]
		return create(ctx, kube, p.pod(fmt.Sprintf("%s-%d-%d-%d", p.name, rate, round, i)))
	})
	if err := ctx.Err(); err != nil {
		return t, err
	}
	var all *loadrun.Result
	for _, r := range rs {
		all = all.Merge(r)
	}
	all.Elapsed = rs[0].Elapsed // the paths share it
	t.stream = &result{Result: all, cpu: m.procs.cpu().minus(cpu0)}
	if err := profiled(names(paths)); err != nil {
		return t, err
	}
	for k, p := range paths {
		t.paths[k] = &result{Result: rs[k]}
		if p.webhook != "" {
			t.paths[k].calls = scrapeWebhookCalls(ctx, kube, p.webhook).minus(before[k])
		}
	}
	if berth {
		t.handled = scrapeHandler(ctx, m.probeURL).minus(hBefore)
	}
	return t, clean(ctx, kube)
}

// fixtures creates the model, the runtime, the namespace and one pinned
// InferenceService (admitted by the webhook, which pins it), and returns
// the service as stored.
func fixtures(ctx context.Context, env *devenv.Env, kube kubernetes.Interface) (*v1beta1.InferenceService, *corev1.Pod, error) {
	spec := v1beta1.BaseModelSpec{
		ModelFormat:        v1beta1.ModelFormat{Name: "safetensors", Version: ptr("1.0.0")},
		ModelFramework:     &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: ptr("4.57.1")},
		ModelArchitecture:  ptr("LlamaForCausalLM"),
		ModelParameterSize: ptr("1.24B"),
	}
	rt := &v1beta1.ClusterServingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: runtimeName},
		Spec: v1beta1.ServingRuntimeSpec{
			SupportedModelFormats: []v1beta1.SupportedModelFormat{{
				ModelFormat: &spec.ModelFormat, ModelFramework: spec.ModelFramework,
				ModelArchitecture: spec.ModelArchitecture, AutoSelect: ptr(false),
			}},
			ProtocolVersions: []v1beta1.ProtocolVersion{"openAI"},
			EngineConfig: &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{
				Image: engineImage,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			}},
		},
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}
	one := int32(1)
	svc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: serviceName, Namespace: namespace},
		Spec: v1beta1.InferenceServiceSpec{
			Model:   &v1beta1.ModelRef{Name: modelName, Kind: ptr("ClusterBaseModel")},
			Runtime: &v1beta1.ServingRuntimeRef{Name: runtimeName},
			Engine:  &v1beta1.EngineSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{Replicas: &one, MaxReplicas: &one}},
		},
	}
	var stored *unstructured.Unstructured
	for _, obj := range []runtime.Object{&v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: modelName}, Spec: spec}, rt, svc} {
		u, err := apply(ctx, env, obj)
		if err != nil {
			return nil, nil, err
		}
		stored = u
	}
	var out v1beta1.InferenceService
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(stored.Object, &out); err != nil {
		return nil, nil, err
	}
	if !pin.Pinned(&out) {
		return nil, nil, fmt.Errorf("InferenceService %s/%s was stored without berth's pin: is the webhook serving?", namespace, serviceName)
	}
	// A pod of it through the webhook, until the webhook's cache has it;
	// the composed path creates it as stored.
	deadline := time.Now().Add(30 * time.Second)
	for {
		pod, err := kube.CoreV1().Pods(namespace).Create(ctx, podFor(&out, "probe", true), metav1.CreateOptions{FieldManager: fieldOwner})
		if err == nil || time.Now().After(deadline) {
			if err != nil {
				return nil, nil, fmt.Errorf("a pod of the pinned service: %w", err)
			}
			return &out, pod, clean(ctx, kube)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// apply server-side-applies obj (what kubectl apply --server-side sends),
// retrying denials and an unreachable webhook for 30 s: right after the
// runtime is created the webhook's cache may lag.
func apply(ctx context.Context, env *devenv.Env, obj runtime.Object) (*unstructured.Unstructured, error) {
	gvks, _, err := berthscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	u := install.Object{Source: fieldOwner, Unstructured: &unstructured.Unstructured{Object: m}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := env.Applier.Apply(ctx, u)
		transient := err != nil && (strings.Contains(err.Error(), "denied") || strings.Contains(err.Error(), "failed calling webhook"))
		if !transient || time.Now().After(deadline) {
			return out, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// podFor is the pod of one create: the reconciler's skeleton of svc's
// engine group 0 (with), or the same pod without the label that sends it
// to berth and with the image berth would have set (without).
func podFor(svc *v1beta1.InferenceService, name string, with bool) *corev1.Pod {
	pod := merge.SkeletonPod(svc, v1beta1.ComponentEngine, merge.GroupIdentity{})
	pod.Name = name
	pod.OwnerReferences = nil // the pods outlive nothing; no garbage collection
	pod.Labels[loadLabel] = "pod"
	pod.Spec.SchedulerName = noScheduler
	if !with {
		delete(pod.Labels, v1beta1.LabelInferenceService)
		pod.Spec.Containers[0].Image = engineImage
	}
	return pod
}

// composedPod is the pod the webhook composed (stored) under a new name,
// as a client would send it: without what the API server sets (identity,
// status, the service account token volume its admission adds again),
// and without the label that sends a pod to berth's webhook.
func composedPod(stored *corev1.Pod, name string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: stored.Namespace,
		Labels: maps.Clone(stored.Labels), Annotations: maps.Clone(stored.Annotations)}, Spec: *stored.Spec.DeepCopy()}
	delete(pod.Labels, v1beta1.LabelInferenceService)
	token := func(n string) bool { return strings.HasPrefix(n, "kube-api-access-") }
	pod.Spec.Volumes = slices.DeleteFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return token(v.Name) })
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = slices.DeleteFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return token(m.Name) })
		}
	}
	pod.Spec.NodeName = ""
	return pod
}

func create(ctx context.Context, kube kubernetes.Interface, pod *corev1.Pod) error {
	_, err := kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: fieldOwner})
	return err
}

// clean deletes the tool's pods and waits until none is left.
func clean(ctx context.Context, kube kubernetes.Interface) error {
	sel := metav1.ListOptions{LabelSelector: loadLabel + "=pod"}
	zero := int64(0)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		// Thousands of pods can outlast one request's timeout: delete
		// again until none is left.
		err := kube.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel)
		if err != nil {
			progress("deleting the pods: %v (retrying)", err)
		}
		l, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.LabelSelector, Limit: 1})
		if err != nil {
			return err
		}
		if len(l.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pods of %s still there 5m after their deletion", namespace)
		}
		time.Sleep(time.Second)
	}
}

// result is one path's creates with what they cost.
type result struct {
	*loadrun.Result
	cpu   cpuTimes     // CPU seconds of each measured process (procSet) during the phase
	calls webhookCalls // the API server's calls to the path's webhook during the phase
}

// merge is r and o pooled (r may be nil): latencies, counts, times, CPU
// and webhook calls.
func (r *result) merge(o *result) *result {
	if r == nil {
		return &result{Result: (*loadrun.Result)(nil).Merge(o.Result), cpu: o.cpu, calls: o.calls}
	}
	return &result{Result: r.Result.Merge(o.Result), cpu: r.cpu.plus(o.cpu), calls: r.calls.plus(o.calls)}
}

// rounded is d rounded to 10 µs, for printing.
func rounded(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }

// podPath is one kind of create: its name in the report, its pods and
// the mutating webhook the API server calls for them ("" for none).
type podPath struct {
	name    string
	pod     func(name string) *corev1.Pod
	webhook string
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func ptr[T any](v T) *T { return &v }

// webhookCalls is a histogram of calls (the API server's to a webhook,
// berth-webhook's in its pod handler): how many and their total seconds;
// NaN in both when it could not be read, which every sum and difference
// keeps.
type webhookCalls struct{ sum, count float64 }

// unread is the webhookCalls of a scrape that failed.
var unread = webhookCalls{math.NaN(), math.NaN()}

// known tells whether the calls were read (every scrape they came from
// succeeded).
func (a webhookCalls) known() bool { return !math.IsNaN(a.count) }

func (a webhookCalls) minus(b webhookCalls) webhookCalls {
	return webhookCalls{a.sum - b.sum, a.count - b.count}
}

func (a webhookCalls) plus(b webhookCalls) webhookCalls {
	return webhookCalls{a.sum + b.sum, a.count + b.count}
}

// podWebhook names berth's pod webhook in the API server's metrics.
const podWebhook = server.WebhookMutatePods

// scrapeWebhookCalls reads the API server's /metrics for the webhook
// named name; unread when it cannot.
func scrapeWebhookCalls(ctx context.Context, kube kubernetes.Interface, name string) webhookCalls {
	return callsOf(promtext.APIServerWebhookCalls(ctx, kube.CoreV1().RESTClient(), name))
}

// report prints one rate's rows: each path, the differences, the
// processes' CPU per create, the API server's mean call to each webhook
// and berth-webhook's mean time in its pod handler.
func report(rate int, paths []podPath, res rateResult) {
	by := map[string]*result{}
	for i, p := range paths {
		r := res.paths[i]
		by[p.name] = r
		fmt.Printf("%6d %-9s %7d %7d %10s %10s %8.0f\n", rate, p.name, r.Sent, r.Errors, rounded(r.Quantile(0.5)), rounded(r.Quantile(0.99)), r.Throughput())
	}
	for _, d := range differences {
		a, b := by[d.a], by[d.b]
		if a == nil || b == nil {
			continue // a path not measured
		}
		fmt.Printf("%6d %-9s %7s %7s %10s %10s\n", rate, d.name, "", "",
			rounded(a.Quantile(0.5))-rounded(b.Quantile(0.5)), rounded(a.Quantile(0.99))-rounded(b.Quantile(0.99)))
	}
	if res.stream != nil {
		fmt.Printf("%6d %-9s CPU per create:%s\n", rate, "all", perCreate(res.stream))
	} else {
		for i, p := range paths {
			fmt.Printf("%6d %-9s CPU per create:%s\n", rate, p.name, perCreate(res.paths[i]))
		}
	}
	for i, p := range paths {
		switch c := res.paths[i].calls; {
		case !c.known():
			fmt.Printf("%6d %-9s the API server's calls to %s: unknown (its /metrics could not be read)\n", rate, p.name, p.webhook)
		case c.count > 0:
			fmt.Printf("%6d %-9s the API server's calls to %s: %d, mean %s\n", rate, p.name, p.webhook, int(c.count), c.mean())
		}
	}
	switch handled := res.handled; {
	case !handled.known():
		fmt.Printf("%6d %-9s berth-webhook's time in its pod handler: unknown (its /metrics could not be read)\n", rate, "")
	case handled.count > 0:
		fmt.Printf("%6d %-9s berth-webhook's time in its pod handler: %d admissions, mean %s\n", rate, "", int(handled.count), handled.mean())
	}
	for i, r := range res.paths {
		if r.Errors > 0 {
			fmt.Printf("  %d/s %s: first error: %s\n", rate, paths[i].name, r.FirstError)
		}
	}
}

// differences are the report's rows of one path's p50 and p99 less
// another's.
var differences = []struct{ name, a, b string }{
	{"with−w/o", "with", "without"},   // all berth adds
	{"with−comp", "with", "composed"}, // the webhook call alone
	{"noop−w/o", "noop", "without"},   // any webhook's call
	{"with−noop", "with", "noop"},     // berth beyond any webhook
	{"rep−noop", "replay", "noop"},    // the API server's price of berth's patch
	{"with−rep", "with", "replay"},    // berth's computing it
}

func (a webhookCalls) mean() time.Duration {
	return time.Duration(a.sum / a.count * float64(time.Second)).Round(time.Microsecond)
}

// scrapeHandler reads berth_admission_duration_seconds of the pod handler
// from the webhook's /metrics (probeURL); unread when it cannot.
func scrapeHandler(ctx context.Context, probeURL string) webhookCalls {
	f, err := promtext.Scrape(ctx, &http.Client{Timeout: 5 * time.Second}, probeURL+"/metrics")
	if err != nil {
		return unread
	}
	return callsOf(f.Histogram("berth_admission_duration_seconds", promtext.Labels{"handler": "mutate-pods"}))
}

// callsOf is a histogram read from a scrape (promtext: zero when it has
// no series yet), or unread when reading it failed: the scrape, or a
// metric that is no histogram.
func callsOf(h promtext.Histogram, err error) webhookCalls {
	if err != nil {
		return unread
	}
	return webhookCalls{sum: h.Sum, count: h.Count}
}

// procSet are the processes whose CPU time each phase measures: the API
// server, etcd, berth-webhook and the reference webhooks' process.
type procSet struct {
	names []string
	pids  []int
}

func measured(env *devenv.Env, wh *devenv.WebhookComponent, refs *loadwebhook.Child) procSet {
	var ps procSet
	for _, p := range env.Cluster.Processes() {
		if p.Name == "kube-apiserver" || p.Name == "etcd" {
			ps.names, ps.pids = append(ps.names, p.Name), append(ps.pids, p.PID())
		}
	}
	ps.names, ps.pids = append(ps.names, "berth-webhook", refsProcess), append(ps.pids, wh.Process.Process().PID(), refs.PID())
	return ps
}

// cpuTimes are CPU seconds by process, in procSet's order.
type cpuTimes struct {
	names []string
	secs  []float64
}

func (ps procSet) cpu() cpuTimes {
	out := cpuTimes{names: ps.names, secs: make([]float64, len(ps.pids))}
	for i, pid := range ps.pids {
		out.secs[i] = cpuSeconds(pid)
	}
	return out
}

func (a cpuTimes) plus(b cpuTimes) cpuTimes {
	out := cpuTimes{names: a.names, secs: make([]float64, len(a.secs))}
	for i := range a.secs {
		out.secs[i] = a.secs[i] + b.secs[i]
	}
	return out
}

func (a cpuTimes) minus(b cpuTimes) cpuTimes {
	out := cpuTimes{names: a.names, secs: make([]float64, len(a.secs))}
	for i := range a.secs {
		out.secs[i] = a.secs[i] - b.secs[i]
	}
	return out
}

// cpuSeconds is a process's utime+stime in seconds (procstat.CPUSeconds);
// NaN when it cannot be read, which every sum and difference it enters
// keeps.
func cpuSeconds(pid int) float64 {
	secs, err := procstat.CPUSeconds(pid)
	if err != nil {
		return math.NaN()
	}
	return secs
}

// perCreate is each measured process's CPU time during a phase divided by
// its creates: steadier than latency on a shared machine.
func perCreate(r *result) string {
	var b strings.Builder
	for i, secs := range r.cpu.secs {
		if math.IsNaN(secs) {
			fmt.Fprintf(&b, " %s unknown", r.cpu.names[i])
			continue
		}
		fmt.Fprintf(&b, " %s %s", r.cpu.names[i], time.Duration(secs/float64(max(r.Sent, 1))*float64(time.Second)).Round(time.Microsecond))
	}
	return b.String()
}
