package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/certs"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/testing/e2eutil"
)

func berthClient(t *testing.T) versioned.Interface {
	t.Helper()
	c, err := versioned.NewForConfig(env.Cluster.RESTConfig())
	require.NoError(t, err)
	return c
}

// kubectl runs the v1.34 kubectl against the suite's cluster, as a user would.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	bin := env.Binaries.Kubectl
	cmd := exec.Command(bin, append([]string{"--kubeconfig", env.Cluster.KubeconfigPath}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func seedFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.Root, "api", "v1beta1", "testdata", "seeds", name))
	require.NoError(t, err)
	return string(b)
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ensureOutOfBox applies deploy/accelerators and deploy/runtimes
// (idempotent), so each test can run alone with -run.
func ensureOutOfBox(t *testing.T) {
	t.Helper()
	ctx := ctxT(t, 2*time.Minute)
	for _, dir := range []string{"accelerators", "runtimes"} {
		objs, err := install.ReadObjects(env.Path("deploy", dir))
		require.NoError(t, err)
		require.NoError(t, env.Applier.ApplyAll(ctx, objs))
	}
}

// withoutRuntimes deletes out-of-box runtimes for the duration of a test and
// re-applies them afterwards: the seed examples reuse their priorities, and
// berth rightly refuses two equal priorities in one scope.
func withoutRuntimes(t *testing.T, names ...string) {
	t.Helper()
	bc := berthClient(t)
	ctx := ctxT(t, time.Minute)
	for _, n := range names {
		err := bc.OmeV1beta1().ClusterServingRuntimes().Delete(ctx, n, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
	}
	t.Cleanup(func() {
		for _, n := range names {
			out, err := kubectl(t, "", "apply", "--server-side", "-f", filepath.Join(env.Root, "deploy", "runtimes", n+".yaml"))
			assert.NoError(t, err, out)
		}
	})
}

func mistralModel(ns string) string {
	return fmt.Sprintf(`apiVersion: ome.io/v1beta1
kind: BaseModel
metadata: {name: mistral-7b-instruct, namespace: %s}
spec:
  modelFormat: {name: safetensors, version: "1.0.0"}
  modelFramework: {name: transformers, version: "4.36.2"}
  modelArchitecture: MistralForCausalLM
  modelParameterSize: 7B
`, ns)
}

// The seed 000 runtimes and InferenceService, applied verbatim with kubectl,
// pin the service to srt-mistral-7b-instruct-2 (priority 2 beats 1). The
// reconciler creates its serving group, the pod webhook completes the pod,
// which runs on a node of the chosen class, and the service is Ready with
// a URL and a ClusterIP Service; a newer higher-priority runtime does not
// move the pin; an unlabelled pod is untouched.
func TestSeedPriorityExampleEndToEnd(t *testing.T) {
	ensureOutOfBox(t)
	withoutRuntimes(t, "srt-mistral-7b-instruct-rt", "vllm-mistral-7b-instruct-rt")
	ns := "mistral-7b-instruct"
	ctx := ctxT(t, 3*time.Minute)
	_, _ = env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "clusterservingruntime", "srt-mistral-7b-instruct", "srt-mistral-7b-instruct-2", "srt-mistral-7b-instruct-3", "--ignore-not-found")
		_ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	for _, f := range []string{"000-priority-srt-mistral-7b-instruct.yaml", "000-priority-srt-mistral-7b-instruct-2.yaml"} {
		out, err := kubectl(t, seedFile(t, f), "apply", "--server-side", "-f", "-")
		require.NoError(t, err, out)
	}
	out, err := kubectl(t, mistralModel(ns)+"---\n"+seedFile(t, "000-isvc-auto-select.yaml"), "apply", "--server-side", "-f", "-")
	require.NoError(t, err, out)

	bc := berthClient(t)
	isvc, err := bc.OmeV1beta1().InferenceServices(ns).Get(ctx, "mistral-7b-instruct", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", isvc.Annotations[v1beta1.AnnotationResolvedRuntime])
	class := isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass]
	require.NotEmpty(t, class, "a class is chosen when classes exist")

	// kubectl get shows the pin in its columns.
	out, err = kubectl(t, "", "get", "isvc", "-n", ns)
	require.NoError(t, err, out)
	assert.Contains(t, out, "ClusterServingRuntime/srt-mistral-7b-instruct-2")
	assert.Contains(t, out, class)

	// The reconciler creates the service's one serving group, the pod
	// webhook completes it from the pin, and it runs on a node of the class.
	isvc = waitService(t, ns, "mistral-7b-instruct", "Ready=True", serviceReady)
	engine := isvc.Status.Components[v1beta1.ComponentEngine]
	require.NotEmpty(t, engine.Revision, "status.components.engine.revision")
	pods := waitPods(t, ns, "mistral-7b-instruct", "the engine group Running and Ready", podsNamed("mistral-7b-instruct-engine-0"))
	created := &pods[0]
	assertOwned(t, isvc, created, "pod")
	c := created.Spec.Containers[0]
	assert.Equal(t, "lmsysorg/sglang:v0.4.6.post6", c.Image)
	assert.Equal(t, engine.Revision, created.Annotations[v1beta1.AnnotationRevision], "the webhook stamped the revision the reconciler wants")
	assert.NotEmpty(t, created.Spec.NodeSelector, "the class's discovery selector is merged in")
	gpus := int64(0)
	for name, q := range c.Resources.Limits {
		if strings.Contains(string(name), "gpu") || strings.Contains(string(name), "i915") {
			gpus += q.Value()
		}
	}
	assert.EqualValues(t, 2, gpus, "the runtime's 2 GPUs, under the class vendor's resource name: %v", c.Resources.Limits)
	node, err := env.Kube.CoreV1().Nodes().Get(ctx, created.Spec.NodeName, metav1.GetOptions{})
	require.NoError(t, err)
	ac, err := bc.OmeV1beta1().AcceleratorClasses().Get(ctx, class, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, ac.Spec.Discovery.NodeSelector, "class %s discovers nodes by labels", class)
	for k, v := range ac.Spec.Discovery.NodeSelector {
		assert.Equal(t, v, node.Labels[k], "node %s is of class %s", node.Name, class)
	}

	// kubectl get shows the groups ready and the Ready reason; the service
	// has a URL and a ClusterIP Service of its name in front of the group.
	ready := condition(isvc, v1beta1.ConditionReady)
	out, err = kubectl(t, "", "get", "isvc", "-n", ns)
	require.NoError(t, err, out)
	assert.Contains(t, out, "1/1", "kubectl get shows the ready count")
	assert.Contains(t, out, ready.Reason, "kubectl get shows the Ready reason")
	assert.NotEmpty(t, isvc.Status.URL, "status.url")
	front, err := env.Kube.CoreV1().Services(ns).Get(ctx, "mistral-7b-instruct", metav1.GetOptions{})
	require.NoError(t, err, "the service's ClusterIP Service")
	assert.Equal(t, corev1.ServiceTypeClusterIP, front.Spec.Type)
	assert.NotEqual(t, corev1.ClusterIPNone, front.Spec.ClusterIP, "the front Service is not headless")
	assertOwned(t, isvc, front, "Service")
	assert.True(t, selects(front, created), "the front Service selects the engine pod")

	// An unlabelled pod is not touched.
	plain, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Empty(t, plain.Spec.NodeSelector)
	assert.Empty(t, plain.Annotations[v1beta1.AnnotationRevision])

	// A newer runtime with a higher priority does not move the running service.
	three := strings.Replace(strings.Replace(seedFile(t, "000-priority-srt-mistral-7b-instruct-2.yaml"),
		"name: srt-mistral-7b-instruct-2", "name: srt-mistral-7b-instruct-3", 1), "priority: 2", "priority: 3", 1)
	out, err = kubectl(t, three, "apply", "--server-side", "-f", "-")
	require.NoError(t, err, out)
	isvc, err = bc.OmeV1beta1().InferenceServices(ns).Get(ctx, "mistral-7b-instruct", metav1.GetOptions{})
	require.NoError(t, err)
	isvc.Spec.Engine.MaxReplicas = ptr(int32(2))
	updated, err := bc.OmeV1beta1().InferenceServices(ns).Update(ctx, isvc, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", updated.Annotations[v1beta1.AnnotationResolvedRuntime])

	// Re-applying the user's file server-side keeps the pin too, although
	// the apply drops fields its manager owned but no longer lists, such as
	// annotations a webhook added during its previous apply.
	// (--force-conflicts: the typed update above took over maxReplicas.)
	for _, mode := range [][]string{{"apply", "--server-side", "--force-conflicts", "-f", "-"}, {"apply", "--server-side", "--force-conflicts", "-f", "-"}} {
		out, err = kubectl(t, seedFile(t, "000-isvc-auto-select.yaml"), mode...)
		require.NoError(t, err, out)
		isvc, err = bc.OmeV1beta1().InferenceServices(ns).Get(ctx, "mistral-7b-instruct", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", isvc.Annotations[v1beta1.AnnotationResolvedRuntime], "after kubectl %v", mode)
	}
}

func ptr[T any](v T) *T { return &v }

// Conflicting priorities are denied by kubectl apply itself, naming both
// runtimes: identical formats, overlapping (not identical) ranges, and two
// ServingRuntimes of one namespace.
func TestConflictingPrioritiesAreDeniedByKubectl(t *testing.T) {
	ensureOutOfBox(t)
	base := strings.Replace(seedFile(t, "000-priority-srt-mistral-7b-instruct.yaml"), "name: srt-mistral-7b-instruct\n", "name: e2e-conflict-a\n", 1)
	withoutRuntimes(t, "srt-mistral-7b-instruct-rt", "vllm-mistral-7b-instruct-rt")
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "clusterservingruntime", "e2e-conflict-a", "e2e-conflict-b", "--ignore-not-found")
	})
	out, err := kubectl(t, base, "apply", "--server-side", "-f", "-")
	require.NoError(t, err, out)

	overlapping := strings.NewReplacer("name: e2e-conflict-a\n", "name: e2e-conflict-b\n", "max: 9B", "max: 20B", "min: 5B", "min: 8B").Replace(base)
	out, err = kubectl(t, overlapping, "apply", "--server-side", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, "e2e-conflict-b")
	assert.Contains(t, out, "e2e-conflict-a")
	assert.Contains(t, out, `The ClusterServingRuntime "e2e-conflict-b" is invalid`)
	assert.Contains(t, out, "spec.supportedModelFormats[0].priority")

	ns := e2eutil.Namespace(t, env.Kube, "e2e-sr")
	sr := func(name string) string {
		return strings.NewReplacer("kind: ClusterServingRuntime", "kind: ServingRuntime",
			"name: e2e-conflict-a\n", "name: "+name+"\n  namespace: "+ns+"\n").Replace(base)
	}
	out, err = kubectl(t, sr("first"), "apply", "--server-side", "-f", "-")
	require.NoError(t, err, out)
	out, err = kubectl(t, sr("second"), "apply", "--server-side", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, `The ServingRuntime "second" is invalid`)
	assert.Contains(t, out, "ServingRuntime/first")
}

// Every out-of-box runtime passes the webhook again (no two conflict), and
// a dry-run re-apply of all of them is accepted.
func TestOutOfBoxRuntimesNeverConflict(t *testing.T) {
	out, err := kubectl(t, "", "apply", "--server-side", "--dry-run=server", "-k", filepath.Join(env.Root, "deploy", "runtimes"))
	require.NoError(t, err, out)
	assert.Equal(t, 34, strings.Count(out, "serverside-applied"), out)
}

// A service that matches no runtime is denied at kubectl apply, listing
// every candidate runtime with its reason, each a status cause at the
// service's field that made it lose (kubectl prints the causes).
func TestUnresolvableServiceListsEveryRuntime(t *testing.T) {
	ensureOutOfBox(t)
	ns := e2eutil.Namespace(t, env.Kube, "e2e-nomatch")
	model := `apiVersion: ome.io/v1beta1
kind: BaseModel
metadata: {name: llama-huge, namespace: NS}
spec:
  modelFormat: {name: safetensors, version: "1.0.0"}
  modelFramework: {name: transformers, version: "4.57.1"}
  modelArchitecture: LlamaForCausalLM
  modelParameterSize: 900B
---
apiVersion: ome.io/v1beta1
kind: InferenceService
metadata: {name: huge, namespace: NS}
spec:
  model: {name: llama-huge}
`
	out, err := kubectl(t, strings.ReplaceAll(model, "NS", ns), "apply", "--server-side", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, `The InferenceService "huge" is invalid`)
	assert.Contains(t, out, "spec.runtime.name: Invalid value: no runtime can serve BaseModel/llama-huge")
	for _, rt := range []string{"ClusterServingRuntime/srt-llama-3-1-70b-instruct-rt", "ClusterServingRuntime/vllm-llama-3-1-405b-instruct-fp8-rt", "ClusterServingRuntime/srt-llama-3-2-1b-instruct-rt"} {
		assert.Contains(t, out, "spec.model.name: Invalid value: "+rt+": ", "every Llama runtime is listed with its reason, at the model it cannot serve")
	}
	_, err = berthClient(t).OmeV1beta1().InferenceServices(ns).Get(ctxT(t, 10*time.Second), "huge", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing was stored")
}

// A Deployment whose pod template carries the label gets mutated pods:
// the controller-manager creates them and the webhook completes them.
func TestDeploymentPodsAreMutated(t *testing.T) {
	ensureOutOfBox(t)
	ns := e2eutil.Namespace(t, env.Kube, "e2e-deploy")
	ctx := ctxT(t, 2*time.Minute)
	model := strings.Replace(mistralModel(ns), "MistralForCausalLM", "LlamaForCausalLM", 1)
	model = strings.NewReplacer("mistral-7b-instruct", "llama-1b", "7B", "1.24B", "4.36.2", "4.57.1").Replace(model)
	isvc := fmt.Sprintf("apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata: {name: chat, namespace: %s}\nspec:\n  model: {name: llama-1b}\n", ns)
	out, err := kubectl(t, model+"---\n"+isvc, "apply", "--server-side", "-f", "-")
	require.NoError(t, err, out)

	labels := map[string]string{v1beta1.LabelInferenceService: "chat", v1beta1.LabelComponent: "engine", "app": "chat"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "chat"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:  []corev1.Container{{Name: "ome-container", Image: "placeholder"}},
					Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
				},
			},
		},
	}
	_, err = env.Kube.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{})
	require.NoError(t, err)
	var pods []corev1.Pod
	require.Eventually(t, func() bool {
		list, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=chat"})
		if err != nil {
			return false
		}
		pods = list.Items
		return len(pods) == 2
	}, 90*time.Second, 500*time.Millisecond, "the Deployment never got 2 pods")
	for _, p := range pods {
		assert.Contains(t, p.Spec.Containers[0].Image, "sglang", "pod %s composed from srt-llama-3-2-1b-instruct-rt", p.Name)
		assert.NotEmpty(t, p.Annotations[v1beta1.AnnotationRevision])
		assert.NotEmpty(t, p.Spec.NodeSelector)
	}
}

// kubectl apply --dry-run=server of everything above writes nothing.
func TestServerDryRunWritesNothing(t *testing.T) {
	ensureOutOfBox(t)
	ns := e2eutil.Namespace(t, env.Kube, "e2e-dryrun")
	// The model must exist for the service to resolve; create it for real,
	// then dry-run the service, a runtime, a class and a pod.
	out, err := kubectl(t, mistralModel(ns), "apply", "--server-side", "-f", "-")
	require.NoError(t, err, out)
	isvc := strings.Replace(seedFile(t, "000-isvc-auto-select.yaml"), "namespace: mistral-7b-instruct", "namespace: "+ns, 1)
	out, err = kubectl(t, isvc, "apply", "--server-side", "--dry-run=server", "-o", "yaml", "-f", "-")
	require.NoError(t, err, out)
	assert.Contains(t, out, "ome.io/resolved-runtime: ClusterServingRuntime/srt-mistral-7b-instruct-rt", "the dry run shows the decision")
	rt := strings.Replace(seedFile(t, "000-priority-srt-mistral-7b-instruct.yaml"), "name: srt-mistral-7b-instruct\n", "name: e2e-dry-run\n", 1)
	rt = strings.Replace(rt, "priority: 1", "priority: 7", 1)
	out, err = kubectl(t, rt, "apply", "--server-side", "--dry-run=server", "-f", "-")
	require.NoError(t, err, out)

	ctx := ctxT(t, 30*time.Second)
	bc := berthClient(t)
	_, err = bc.OmeV1beta1().InferenceServices(ns).Get(ctx, "mistral-7b-instruct", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "dry-run stored the service: %v", err)
	_, err = bc.OmeV1beta1().ClusterServingRuntimes().Get(ctx, "e2e-dry-run", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "dry-run stored the runtime: %v", err)
	pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.Everything().String()})
	require.NoError(t, err)
	assert.Empty(t, pods.Items)
}

// Serving certificates rotated on disk while admissions run: the webhook
// reloads without restart and no admission fails.
func TestCertificateRotationUnderLoad(t *testing.T) {
	ensureOutOfBox(t)
	w := webhook
	require.NotNil(t, w, "the berth webhook component did not start")
	ns := e2eutil.Namespace(t, env.Kube, "e2e-rotate")
	out, err := kubectl(t, mistralModel(ns), "apply", "--server-side", "-f", "-")
	require.NoError(t, err, out)
	bc := berthClient(t)
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "rotating", Namespace: ns},
		Spec:       v1beta1.InferenceServiceSpec{Model: &v1beta1.ModelRef{Name: "mistral-7b-instruct"}},
	}
	ctx := ctxT(t, 2*time.Minute)
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// A copy per call: the client's encoder writes TypeMeta into the object.
				_, err := bc.OmeV1beta1().InferenceServices(ns).Create(ctx, isvc.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	// Rotate as an operator would: trust old and new CA in caBundle, then
	// swap the files to a certificate of the new CA, then renew it twice
	// from the same CA (what cert-manager does). Each swap is a file rewrite.
	oldCA, err := os.ReadFile(filepath.Join(w.CertDir, "ca.crt"))
	require.NoError(t, err)
	next, err := certs.Generate(nil, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour, time.Now())
	require.NoError(t, err)
	both := append(append([]byte{}, oldCA...), next.CACert...)
	require.NoError(t, install.RegisterWebhooks(ctx, env.Kube, install.WebhookEndpoint{BaseURL: w.BaseURL, CABundle: both}, w.Mutating, w.Validating))
	time.Sleep(3 * time.Second) // the apiserver's webhook manager picks up the bundle
	require.NoError(t, next.WriteFiles(w.CertDir))
	for i := 0; i < 2; i++ {
		time.Sleep(4 * time.Second)
		require.NoError(t, next.RenewServing(nil, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour, time.Now()))
		require.NoError(t, next.WriteFiles(w.CertDir))
	}
	time.Sleep(5 * time.Second) // the e2e webhook polls its files every second
	close(stop)
	wg.Wait()
	t.Logf("admissions during rotation: %d ok, %d failed", ok.Load(), failed.Load())
	assert.Zero(t, failed.Load(), "first failure: %v", firstErr.Load())
	assert.Greater(t, ok.Load(), int64(20))
	log, err := os.ReadFile(w.Process.LogPath)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, strings.Count(string(log), "serving certificate loaded"), 3, "the webhook reloaded the rotated certificates")
}
