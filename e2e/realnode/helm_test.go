package realnode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
)

// placementValues put berth's pods on the real node through the chart's
// values, as testdata/kustomize does with patches.
const placementValues = `webhook:
  nodeSelector: {node.berth.dev/real: "true"}
  tolerations: [{key: node.berth.dev/real, operator: Equal, value: "true", effect: NoSchedule}]
reconciler:
  nodeSelector: {node.berth.dev/real: "true"}
  tolerations: [{key: node.berth.dev/real, operator: Equal, value: "true", effect: NoSchedule}]
`

// uninstallKustomize deletes what `kubectl apply -k` installed, except the
// CRDs (and so every service of the suite): berth's namespace, RBAC,
// webhook configurations, runtimes and classes.
func uninstallKustomize(ctx context.Context, t *testing.T) {
	t.Helper()
	out, err := kubectl(ctx, env, "kustomize", filepath.Join("testdata", "kustomize"))
	require.NoError(t, err)
	var keep []string
	for _, doc := range strings.Split(out, "\n---\n") {
		var obj struct{ Kind string }
		if yaml.Unmarshal([]byte(doc), &obj) == nil && obj.Kind != "" && obj.Kind != "CustomResourceDefinition" {
			keep = append(keep, doc)
		}
	}
	file := filepath.Join(t.TempDir(), "berth.yaml")
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(keep, "\n---\n")), 0o644))
	_, err = kubectl(ctx, env, "delete", "--ignore-not-found", "--wait", "--timeout=2m", "-f", file)
	require.NoError(t, err)
}

// helm runs bin/helm-v3.22.0/helm against the cluster.
func helm(ctx context.Context, args ...string) (string, error) {
	bin := filepath.Join(env.Root, "bin", "helm-v3.22.0", "helm")
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", env.Cluster.KubeconfigPath}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// berth installed with Helm (the chart's defaults, placed on the real node
// with its values) serves the same: a decision and a pod mutation go
// through the in-cluster webhook and the service answers. The suite's
// kustomize install is put back afterwards.
func TestHelmInstallServes(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	if _, err := os.Stat(filepath.Join(env.Root, "bin", "helm-v3.22.0", "helm")); err != nil {
		t.Fatalf("bin/helm-v3.22.0/helm: %v: run `make deps`", err)
	}
	uninstallKustomize(ctx, t)
	t.Cleanup(func() {
		if _, err := helm(ctx, "uninstall", "berth", "--namespace", "default", "--wait", "--timeout", "2m"); err != nil {
			t.Logf("helm uninstall: %v", err)
		}
		waitNamespaceGone(ctx, t, BerthNamespace)
		require.NoError(t, installKustomize(ctx, env), "putting the kustomize install back")
	})
	values := filepath.Join(t.TempDir(), "placement.yaml")
	require.NoError(t, os.WriteFile(values, []byte(placementValues), 0o644))
	start := time.Now()
	out, err := helm(ctx, "install", "berth", filepath.Join(env.Root, "deploy", "chart", "berth"), "--namespace", "default", "-f", values)
	require.NoError(t, err, out)
	require.NoError(t, waitInstalled(ctx, env, 3*time.Minute))
	t.Logf("helm install: berth serving in %s", time.Since(start).Round(100*time.Millisecond))

	ns := newNamespace(t, "helm")
	c := berthClient(t)
	applyTestEngineRuntime(t)
	newChatService(t, c, ns, "chat", 1)
	isvc := waitServiceReady(t, c, ns, "chat", 3*time.Minute)
	require.Equal(t, "ClusterServingRuntime/berth-test-engine-rt", isvc.Annotations[v1beta1.AnnotationResolvedRuntime])
	pod, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "chat-engine-0", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, pod.Annotations[v1beta1.AnnotationRevision])
	reply := chatFromPod(t, ns, "client", "http://chat."+ns+".svc")
	require.Contains(t, reply, "berth-test-engine")
}

// waitNamespaceGone waits until a deleted namespace is gone.
func waitNamespaceGone(ctx context.Context, t *testing.T, name string) {
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := env.Kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err != nil, nil
	})
}
