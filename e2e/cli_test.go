package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/testing/e2eutil"
)

// berthCLI runs one of berth's CLI commands (internal/cli: what
// `berth explain|render|lint` and `kubectl berth` run) and returns its
// stdout, failing the test on an error other than cli.ErrFailed.
func berthCLI(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	for _, c := range cli.Commands() {
		if c.Name != name {
			continue
		}
		var stdout, stderr bytes.Buffer
		err := c.Run(ctxT(t, 2*time.Minute), args, &stdout, &stderr)
		if err != nil && err != cli.ErrFailed {
			require.NoError(t, err, "berth %s %s\nstderr: %s", name, strings.Join(args, " "), stderr.String())
		}
		return stdout.String(), err
	}
	t.Fatalf("no command %s", name)
	return "", nil
}

// explainReport decodes `berth explain -o json`.
func explainReport(t *testing.T, args ...string) cli.Report {
	t.Helper()
	out, err := berthCLI(t, "explain", append(args, "-o", "json")...)
	require.NoError(t, err, out)
	var r cli.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

// TestCLI: for an InferenceService applied to the real cluster, berth
// explain online (the stored, pinned service and the cluster's objects)
// and offline (the same files, nodes and pods) give identical decisions;
// berth render, online and offline, composes the pods the webhook stored,
// field for field; render --diff against them finds no change.
func TestCLI(t *testing.T) {
	ensureOutOfBox(t)
	ns := e2eutil.Namespace(t, env.Kube, "cli")
	dir := t.TempDir()
	model := filepath.Join(dir, "model.yaml")
	isvcFile := filepath.Join(dir, "isvc.yaml")
	writeFile(t, model, fmt.Sprintf(`apiVersion: ome.io/v1beta1
kind: BaseModel
metadata: {name: llama-1b, namespace: %s}
spec:
  modelFormat: {name: safetensors, version: "1.0.0"}
  modelFramework: {name: transformers, version: "4.57.1"}
  modelArchitecture: LlamaForCausalLM
  modelParameterSize: 1.24B
`, ns))
	writeFile(t, isvcFile, fmt.Sprintf(`apiVersion: ome.io/v1beta1
kind: InferenceService
metadata: {name: cli-llama, namespace: %s}
spec:
  model: {name: llama-1b}
  engine: {minReplicas: 1, maxReplicas: 1}
`, ns))
	out, err := kubectl(t, "", "apply", "--server-side", "-f", model, "-f", isvcFile)
	require.NoError(t, err, out)
	stored := waitPods(t, ns, "cli-llama", "the engine pod exists", func(p []corev1.Pod) bool { return len(p) == 1 })

	// The cluster's nodes and bound pods, as a user would save them.
	nodes := filepath.Join(dir, "nodes.yaml")
	nodeList, err := kubectlStdout(t, "get", "nodes", "-o", "yaml")
	require.NoError(t, err, nodeList)
	podList, err := kubectlStdout(t, "get", "pods", "-A", "--field-selector=spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed", "-o", "yaml")
	require.NoError(t, err, podList)
	writeFile(t, nodes, nodeList+"\n---\n"+podList)

	kc := "--kubeconfig=" + env.Cluster.KubeconfigPath
	online := explainReport(t, "isvc/cli-llama", "-n", ns, kc)
	offlineArgs := []string{"-f", isvcFile, "--from", model, "--from", env.Path("deploy", "runtimes"), "--from", env.Path("deploy", "accelerators"), "--nodes", nodes}
	offline := explainReport(t, offlineArgs...)

	require.True(t, online.Allowed, online.Denial)
	require.True(t, offline.Allowed, offline.Denial)
	require.NotNil(t, online.Pin, "the stored service is pinned")
	require.NotNil(t, offline.Decision)
	require.NotNil(t, online.Decision)
	assert.True(t, online.Pin.Passes, online.Pin.Problem)
	assert.False(t, online.Pin.FreshDiffers, online.Pin.Why)
	// The pin in the cluster is what offline explain decides.
	assert.Equal(t, offline.Decision.Runtime, online.Pin.Runtime)
	assert.Equal(t, offline.Decision.AcceleratorClass, online.Pin.AcceleratorClass)
	assert.Equal(t, offline.Decision.Runtime, online.Decision.Runtime)
	// A decision made today online is offline's, candidate for candidate.
	require.NotNil(t, online.Pin.Fresh)
	assert.Equal(t, *offline.Decision, *online.Pin.Fresh)
	t.Logf("decision: %s", offline.Decision.Headline)

	// render: online and offline, the pods the webhook stored.
	onlinePods := renderedPods(t, "isvc/cli-llama", "-n", ns, kc)
	offlinePods := renderedPods(t, offlineArgs...)
	require.Len(t, onlinePods, 1)
	require.Len(t, offlinePods, 1)
	got := &stored[0]
	for name, p := range map[string]*corev1.Pod{"online": onlinePods[0], "offline": offlinePods[0]} {
		assert.Empty(t, cli.PodDiff(got, p), "%s render differs from the pod the webhook stored", name)
		assert.Equal(t, got.Spec.Affinity, p.Spec.Affinity, name)
		scheduler := p.Spec.SchedulerName
		if scheduler == "" {
			scheduler = corev1.DefaultSchedulerName // the apiserver's default, not berth's
		}
		assert.Equal(t, got.Spec.SchedulerName, scheduler, name)
		assert.Equal(t, got.Annotations[v1beta1.AnnotationRevision], p.Annotations[v1beta1.AnnotationRevision], name)
		assert.Equal(t, got.Labels, p.Labels, name)
	}
	diff, err := berthCLI(t, "render", "isvc/cli-llama", "-n", ns, kc, "--diff")
	require.NoError(t, err)
	assert.Equal(t, "no changes: the running pods match what berth composes now\n", diff)

	// A runtime that would win now, in the service's namespace only (a
	// namespaced runtime outranks cluster-scoped ones): the pin holds, and
	// online explain says a newer runtime exists and why the pinned lost.
	// Timestamps have whole seconds: explain can only say "newer" of a
	// runtime created in a later second than the service.
	svc, err := berthClient(t).OmeV1beta1().InferenceServices(ns).Get(ctxT(t, apiTimeout), "cli-llama", metav1.GetOptions{})
	require.NoError(t, err)
	time.Sleep(time.Until(svc.CreationTimestamp.Add(time.Second + 50*time.Millisecond)))
	shipped, err := os.ReadFile(env.Path("deploy", "runtimes", "srt-llama-3-2-1b-instruct-rt.yaml"))
	require.NoError(t, err)
	newer := strings.NewReplacer("kind: ClusterServingRuntime", "kind: ServingRuntime",
		"name: srt-llama-3-2-1b-instruct-rt", "name: cli-newer\n  namespace: "+ns).Replace(string(shipped))
	newerFile := filepath.Join(dir, "newer.yaml")
	writeFile(t, newerFile, newer)
	out, err = kubectl(t, "", "apply", "--server-side", "-f", newerFile)
	require.NoError(t, err, out)
	pinned := online.Pin.Runtime
	var later cli.Report
	waitFor(t, ns, "online explain sees the newer runtime", func() bool {
		later = explainReport(t, "isvc/cli-llama", "-n", ns, kc)
		return later.Pin != nil && later.Pin.FreshDiffers
	})
	assert.Equal(t, pinned, later.Pin.Runtime, "the pin holds")
	assert.Equal(t, pinned, later.Decision.Runtime)
	require.Len(t, later.Pin.Why, 1)
	assert.Regexp(t, `^a newer runtime \(created [0-9-]+ [0-9:]+Z, after the service\) now exists: ServingRuntime/cli-newer; `+
		pinned+`: matches, but namespaced runtime ServingRuntime/cli-newer outranks cluster-scoped runtimes; the pin keeps `+pinned+`$`, later.Pin.Why[0])
	text, err := berthCLI(t, "explain", "isvc/cli-llama", "-n", ns, kc)
	require.NoError(t, err)
	t.Logf("berth explain isvc/cli-llama -n %s:\n%s", ns, text)

	// lint --against-cluster: a copy of a shipped runtime under another
	// name ties with it in priority, which only the cluster shows.
	lintDir := t.TempDir()
	writeFile(t, filepath.Join(lintDir, "copy.yaml"), strings.Replace(string(shipped), "name: srt-llama-3-2-1b-instruct-rt", "name: cli-copy", 1))
	problems, err := berthCLI(t, "lint", lintDir, "--against-cluster", kc)
	assert.Equal(t, cli.ErrFailed, err, problems)
	assert.Contains(t, problems, filepath.Join(lintDir, "copy.yaml")+":")
	assert.Contains(t, problems, "ClusterServingRuntime/cli-copy: spec.supportedModelFormats[0].priority: ")
	assert.Contains(t, problems, "is also used by ClusterServingRuntime/srt-llama-3-2-1b-instruct-rt")
}

// renderedPods runs berth render and decodes its YAML documents.
func renderedPods(t *testing.T, args ...string) []*corev1.Pod {
	t.Helper()
	out, err := berthCLI(t, "render", args...)
	require.NoError(t, err, out)
	var pods []*corev1.Pod
	for _, doc := range strings.Split(out, "\n---\n") {
		doc = strings.TrimPrefix(doc, "---\n")
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var p corev1.Pod
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &p), doc)
		pods = append(pods, &p)
	}
	return pods
}

// kubectlStdout runs kubectl against the suite's cluster and returns its
// standard output alone (warnings go to stderr).
func kubectlStdout(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(env.Binaries.Kubectl, append([]string{"--kubeconfig", env.Cluster.KubeconfigPath}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return stderr.String(), err
	}
	return string(out), nil
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}
