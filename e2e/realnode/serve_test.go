package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/node"
	"github.com/berthdev/berth/internal/testing/e2eutil"
	"github.com/berthdev/berth/version"
)

// TestEngineImage is berth's stand-in for vLLM and SGLang.
var TestEngineImage = version.Image("berth-test-engine")

// writeModelDir writes a small model directory (config.json and a
// tokenizer config, as on the Hub) on the node, readable by any user.
func writeModelDir(t *testing.T, arch string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "berth-model-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	files := map[string]string{
		"config.json":           fmt.Sprintf(`{"architectures": [%q], "model_type": "llama", "torch_dtype": "bfloat16", "max_position_embeddings": 131072}`, arch),
		"tokenizer_config.json": `{"model_max_length": 131072}`,
	}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	return dir
}

func berthClient(t *testing.T) versioned.Interface {
	t.Helper()
	c, err := versioned.NewForConfig(env.Cluster.RESTConfig())
	require.NoError(t, err)
	return c
}

// applyTestEngineRuntime applies deploy/test-engine.
func applyTestEngineRuntime(t *testing.T) {
	t.Helper()
	objs, err := devenv.Manifests("test-engine")
	require.NoError(t, err)
	require.NoError(t, env.Applier.ApplyAll(context.Background(), objs))
}

// waitServiceReady waits for the InferenceService's Ready condition.
func waitServiceReady(t *testing.T, c versioned.Interface, ns, name string, timeout time.Duration) *v1beta1.InferenceService {
	t.Helper()
	return e2eutil.Poll(t, timeout, fmt.Sprintf("InferenceService %s/%s Ready", ns, name),
		func(ctx context.Context) (*v1beta1.InferenceService, error) {
			return c.OmeV1beta1().InferenceServices(ns).Get(ctx, name, metav1.GetOptions{})
		}, func(isvc *v1beta1.InferenceService) bool {
			return meta.IsStatusConditionTrue(isvc.Status.Conditions, v1beta1.ConditionReady)
		}, func(last *v1beta1.InferenceService) string {
			pods, _ := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
			var states []string
			for i := range pods.Items {
				states = append(states, pods.Items[i].Name+": "+e2eutil.DescribePod(&pods.Items[i]))
			}
			return fmt.Sprintf("conditions %+v; pods:\n%s", conditionsOf(last), strings.Join(states, "\n"))
		})
}

func conditionsOf(isvc *v1beta1.InferenceService) []metav1.Condition {
	if isvc == nil {
		return nil
	}
	return isvc.Status.Conditions
}

// chatFromPod runs `berth-test-engine chat` in a pod on the real node
// against url and returns what it printed (its log).
func chatFromPod(t *testing.T, ns, name, url string) string {
	t.Helper()
	return chatFromPodOn(t, ns, name, url, onRealNode)
}

// chatFromPodOn is chatFromPod with the pod placed by place.
func chatFromPodOn(t *testing.T, ns, name, url string, place func(*corev1.PodSpec)) string {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "chat", Image: TestEngineImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"berth-test-engine", "chat", "--url", url, "--retry-for", "60s"}}},
	}}
	place(&pod.Spec)
	_, err := env.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	done := waitPod(t, ns, name, 2*time.Minute, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	logs, err := env.Kube.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(context.Background())
	require.NoError(t, err)
	require.Equal(t, corev1.PodSucceeded, done.Status.Phase, "the chat pod failed: %s\n%s", e2eutil.DescribePod(done), logs)
	return string(logs)
}

// A CPU InferenceService on berth-test-engine runs on the real node, turns
// Ready on real probes, and a request to its front Service from a pod, by
// DNS name, returns a completion naming the model.
func TestServiceServesOnRealNode(t *testing.T) {
	needNode(t)
	ns := newNamespace(t, "serve")
	c := berthClient(t)
	applyTestEngineRuntime(t)
	ctx := context.Background()
	newChatService(t, c, ns, "chat", 1)
	start := time.Now()
	ready := waitServiceReady(t, c, ns, "chat", 3*time.Minute)
	t.Logf("InferenceService Ready %s after create", time.Since(start).Round(time.Millisecond))
	// No berth process runs on the host: the in-cluster webhook pinned the
	// decision and completed the pod.
	require.Equal(t, "ClusterServingRuntime/berth-test-engine-rt", ready.Annotations[v1beta1.AnnotationResolvedRuntime])
	pod, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "chat-engine-0", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, pod.Annotations[v1beta1.AnnotationRevision], "the pod webhook stamped the revision")
	require.Equal(t, TestEngineImage, pod.Spec.Containers[0].Image, "the pod webhook composed the runner from the runtime")

	reply := chatFromPod(t, ns, "client", "http://chat."+ns+".svc")
	require.Contains(t, reply, "berth-test-engine")
	require.Contains(t, reply, "chat", "the served model name is the service's ({{.Name}})")
	t.Logf("reply through the front Service by DNS: %s", strings.TrimSpace(reply))
}

func ptr[T any](v T) *T { return &v }

// newChatService creates a BaseModel (<name>-model) on the node and an InferenceService
// name of replicas groups on berth-test-engine, placed on the real node.
// Options change the service before it is created.
func newChatService(t *testing.T, c versioned.Interface, ns, name string, replicas int32, opts ...func(*v1beta1.InferenceService)) {
	t.Helper()
	ctx := context.Background()
	dir := writeModelDir(t, "LlamaForCausalLM")
	model := &v1beta1.BaseModel{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-model", Namespace: ns},
		Spec: v1beta1.BaseModelSpec{
			ModelFormat:        v1beta1.ModelFormat{Name: "safetensors", Version: ptr("1.0.0")},
			ModelArchitecture:  ptr("LlamaForCausalLM"),
			ModelParameterSize: ptr("1.24B"),
			Storage:            &v1beta1.StorageSpec{StorageURI: ptr("local://" + dir)},
		},
	}
	_, err := c.OmeV1beta1().BaseModels(ns).Create(ctx, model, metav1.CreateOptions{})
	require.NoError(t, err)
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta1.InferenceServiceSpec{
			Model:   &v1beta1.ModelRef{Name: name + "-model", Kind: ptr("BaseModel")},
			Runtime: &v1beta1.ServingRuntimeRef{Name: "berth-test-engine-rt"},
			Engine:  &v1beta1.EngineSpec{},
		},
	}
	isvc.Spec.Engine.MinReplicas = &replicas
	isvc.Spec.Engine.NodeSelector, isvc.Spec.Engine.Tolerations = node.Placement()
	for _, o := range opts {
		o(isvc)
	}
	_, err = c.OmeV1beta1().InferenceServices(ns).Create(ctx, isvc, metav1.CreateOptions{})
	require.NoError(t, err)
}

// onRuntime names the service's runtime.
func onRuntime(name string) func(*v1beta1.InferenceService) {
	return func(isvc *v1beta1.InferenceService) { isvc.Spec.Runtime.Name = name }
}
