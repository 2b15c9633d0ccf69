// Command berth-admission-load measures what berth's pod webhook adds to a
// pod create through the real API server. It starts the local control
// plane (internal/devenv: etcd, kube-apiserver, scheduler,
// controller-manager, one kwok node) with berth-webhook as a supervised
// process and no reconciler, so nothing but the tool creates or deletes
// pods. Then, for each rate of -rates, in one run and in this order:
//
//   - without: pods that carry no ome.io/inferenceservice label, so the
//     webhook's objectSelector never sends them to berth (the API server's
//     own admission only);
//   - with: the pod the reconciler creates for a pinned InferenceService
//     (merge.SkeletonPod), which the API server sends to berth's pod
//     webhook, which composes it.
//
// Each phase creates pods open loop at the fixed rate for -duration, from
// -workers goroutines with no client-side rate limit; a create's latency
// runs from its scheduled time, so queueing counts. Pods name a scheduler
// that does not exist, so none is scheduled and nothing else works while
// they are created; each phase's pods are deleted before the next. The
// report gives p50, p99 and the difference (with − without) per rate, and
// the load average before and after (a shared machine's numbers vary with
// it). Pod create → Ready on a real node is not measured here.
//
//	make build && bin/berth-admission-load -rates 100,500 -duration 20s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
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
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
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
)

func main() {
	os.Setenv(cluster.WatchListEnv, "false") // Debian's etcd 3.4; see internal/devenv/cluster
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	rates := flag.String("rates", "100,500", "comma-separated pod creates per second")
	duration := flag.Duration("duration", 20*time.Second, "how long each phase creates pods")
	workers := flag.Int("workers", 64, "concurrent creates in flight at most")
	keep := flag.Bool("keep", false, "keep the run folder (component logs) after exit")
	flag.Parse()
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
	if err := run(ctx, rs, *duration, *workers, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "berth-admission-load:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, rates []int, duration time.Duration, workers int, keep bool) error {
	bin, err := devenv.FindComponent("berth-webhook")
	if err != nil {
		return err
	}
	progress("starting the local control plane with %s", bin)
	env, err := devenv.Up(ctx, devenv.Options{
		Components: []devenv.Component{devenv.Webhook(bin)},
		Fleet: &fleet.Fleet{Zones: []string{"us-west-2a"}, Pools: []fleet.Pool{{
			Name: "load", Count: 1, Allocatable: map[string]string{"cpu": "64", "memory": "256Gi", "pods": "110"},
		}}},
		KeepRunDir: keep, Log: os.Stderr,
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
	svc, err := fixtures(ctx, env, kube)
	if err != nil {
		return err
	}
	fmt.Printf("load average before: %s\n", loadavg())
	fmt.Printf("%6s %-8s %7s %7s %10s %10s %8s\n", "rate", "path", "sent", "errors", "p50", "p99", "rps")
	for _, rate := range rates {
		var res [2]*result
		var calls webhookCalls
		for i, with := range []bool{false, true} {
			before := scrapeWebhookCalls(ctx, kube)
			if res[i], err = phase(ctx, kube, svc, rate, duration, workers, with); err != nil {
				return err
			}
			if with {
				calls = scrapeWebhookCalls(ctx, kube).minus(before)
			}
			if err := clean(ctx, kube); err != nil {
				return err
			}
		}
		for i, name := range []string{"without", "with"} {
			r := res[i]
			fmt.Printf("%6d %-8s %7d %7d %10s %10s %8.0f\n", rate, name, r.sent, r.errors, r.quantile(0.5), r.quantile(0.99), r.throughput())
		}
		fmt.Printf("%6d %-8s %7s %7s %10s %10s\n", rate, "with−w/o", "", "",
			res[1].quantile(0.5)-res[0].quantile(0.5), res[1].quantile(0.99)-res[0].quantile(0.99))
		if calls.count > 0 {
			fmt.Printf("%6d %-8s the API server's calls to berth's pod webhook: %d, mean %s\n", rate, "", int(calls.count),
				time.Duration(calls.sum/calls.count*float64(time.Second)).Round(10*time.Microsecond))
		}
		for i, r := range res {
			if r.errors > 0 {
				fmt.Printf("  %d/s %s: first error: %s\n", rate, []string{"without", "with"}[i], r.firstError)
			}
		}
	}
	fmt.Printf("load average after: %s\n", loadavg())
	return nil
}

// fixtures creates the model, the runtime, the namespace and one pinned
// InferenceService (admitted by the webhook, which pins it), and returns
// the service as stored.
func fixtures(ctx context.Context, env *devenv.Env, kube kubernetes.Interface) (*v1beta1.InferenceService, error) {
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
		return nil, err
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
			return nil, err
		}
		stored = u
	}
	var out v1beta1.InferenceService
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(stored.Object, &out); err != nil {
		return nil, err
	}
	if !pin.Pinned(&out) {
		return nil, fmt.Errorf("InferenceService %s/%s was stored without berth's pin: is the webhook serving?", namespace, serviceName)
	}
	// A pod of it through the webhook, until the webhook's cache has it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := create(ctx, kube, podFor(&out, "probe", true))
		if err == nil || time.Now().After(deadline) {
			if err != nil {
				return nil, fmt.Errorf("a pod of the pinned service: %w", err)
			}
			return &out, clean(ctx, kube)
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

type result struct {
	latencies  []time.Duration
	sent       int
	errors     int
	firstError string
	elapsed    time.Duration
}

func (r *result) quantile(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[int(q*float64(len(r.latencies)-1))].Round(10 * time.Microsecond)
}

func (r *result) throughput() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

// phase creates rate pods a second for duration, open loop (latency from
// each create's scheduled time).
func phase(ctx context.Context, kube kubernetes.Interface, svc *v1beta1.InferenceService, rate int, duration time.Duration, workers int, with bool) (*result, error) {
	path := map[bool]string{false: "without", true: "with"}[with]
	progress("%d/s %s berth's webhook for %s", rate, path, duration)
	total := int(float64(rate) * duration.Seconds())
	interval := time.Second / time.Duration(rate)
	jobs := make(chan int, total)
	scheduled := make([]time.Time, total)
	lat := make([]time.Duration, total)
	errs := make([]error, total)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				errs[i] = create(ctx, kube, podFor(svc, fmt.Sprintf("%s-%d-%d", path, rate, i), with))
				lat[i] = time.Since(scheduled[i])
			}
		}()
	}
	start := time.Now()
	for i := 0; i < total; i++ {
		scheduled[i] = start.Add(time.Duration(i) * interval)
		if d := time.Until(scheduled[i]); d > 0 {
			time.Sleep(d)
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	r := &result{sent: total, elapsed: time.Since(start)}
	for i := range lat {
		if errs[i] != nil {
			r.errors++
			if r.firstError == "" {
				r.firstError = errs[i].Error()
			}
			continue
		}
		r.latencies = append(r.latencies, lat[i])
	}
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	return r, ctx.Err()
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func ptr[T any](v T) *T { return &v }

// webhookCalls is the API server's apiserver_admission_webhook_admission_duration_seconds
// for berth's pod webhook: how many calls and their total seconds.
type webhookCalls struct{ sum, count float64 }

func (a webhookCalls) minus(b webhookCalls) webhookCalls {
	return webhookCalls{a.sum - b.sum, a.count - b.count}
}

// podWebhook names berth's pod webhook in the API server's metrics.
const podWebhook = `name="pods.mutate.ome.io"`

// scrapeWebhookCalls reads the API server's /metrics; zero when it cannot.
func scrapeWebhookCalls(ctx context.Context, kube kubernetes.Interface) webhookCalls {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return webhookCalls{}
	}
	var w webhookCalls
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.Contains(l, podWebhook) || !strings.HasPrefix(l, "apiserver_admission_webhook_admission_duration_seconds_") {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(l, "apiserver_admission_webhook_admission_duration_seconds_sum"):
			w.sum += v
		case strings.HasPrefix(l, "apiserver_admission_webhook_admission_duration_seconds_count"):
			w.count += v
		}
	}
	return w
}
