package realnode

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/node"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

// needSecondNode skips t when the second real node does not run, saying why.
func needSecondNode(t *testing.T) {
	t.Helper()
	needNode(t)
	if env.SecondNode == nil {
		t.Skipf("no second real node on this machine: %v", env.SecondNodeErr)
	}
}

// onNode places a pod spec on the named real node (either).
func onNode(name string) func(*corev1.PodSpec) {
	return func(spec *corev1.PodSpec) {
		sel, tol := node.PlacementAny()
		sel[corev1.LabelHostname] = name
		spec.NodeSelector = sel
		spec.Tolerations = append(spec.Tolerations, tol...)
	}
}

// engineOn runs berth-test-engine as an SGLang engine on the named node,
// with a Service of the same name in front, and returns the running pod.
func engineOn(t *testing.T, ns, name, nodeName string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	dir := writeModelDir(t, "LlamaForCausalLM")
	labels := map[string]string{"app": name}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "engine", Image: TestEngineImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Command:        []string{"python3", "-m", "sglang.launch_server", "--model-path", "/mnt/models", "--served-model-name", name, "--port", "8080"},
			Env:            []corev1.EnvVar{{Name: "POD_NAME", Value: name}},
			VolumeMounts:   []corev1.VolumeMount{{Name: "model", MountPath: "/mnt/models", ReadOnly: true}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
		}},
		Volumes: []corev1.Volume{{Name: "model", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}},
	}}
	onNode(nodeName)(&pod.Spec)
	_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	_, err = env.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	return waitPod(t, ns, name, 2*time.Minute, func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

// The second real node is a host of its own: its InternalIP is in its
// network namespace, its pods are on their own pod network, and pods on
// either node reach pods on the other, by pod IP and through Services by
// DNS name (CoreDNS on the first node, kube-proxy on each).
func TestSecondNodeJoinsThePodNetwork(t *testing.T) {
	needSecondNode(t)
	ctx := context.Background()
	n2, err := env.Kube.CoreV1().Nodes().Get(ctx, node.SecondName, metav1.GetOptions{})
	require.NoError(t, err)
	var internal string
	for _, a := range n2.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = a.Address
		}
	}
	assert.Equal(t, node.SecondIP, internal)

	ns := newNamespace(t, "second")
	one := engineOn(t, ns, "one", node.Name)
	two := engineOn(t, ns, "two", node.SecondName)
	require.Equal(t, node.SecondName, two.Spec.NodeName)
	_, cidr, _ := net.ParseCIDR(node.SecondPodCIDR)
	assert.True(t, cidr.Contains(net.ParseIP(two.Status.PodIP)), "pod IP %s in the second node's pod network %s", two.Status.PodIP, node.SecondPodCIDR)
	t.Logf("pod one on %s at %s, pod two on %s at %s", one.Spec.NodeName, one.Status.PodIP, two.Spec.NodeName, two.Status.PodIP)

	for _, c := range []struct{ client, from, url, want string }{
		{"from-two-by-dns", node.SecondName, "http://one." + ns + ".svc", "on pod one"},
		{"from-two-by-ip", node.SecondName, "http://" + one.Status.PodIP + ":8080", "on pod one"},
		{"from-one-by-dns", node.Name, "http://two." + ns + ".svc", "on pod two"},
		{"from-one-by-ip", node.Name, "http://" + two.Status.PodIP + ":8080", "on pod two"},
		{"within-two", node.SecondName, "http://two." + ns + ".svc", "on pod two"},
	} {
		reply := chatFromPodOn(t, ns, c.client, c.url, onNode(c.from))
		assert.Contains(t, reply, c.want, "%s: %s", c.client, c.url)
	}
}

// omePDRuntime is OME's prefill/decode runtime, vendored unchanged (see
// the file's header).
const omePDRuntime = "testdata/ome/llama-3-2-1b-instruct-pd-rt.yaml"

// vendoredUnchanged checks the vendored file below its comment header
// against the git blob id the header names.
func vendoredUnchanged(t *testing.T, path string) {
	t.Helper()
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	var blob string
	for len(body) > 0 && body[0] == '#' {
		line, rest, _ := bytes.Cut(body, []byte("\n"))
		body = rest
		if f := strings.Fields(string(line)); len(f) >= 4 && f[1] == "git" && f[2] == "blob:" {
			blob = f[3]
		}
	}
	require.NotEmpty(t, blob, "%s names no git blob", path)
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(body))
	h.Write(body)
	require.Equal(t, blob, hex.EncodeToString(h.Sum(nil)), "%s is not OME's file unchanged", path)
}

// gpu is the extended resource OME's runtime requests.
const gpu corev1.ResourceName = "nvidia.com/gpu"

// advertiseGPU gives a real node one nvidia.com/gpu, as Kubernetes'
// "Advertise Extended Resources for a Node" does (a patch of the node's
// status capacity; the kubelet derives allocatable), until the test ends.
func advertiseGPU(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	patch := func(op string) error {
		body := fmt.Sprintf(`[{"op":%q,"path":"/status/capacity/nvidia.com~1gpu"%s}]`, op, map[bool]string{true: `,"value":"1"`}[op == "add"])
		_, err := env.Kube.CoreV1().Nodes().Patch(ctx, name, types.JSONPatchType, []byte(body), metav1.PatchOptions{}, "status")
		return err
	}
	require.NoError(t, patch("add"))
	t.Cleanup(func() { _ = patch("remove") })
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return allocatableGPUs(ctx, name) == 1, nil
	}), "node %s never showed nvidia.com/gpu allocatable", name)
}

func allocatableGPUs(ctx context.Context, name string) int64 {
	n, err := env.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return -1
	}
	q := n.Status.Allocatable[gpu]
	return q.Value()
}

// realNodeGPUClass is an AcceleratorClass of the real nodes' advertised
// GPU, deleted when the test ends.
func realNodeGPUClass(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	class := wrappers.MakeAcceleratorClass("berth-real-node-gpu").Vendor("nvidia").Family("ampere").Model("a10").
		NodeSelector(node.Label, node.LabelValue).Memory("16Gi").ComputeCapability("8.0").ResourceQuantity(string(gpu), "1").Obj()
	c := berthClient(t)
	_, err := c.OmeV1beta1().AcceleratorClasses().Create(ctx, class, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.OmeV1beta1().AcceleratorClasses().Delete(ctx, class.Name, metav1.DeleteOptions{}) })
	return class.Name
}

// smallRunner is what the service changes in a runtime's runner: the
// image (berth-test-engine stands in for SGLang and its router), requests
// this 2-CPU machine can hold, and POD_NAME (a hostNetwork pod's hostname
// is the machine's, and replies name the pod).
func smallRunner() *v1beta1.RunnerSpec {
	return &v1beta1.RunnerSpec{
		Image: TestEngineImage,
		Env:   []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
	}
}

// OME's own prefill/decode runtime, applied unchanged: it runs engine
// (prefill) and decoder with hostNetwork on port 8080 and one
// nvidia.com/gpu each, so they need two hosts: they land on the two real
// nodes, each listening on its node's address. The router (on the second
// node) discovers both through the API with the ServiceAccount berth made
// for it, and a chat completion through the service's front Service, from
// a pod on the first node, is prefilled on one node and decoded on the
// other.
func TestOMEPrefillDecodeOnTwoRealNodes(t *testing.T) {
	needSecondNode(t)
	ctx := context.Background()
	vendoredUnchanged(t, omePDRuntime)
	_, err := kubectl(ctx, env, "apply", "-f", omePDRuntime)
	require.NoError(t, err)
	const runtime = "srt-llama-3-2-1b-instruct-pd"
	c := berthClient(t)
	t.Cleanup(func() { _ = c.OmeV1beta1().ClusterServingRuntimes().Delete(ctx, runtime, metav1.DeleteOptions{}) })
	advertiseGPU(t, node.Name)
	advertiseGPU(t, node.SecondName)
	class := realNodeGPUClass(t)

	ns := newNamespace(t, "ome-pd")
	dir := writeModelDir(t, "LlamaForCausalLM")
	model := &v1beta1.BaseModel{ObjectMeta: metav1.ObjectMeta{Name: "llama-3-2-1b", Namespace: ns}, Spec: v1beta1.BaseModelSpec{
		ModelFormat:        v1beta1.ModelFormat{Name: "safetensors", Version: ptr("1.0.0")},
		ModelFramework:     &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: ptr("4.43.0")},
		ModelArchitecture:  ptr("LlamaForCausalLM"),
		ModelParameterSize: ptr("1.24B"),
		Storage:            &v1beta1.StorageSpec{StorageURI: ptr("local://" + dir)},
	}}
	_, err = c.OmeV1beta1().BaseModels(ns).Create(ctx, model, metav1.CreateOptions{})
	require.NoError(t, err)
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: ns, Annotations: map[string]string{v1beta1.AnnotationAcceleratorClass: class}},
		Spec: v1beta1.InferenceServiceSpec{
			Model:   &v1beta1.ModelRef{Name: model.Name, Kind: ptr("BaseModel")},
			Runtime: &v1beta1.ServingRuntimeRef{Name: runtime},
			Engine:  &v1beta1.EngineSpec{Runner: smallRunner()},
			Decoder: &v1beta1.DecoderSpec{Runner: smallRunner()},
			Router:  &v1beta1.RouterSpec{Runner: smallRunner()},
		},
	}
	isvc.Spec.Engine.NodeSelector, isvc.Spec.Engine.Tolerations = node.PlacementAny()
	isvc.Spec.Decoder.NodeSelector, isvc.Spec.Decoder.Tolerations = node.PlacementAny()
	isvc.Spec.Router.NodeSelector, isvc.Spec.Router.Tolerations = node.PlacementAny()
	isvc.Spec.Router.NodeSelector[corev1.LabelHostname] = node.SecondName
	_, err = c.OmeV1beta1().InferenceServices(ns).Create(ctx, isvc, metav1.CreateOptions{})
	require.NoError(t, err)
	start := time.Now()
	ready := waitServiceReady(t, c, ns, "pd", 5*time.Minute)
	t.Logf("InferenceService Ready %s after create (OME's startup probe waits 60 s)", time.Since(start).Round(time.Second))
	assert.Equal(t, "ClusterServingRuntime/"+runtime, ready.Annotations[v1beta1.AnnotationResolvedRuntime])

	nodeIP := map[string]string{node.Name: node.GatewayIP, node.SecondName: node.SecondIP}
	hosts := map[string]string{}
	for _, name := range []string{"pd-engine-0", "pd-decoder-0"} {
		pod, err := env.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.True(t, pod.Spec.HostNetwork, "%s: OME's runtime asks for hostNetwork", name)
		assert.Equal(t, nodeIP[pod.Spec.NodeName], pod.Status.PodIP, "%s listens on its node's address", name)
		q := pod.Spec.Containers[0].Resources.Requests[gpu]
		assert.Equal(t, int64(1), q.Value(), "%s requests OME's nvidia.com/gpu", name)
		hosts[pod.Spec.NodeName] = name
		t.Logf("%s on %s at %s:8080", name, pod.Spec.NodeName, pod.Status.PodIP)
	}
	assert.Len(t, hosts, 2, "engine and decoder share port 8080 on the host network: they need two nodes")
	router, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "pd-router-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, node.SecondName, router.Spec.NodeName)
	assert.Equal(t, "pd-router", router.Spec.ServiceAccountName, "the router discovers workers with the ServiceAccount berth made for it")

	reply := chatFromPod(t, ns, "client", "http://pd."+ns+".svc")
	t.Logf("reply through the router: %s", strings.TrimSpace(reply))
	assert.Contains(t, reply, "on pod pd-decoder-0", "decoded on the decoder")
	assert.Contains(t, reply, "prefilled on pod pd-engine-0", "prefilled on the engine")
	for _, name := range []string{node.Name, node.SecondName} {
		assert.Equal(t, int64(1), allocatableGPUs(ctx, name), "the kubelet of %s keeps the advertised GPU", name)
	}
}
