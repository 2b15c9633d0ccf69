package e2e

// Shared helpers of the lifecycle tests (reconcile_test.go, rollout_test.go,
// recovery_test.go, scale_test.go): Kueue-style builders for test-only
// runtimes and services, waits that explain themselves on timeout, and a
// pod watch that records every event from the list's resourceVersion on.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/devenv/process"
	"github.com/berthdev/berth/internal/testing/e2eutil"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

// Deadlines of the lifecycle tests: generous, since the machine has two
// busy cores; nothing here asserts how long anything took.
const (
	settleTimeout = 3 * time.Minute
	apiTimeout    = 30 * time.Second
)

// The model every test-only runtime serves, created in each test's
// namespace.
const (
	tinyModel     = "tiny-llama"
	e2eImage      = "registry.berth.dev/e2e/engine:v1"
	e2eRouterImg  = "registry.berth.dev/e2e/router:v1"
	failAnnot     = "kwok.berth.dev/fail"
	reconcilerCmp = "berth-reconciler"
)

func tinyModelObj(ns string) *v1beta1.BaseModel {
	return wrappers.MakeBaseModel(ns, tinyModel).Format("safetensors", "1.0.0").Framework("transformers", "4.57.1").
		Architecture("LlamaForCausalLM").Size("1.24B").Obj()
}

// lifecycleNamespace is e2eutil.Namespace plus the tiny model, the out-of-box
// classes and runtimes, and a dump of the namespace (services, pods,
// events, the reconciler's log lines about it) when the test fails.
func lifecycleNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ensureLifecycleFixtures(t)
	ns := e2eutil.Namespace(t, env.Kube, prefix)
	// Registered after e2eutil.Namespace's cleanup, so it runs before the
	// namespace is deleted; createRuntime runs it before it deletes a
	// runtime, so the dump shows the state of the failure.
	var once sync.Once
	dump := func() {
		once.Do(func() {
			if t.Failed() {
				t.Logf("state of namespace %s at the failure:\n%s", ns, describeNamespace(ns))
			}
		})
	}
	dumps.Store(t, dump)
	t.Cleanup(func() { dumps.Delete(t); dump() })
	_, err := berthClient(t).OmeV1beta1().BaseModels(ns).Create(ctxT(t, apiTimeout), tinyModelObj(ns), metav1.CreateOptions{})
	require.NoError(t, err)
	return ns
}

var (
	fixturesOnce sync.Once
	fixturesErr  error
)

// ensureLifecycleFixtures applies, once per suite, what the lifecycle
// tests use from deploy/: every AcceleratorClass and the one out-of-box
// runtime they name (srt-llama-3-2-1b-instruct-pd-rt). Re-applying all
// runtimes from every parallel test (ensureOutOfBox) floods the runtime
// webhook, which lists runtimes from the API server on each admission.
func ensureLifecycleFixtures(t *testing.T) {
	t.Helper()
	fixturesOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		for _, path := range []string{env.Path("deploy", "accelerators"), env.Path("deploy", "runtimes", "srt-llama-3-2-1b-instruct-pd-rt.yaml")} {
			objs, err := install.ReadObjects(path)
			if err == nil {
				err = retryWebhook(ctx, func() error { return env.Applier.ApplyAll(ctx, objs) })
			}
			if err != nil {
				fixturesErr = fmt.Errorf("apply %s: %w", path, err)
				return
			}
		}
	})
	require.NoError(t, fixturesErr)
}

// retryWebhook retries fn while the apiserver fails to reach a webhook in
// time (it fails closed), as on a machine whose cores other builds share;
// any other error, or the context's end, returns at once.
func retryWebhook(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// dumps holds, per test, the failure dump of its namespace.
var dumps sync.Map // *testing.T -> func()

// dumpIfFailed runs the failure dump of t's namespace (or of its parent
// test's) now, once.
func dumpIfFailed(t *testing.T) {
	if d, ok := dumps.Load(t); ok {
		d.(func())()
	}
}

// uniqueName is prefix-<5 random characters>, for cluster-scoped test
// runtimes.
func uniqueName(prefix string) string { return prefix + "-" + rand.String(5) }

// ---------------------------------------------------------------------------
// Runtime builder

// RuntimeWrapper builds a test-only ClusterServingRuntime: it serves the
// tiny model, is never auto-selected (services name it), and its engine
// runs e2eImage without GPUs unless told otherwise.
type RuntimeWrapper struct {
	name      string
	image     string
	gpus      int64
	workers   *int32
	decoder   bool
	router    bool
	engineExt v1beta1.ComponentExtensionSpec
}

// MakeRuntime starts a runtime named name.
func MakeRuntime(name string) *RuntimeWrapper { return &RuntimeWrapper{name: name, image: e2eImage} }

// Image of the engine (and decoder) containers.
func (w *RuntimeWrapper) Image(image string) *RuntimeWrapper { w.image = image; return w }

// GPUs per engine (and decoder) pod, as nvidia.com/gpu.
func (w *RuntimeWrapper) GPUs(n int64) *RuntimeWrapper { w.gpus = n; return w }

// MultiNode makes engine groups a leader and workers workers.
func (w *RuntimeWrapper) MultiNode(workers int32) *RuntimeWrapper { w.workers = &workers; return w }

// PD adds a decoder and a router (prefill/decode disaggregation).
func (w *RuntimeWrapper) PD() *RuntimeWrapper { w.decoder, w.router = true, true; return w }

// EngineReplicas sets engineConfig's min and max replicas.
func (w *RuntimeWrapper) EngineReplicas(minR, maxR int32) *RuntimeWrapper {
	w.engineExt.MinReplicas, w.engineExt.MaxReplicas = &minR, &maxR
	return w
}

func (w *RuntimeWrapper) runner(image string, gpus int64) *v1beta1.RunnerSpec {
	r := &v1beta1.RunnerSpec{
		Image: image,
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
	}
	if gpus > 0 {
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		r.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/gpu": q},
			Limits:   corev1.ResourceList{"nvidia.com/gpu": q},
		}
	}
	return r
}

// Obj returns the runtime.
func (w *RuntimeWrapper) Obj() *v1beta1.ClusterServingRuntime {
	rt := &v1beta1.ClusterServingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: w.name, Labels: map[string]string{"berth.dev/e2e": "lifecycle"}},
		Spec: v1beta1.ServingRuntimeSpec{
			SupportedModelFormats: []v1beta1.SupportedModelFormat{{
				ModelFormat:       &v1beta1.ModelFormat{Name: "safetensors", Version: ptr("1.0.0")},
				ModelFramework:    &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: ptr("4.57.1")},
				ModelArchitecture: ptr("LlamaForCausalLM"),
				AutoSelect:        ptr(false),
			}},
			ProtocolVersions: []v1beta1.ProtocolVersion{"openAI"},
			EngineConfig:     &v1beta1.EngineSpec{ComponentExtensionSpec: w.engineExt},
		},
	}
	if w.workers != nil {
		rt.Spec.EngineConfig.Leader = &v1beta1.LeaderSpec{Runner: w.runner(w.image, w.gpus)}
		rt.Spec.EngineConfig.Worker = &v1beta1.WorkerSpec{Size: w.workers, Runner: w.runner(w.image, w.gpus)}
	} else {
		rt.Spec.EngineConfig.Runner = w.runner(w.image, w.gpus)
	}
	if w.decoder {
		rt.Spec.DecoderConfig = &v1beta1.DecoderSpec{Runner: w.runner(w.image, w.gpus)}
	}
	if w.router {
		rt.Spec.RouterConfig = &v1beta1.RouterSpec{Runner: w.runner(e2eRouterImg, 0)}
	}
	return rt
}

// autoRuntime is a namespaced, auto-selectable runtime of the tiny model
// running image, with priority.
func autoRuntime(ns, name, image string, priority int32) *v1beta1.ServingRuntime {
	spec := MakeRuntime(name).Image(image).Obj().Spec
	spec.SupportedModelFormats[0].AutoSelect = ptr(true)
	spec.SupportedModelFormats[0].Priority = ptr(priority)
	return &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
}

// createRuntime creates a cluster-scoped runtime and deletes it when the
// test ends.
func createRuntime(t *testing.T, rt *v1beta1.ClusterServingRuntime) *v1beta1.ClusterServingRuntime {
	t.Helper()
	bc := berthClient(t)
	ctx := ctxT(t, time.Minute)
	var got *v1beta1.ClusterServingRuntime
	err := retryWebhook(ctx, func() (err error) {
		got, err = bc.OmeV1beta1().ClusterServingRuntimes().Create(ctx, rt.DeepCopy(), metav1.CreateOptions{})
		return err
	})
	require.NoError(t, err, "create ClusterServingRuntime %s", rt.Name)
	t.Cleanup(func() {
		dumpIfFailed(t)
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		_ = bc.OmeV1beta1().ClusterServingRuntimes().Delete(ctx, rt.Name, metav1.DeleteOptions{})
	})
	return got
}

// updateRuntime applies mutate to the current runtime, retrying on
// conflicts.
func updateRuntime(t *testing.T, name string, mutate func(*v1beta1.ClusterServingRuntime)) {
	t.Helper()
	bc := berthClient(t)
	ctx := ctxT(t, time.Minute)
	err := retryWebhook(ctx, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			rt, err := bc.OmeV1beta1().ClusterServingRuntimes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mutate(rt)
			_, err = bc.OmeV1beta1().ClusterServingRuntimes().Update(ctx, rt, metav1.UpdateOptions{})
			return err
		})
	})
	require.NoError(t, err, "update ClusterServingRuntime %s", name)
}

// setRuntimeImage changes the image of every runner of the runtime.
func setRuntimeImage(image string) func(*v1beta1.ClusterServingRuntime) {
	return func(rt *v1beta1.ClusterServingRuntime) {
		e := rt.Spec.EngineConfig
		for _, r := range []*v1beta1.RunnerSpec{e.Runner, leaderRunner(e.Leader), workerRunner(e.Worker)} {
			if r != nil {
				r.Image = image
			}
		}
		if d := rt.Spec.DecoderConfig; d != nil && d.Runner != nil {
			d.Runner.Image = image
		}
	}
}

func leaderRunner(l *v1beta1.LeaderSpec) *v1beta1.RunnerSpec {
	if l == nil {
		return nil
	}
	return l.Runner
}

func workerRunner(w *v1beta1.WorkerSpec) *v1beta1.RunnerSpec {
	if w == nil {
		return nil
	}
	return w.Runner
}

// ---------------------------------------------------------------------------
// Service builder

// ServiceWrapper builds an InferenceService of the tiny model.
type ServiceWrapper struct{ isvc v1beta1.InferenceService }

// MakeService starts a service ns/name of the tiny model.
func MakeService(ns, name string) *ServiceWrapper {
	return &ServiceWrapper{isvc: v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta1.InferenceServiceSpec{
			Model:  &v1beta1.ModelRef{Name: tinyModel},
			Engine: &v1beta1.EngineSpec{},
		},
	}}
}

// Runtime names the runtime (spec.runtime.name).
func (w *ServiceWrapper) Runtime(name string) *ServiceWrapper {
	w.isvc.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: name}
	return w
}

// Replicas sets spec.engine.replicas.
func (w *ServiceWrapper) Replicas(n int32) *ServiceWrapper {
	w.isvc.Spec.Engine.Replicas = &n
	return w
}

// MinMax sets spec.engine.minReplicas and maxReplicas.
func (w *ServiceWrapper) MinMax(minR, maxR int32) *ServiceWrapper {
	w.isvc.Spec.Engine.MinReplicas, w.isvc.Spec.Engine.MaxReplicas = &minR, &maxR
	return w
}

func (w *ServiceWrapper) rolling() *v1beta1.RollingUpdateConfiguration {
	if w.isvc.Spec.RolloutStrategy == nil {
		w.isvc.Spec.RolloutStrategy = &v1beta1.RolloutStrategy{Type: v1beta1.ServingGroupRollingUpdate}
	}
	if w.isvc.Spec.RolloutStrategy.RollingUpdateConfiguration == nil {
		w.isvc.Spec.RolloutStrategy.RollingUpdateConfiguration = &v1beta1.RollingUpdateConfiguration{}
	}
	return w.isvc.Spec.RolloutStrategy.RollingUpdateConfiguration
}

// MaxUnavailable sets the rolling update's maxUnavailable.
func (w *ServiceWrapper) MaxUnavailable(v intstr.IntOrString) *ServiceWrapper {
	w.rolling().MaxUnavailable = &v
	return w
}

// Partition sets the rolling update's partition.
func (w *ServiceWrapper) Partition(v intstr.IntOrString) *ServiceWrapper {
	w.rolling().Partition = &v
	return w
}

// Recovery sets spec.recoveryPolicy.
func (w *ServiceWrapper) Recovery(p v1beta1.RecoveryPolicy) *ServiceWrapper {
	w.isvc.Spec.RecoveryPolicy = &p
	return w
}

// EngineAnnotations sets spec.engine.annotations (put on every engine pod).
func (w *ServiceWrapper) EngineAnnotations(kv map[string]string) *ServiceWrapper {
	w.isvc.Spec.Engine.Annotations = kv
	return w
}

// EngineGPUs overrides the engine runner's nvidia.com/gpu.
func (w *ServiceWrapper) EngineGPUs(n int64) *ServiceWrapper {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	w.isvc.Spec.Engine.Runner = &v1beta1.RunnerSpec{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": q},
		Limits:   corev1.ResourceList{"nvidia.com/gpu": q},
	}}
	return w
}

// Class names the AcceleratorClass (spec.acceleratorSelector.preferredClasses).
func (w *ServiceWrapper) Class(name string) *ServiceWrapper {
	w.isvc.Spec.AcceleratorSelector = &v1beta1.AcceleratorSelector{PreferredClasses: []string{name}}
	return w
}

// DecoderReplicas sets spec.decoder.replicas.
func (w *ServiceWrapper) DecoderReplicas(n int32) *ServiceWrapper {
	if w.isvc.Spec.Decoder == nil {
		w.isvc.Spec.Decoder = &v1beta1.DecoderSpec{}
	}
	w.isvc.Spec.Decoder.Replicas = &n
	return w
}

// Autoscale sets spec.engine.scaleMetric and the replica bounds.
func (w *ServiceWrapper) Autoscale(m v1beta1.ScaleMetric, minR, maxR int32) *ServiceWrapper {
	w.isvc.Spec.Engine.ScaleMetric = &m
	return w.MinMax(minR, maxR)
}

// Obj returns the service.
func (w *ServiceWrapper) Obj() *v1beta1.InferenceService { return w.isvc.DeepCopy() }

// JSON returns the service as a manifest for kubectl.
func (w *ServiceWrapper) JSON(t *testing.T) string {
	t.Helper()
	obj := w.Obj()
	obj.APIVersion, obj.Kind = v1beta1.SchemeGroupVersion.String(), "InferenceService"
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return string(b)
}

// createService creates the service. The webhook resolves the model and
// runtime from its informers; right after they were created those may lag
// on a busy machine, so a denial is retried for a few seconds before it
// fails the test.
func createService(t *testing.T, isvc *v1beta1.InferenceService) *v1beta1.InferenceService {
	t.Helper()
	bc := berthClient(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := bc.OmeV1beta1().InferenceServices(isvc.Namespace).Create(ctxT(t, apiTimeout), isvc.DeepCopy(), metav1.CreateOptions{})
		if err == nil {
			return got
		}
		transient := strings.Contains(err.Error(), "denied") || strings.Contains(err.Error(), "failed calling webhook")
		if time.Now().After(deadline) || !transient {
			require.NoError(t, err, "create InferenceService %s/%s", isvc.Namespace, isvc.Name)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func getService(t *testing.T, ns, name string) *v1beta1.InferenceService {
	t.Helper()
	isvc, err := berthClient(t).OmeV1beta1().InferenceServices(ns).Get(ctxT(t, apiTimeout), name, metav1.GetOptions{})
	require.NoError(t, err)
	return isvc
}

// updateService applies mutate to the current service, retrying on
// conflicts (the reconciler writes status concurrently).
func updateService(t *testing.T, ns, name string, mutate func(*v1beta1.InferenceService)) *v1beta1.InferenceService {
	t.Helper()
	bc := berthClient(t)
	ctx := ctxT(t, time.Minute)
	var out *v1beta1.InferenceService
	err := retryWebhook(ctx, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			isvc, err := bc.OmeV1beta1().InferenceServices(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mutate(isvc)
			out, err = bc.OmeV1beta1().InferenceServices(ns).Update(ctx, isvc, metav1.UpdateOptions{})
			return err
		})
	})
	require.NoError(t, err, "update InferenceService %s/%s", ns, name)
	return out
}

// ---------------------------------------------------------------------------
// Waiting

func condition(isvc *v1beta1.InferenceService, typ string) *metav1.Condition {
	return meta.FindStatusCondition(isvc.Status.Conditions, typ)
}

// conditionIs reports whether the condition has the status and was
// written for the service's current generation.
func conditionIs(isvc *v1beta1.InferenceService, typ string, status metav1.ConditionStatus) bool {
	c := condition(isvc, typ)
	return c != nil && c.Status == status && isvc.Status.ObservedGeneration == isvc.Generation
}

// serviceReady: Ready=True for the current generation.
func serviceReady(isvc *v1beta1.InferenceService) bool {
	return conditionIs(isvc, v1beta1.ConditionReady, metav1.ConditionTrue)
}

// waitService polls the service until done answers true; on timeout the
// test fails with what was awaited and the namespace's state.
func waitService(t *testing.T, ns, name, what string, done func(*v1beta1.InferenceService) bool) *v1beta1.InferenceService {
	t.Helper()
	bc := berthClient(t)
	return e2eutil.Poll(t, settleTimeout, fmt.Sprintf("InferenceService %s/%s: %s", ns, name, what),
		func(ctx context.Context) (*v1beta1.InferenceService, error) {
			return bc.OmeV1beta1().InferenceServices(ns).Get(ctx, name, metav1.GetOptions{})
		}, done, func(*v1beta1.InferenceService) string { return describeNamespace(ns) })
}

// waitFor polls done until it answers true; on timeout the test fails
// with what was awaited and the namespace's state.
func waitFor(t *testing.T, ns, what string, done func() bool) {
	t.Helper()
	e2eutil.Poll(t, settleTimeout, what, func(context.Context) (struct{}, error) { return struct{}{}, nil },
		func(struct{}) bool { return done() }, func(struct{}) string { return describeNamespace(ns) })
}

// servicePods lists the pods labelled for the service, by name.
func servicePods(t *testing.T, ns, name string) []corev1.Pod {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(ctxT(t, apiTimeout), metav1.ListOptions{LabelSelector: v1beta1.LabelInferenceService + "=" + name})
	require.NoError(t, err)
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// waitPods polls the service's pods until done answers true.
func waitPods(t *testing.T, ns, name, what string, done func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	return e2eutil.Poll(t, settleTimeout, fmt.Sprintf("InferenceService %s/%s: pods: %s", ns, name, what),
		func(context.Context) ([]corev1.Pod, error) { return servicePods(t, ns, name), nil },
		done, func([]corev1.Pod) string { return describeNamespace(ns) })
}

// podNames lists the names of pods that are not terminating.
func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// podsNamed: exactly these live pods, each Running and Ready.
func podsNamed(names ...string) func([]corev1.Pod) bool {
	want := append([]string(nil), names...)
	sort.Strings(want)
	return func(pods []corev1.Pod) bool {
		if strings.Join(podNames(pods), ",") != strings.Join(want, ",") {
			return false
		}
		for i := range pods {
			if !podServing(&pods[i]) {
				return false
			}
		}
		return true
	}
}

// podServing: live, Running and Ready.
func podServing(p *corev1.Pod) bool {
	if p == nil || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podByName(pods []corev1.Pod, name string) *corev1.Pod {
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i]
		}
	}
	return nil
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

// serviceEvents lists the events about an InferenceService, oldest first.
func serviceEvents(t *testing.T, ns, name string) []corev1.Event {
	t.Helper()
	evs, err := env.Kube.CoreV1().Events(ns).List(ctxT(t, apiTimeout), metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.name", name),
			fields.OneTermEqualSelector("involvedObject.kind", "InferenceService")).String(),
	})
	require.NoError(t, err)
	sortEvents(evs.Items)
	return evs.Items
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func sortEvents(evs []corev1.Event) {
	sort.SliceStable(evs, func(i, j int) bool { return eventTime(evs[i]).Before(eventTime(evs[j])) })
}

// waitEvents polls the service's events until done answers true.
func waitEvents(t *testing.T, ns, name, what string, done func([]corev1.Event) bool) []corev1.Event {
	t.Helper()
	return e2eutil.Poll(t, settleTimeout, fmt.Sprintf("InferenceService %s/%s: events: %s", ns, name, what),
		func(context.Context) ([]corev1.Event, error) { return serviceEvents(t, ns, name), nil },
		done, func([]corev1.Event) string { return describeNamespace(ns) })
}

// describeNamespace is what a person would look at: the services as
// kubectl describes them, the pods with their identity, revision and
// state, the namespace's events, and the reconciler's log lines about the
// namespace.
func describeNamespace(ns string) string {
	var b strings.Builder
	run := func(args ...string) {
		out, err := kubectlQuiet(args...)
		fmt.Fprintf(&b, "$ kubectl %s\n%s", strings.Join(args, " "), out)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
		}
	}
	run("get", "isvc", "-n", ns, "-o", "wide")
	run("describe", "isvc", "-n", ns)
	run("get", "pods,services,endpointslices,hpa", "-n", ns, "-o", "wide",
		"-L", v1beta1.LabelComponent+","+v1beta1.LabelGroupIndex+","+v1beta1.LabelWorkerIndex)
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		b.WriteString("pods:\n")
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "  %s uid=%s revision=%s recreate-count=%s terminating=%v %s\n", p.Name, p.UID,
				p.Annotations[v1beta1.AnnotationRevision], p.Annotations[v1beta1.AnnotationRecreateCount],
				p.DeletionTimestamp != nil, e2eutil.DescribePod(&p))
		}
	}
	if evs, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		sortEvents(evs.Items)
		b.WriteString("events:\n")
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "  %s %s %s/%s %s: %s (x%d)\n", eventTime(e).Format("15:04:05.000"), e.Type,
				e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
		}
	}
	if r := findReconciler(); r != nil {
		if data, err := os.ReadFile(r.LogPath); err == nil {
			var lines []string
			for _, l := range strings.Split(string(data), "\n") {
				if strings.Contains(l, ns) {
					lines = append(lines, l)
				}
			}
			if len(lines) > 40 {
				lines = lines[len(lines)-40:]
			}
			fmt.Fprintf(&b, "reconciler log (%s), last lines about %s:\n  %s\n", r.LogPath, ns, strings.Join(lines, "\n  "))
		}
	}
	return b.String()
}

// kubectlQuiet runs kubectl without a *testing.T (for failure dumps).
func kubectlQuiet(args ...string) (string, error) {
	out, err := exec.Command(env.Binaries.Kubectl, append([]string{"--kubeconfig", env.Cluster.KubeconfigPath}, args...)...).CombinedOutput()
	return string(out), err
}

// ---------------------------------------------------------------------------
// The reconciler component

// findReconciler returns the supervised reconciler process TestMain
// started, or nil.
func findReconciler() *process.Supervised {
	if reconciler == nil {
		return nil
	}
	return reconciler.Process
}

// reconcilerComponent is the reconciler's supervised process: Kill,
// Restarts, Deaths, LogPath.
func reconcilerComponent(t *testing.T) *process.Supervised {
	t.Helper()
	r := findReconciler()
	require.NotNil(t, r, "TestMain started no %s component", reconcilerCmp)
	return r
}

// ---------------------------------------------------------------------------
// Pod identity and group availability

// podID is a pod's place in its service: component, group, worker index.
type podID struct {
	component     string
	group, worker int
}

func (id podID) String() string { return fmt.Sprintf("%s/%d/%d", id.component, id.group, id.worker) }

// identity reads a pod's labels; ok is false for a pod without a group.
func identity(p *corev1.Pod) (podID, bool) {
	g, err := strconv.Atoi(p.Labels[v1beta1.LabelGroupIndex])
	if err != nil {
		return podID{}, false
	}
	w := 0
	if s, ok := p.Labels[v1beta1.LabelWorkerIndex]; ok {
		if w, err = strconv.Atoi(s); err != nil {
			return podID{}, false
		}
	}
	return podID{component: p.Labels[v1beta1.LabelComponent], group: g, worker: w}, true
}

// groupShape is the desired groups of one component.
type groupShape struct {
	component string
	groups    int // desired groups, ordinals 0..groups-1
	size      int // pods per group
}

// unavailable counts the desired groups that are not available in state:
// a group is available when every one of its pods exists, is not
// terminating, and is Running and Ready.
func (s groupShape) unavailable(state map[string]*corev1.Pod) (n int, which []int) {
	ok := map[podID]bool{}
	for _, p := range state {
		if id, has := identity(p); has && id.component == s.component && podServing(p) {
			ok[id] = true
		}
	}
	for g := 0; g < s.groups; g++ {
		for w := 0; w < s.size; w++ {
			if !ok[podID{s.component, g, w}] {
				n++
				which = append(which, g)
				break
			}
		}
	}
	return n, which
}

// ---------------------------------------------------------------------------
// Pod watch

// podEvent is one watch event, with a copy of the pod.
type podEvent struct {
	Type watch.EventType
	Pod  *corev1.Pod
}

// podWatch lists the pods of a namespace and then watches them from the
// list's resourceVersion, in a goroutine, for the whole test: every ADDED,
// MODIFIED and DELETED event is recorded in order. A watch the apiserver
// closes is resumed from the last resourceVersion seen, so no event is
// lost; if it cannot be resumed the test fails.
type podWatch struct {
	ns string

	mu      sync.Mutex
	initial []*corev1.Pod
	events  []podEvent
	err     error

	cancel context.CancelFunc
	done   chan struct{}
}

func startPodWatch(t *testing.T, ns string) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWatch{ns: ns, cancel: cancel, done: make(chan struct{})}
	list, err := env.Kube.CoreV1().Pods(ns).List(ctxT(t, apiTimeout), metav1.ListOptions{})
	require.NoError(t, err)
	for i := range list.Items {
		w.initial = append(w.initial, list.Items[i].DeepCopy())
	}
	go w.run(ctx, list.ResourceVersion)
	t.Cleanup(w.stop)
	return w
}

func (w *podWatch) run(ctx context.Context, rv string) {
	defer close(w.done)
	for ctx.Err() == nil {
		wi, err := env.Kube.CoreV1().Pods(w.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				w.fail(fmt.Errorf("watch pods of %s from resourceVersion %s: %w", w.ns, rv, err))
			}
			return
		}
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Error {
				w.fail(fmt.Errorf("watch pods of %s: %v", w.ns, apierrors.FromObject(ev.Object)))
				wi.Stop()
				return
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			rv = p.ResourceVersion
			if ev.Type == watch.Bookmark {
				continue
			}
			w.mu.Lock()
			w.events = append(w.events, podEvent{Type: ev.Type, Pod: p.DeepCopy()})
			w.mu.Unlock()
		}
		wi.Stop()
	}
}

func (w *podWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

func (w *podWatch) stop() {
	w.cancel()
	<-w.done
}

// snapshot returns the pods listed at the start, the events so far and
// the watch's error.
func (w *podWatch) snapshot() ([]*corev1.Pod, []podEvent, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.initial, append([]podEvent(nil), w.events...), w.err
}

// replay applies the events in order to the listed pods and calls fn
// after each with the state (pods by name) as it was at that moment.
func (w *podWatch) replay(t *testing.T, fn func(state map[string]*corev1.Pod, ev podEvent)) {
	t.Helper()
	initial, events, err := w.snapshot()
	require.NoError(t, err, "the pod watch broke: a check over it would miss events")
	state := map[string]*corev1.Pod{}
	for _, p := range initial {
		state[p.Name] = p
	}
	for _, ev := range events {
		if ev.Type == watch.Deleted {
			delete(state, ev.Pod.Name)
		} else {
			state[ev.Pod.Name] = ev.Pod
		}
		fn(state, ev)
	}
}

// maxUnavailable is the most desired groups of shape ever unavailable at
// once over the watch, and a description of that moment.
func (w *podWatch) maxUnavailable(t *testing.T, shape groupShape) (int, string) {
	t.Helper()
	most, at := 0, "never"
	w.replay(t, func(state map[string]*corev1.Pod, ev podEvent) {
		if n, which := shape.unavailable(state); n > most {
			most, at = n, fmt.Sprintf("groups %v unavailable after %s %s (resourceVersion %s)", which, ev.Type, ev.Pod.Name, ev.Pod.ResourceVersion)
		}
	})
	return most, at
}

// waitFor polls the recorded events until done answers true.
func (w *podWatch) waitFor(t *testing.T, what string, done func([]podEvent) bool) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		_, events, err := w.snapshot()
		require.NoError(t, err)
		if done(events) {
			return
		}
		if time.Now().After(deadline) {
			require.FailNowf(t, "timeout", "pods of %s: %s: not seen after %s\n%s", w.ns, what, settleTimeout, describeNamespace(w.ns))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// goneUIDs returns, in order, the pods (of the given UIDs) as they were
// first seen terminating or deleted.
func goneInOrder(events []podEvent, uids map[string]bool) []*corev1.Pod {
	seen := map[string]bool{}
	var out []*corev1.Pod
	for _, ev := range events {
		uid := string(ev.Pod.UID)
		if !uids[uid] || seen[uid] {
			continue
		}
		if ev.Type == watch.Deleted || ev.Pod.DeletionTimestamp != nil {
			seen[uid] = true
			out = append(out, ev.Pod)
		}
	}
	return out
}

// added returns the pods the watch saw created, in order.
func added(events []podEvent) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ev := range events {
		if ev.Type == watch.Added {
			out = append(out, ev.Pod)
		}
	}
	return out
}
