package realnode

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/devenv"
)

// webhookProbe is an object the validating webhook checks: a dry-run of
// it succeeds once the apiserver reaches the webhook.
var webhookProbe = filepath.Join("..", "..", "deploy", "test-engine", "berth-test-engine-rt.yaml")

// BerthNamespace is where the manifests install berth.
const BerthNamespace = "berth-system"

// berthDeployments are berth's Deployments, as deploy/base names them.
var berthDeployments = []string{"berth-webhook", "berth-reconciler"}

// kubectl runs the cluster's kubectl with the admin kubeconfig.
func kubectl(ctx context.Context, e *devenv.Env, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.Binaries.Kubectl, append([]string{"--kubeconfig", e.Cluster.KubeconfigPath}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// installKustomize installs berth as users do, `kubectl apply
// --server-side -k`, through testdata/kustomize (deploy, placed on the real
// node), and waits until every replica of the webhook and the reconciler
// is available and the webhooks have their CA.
func installKustomize(ctx context.Context, e *devenv.Env) error {
	dir, err := filepath.Abs(filepath.Join("testdata", "kustomize"))
	if err != nil {
		return err
	}
	if _, err := kubectl(ctx, e, "apply", "--server-side", "--force-conflicts", "-k", dir); err != nil {
		return err
	}
	return waitInstalled(ctx, e, 3*time.Minute)
}

// waitInstalled waits for berth's Deployments to have every replica
// updated and available, and for caBundle in both webhook configurations.
func waitInstalled(ctx context.Context, e *devenv.Env, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range berthDeployments {
			d, err := e.Kube.AppsV1().Deployments(BerthNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if !deploymentDone(d) {
				last = fmt.Sprintf("%s: %d/%d updated, %d available", name, d.Status.UpdatedReplicas, *d.Spec.Replicas, d.Status.AvailableReplicas)
				return false, nil
			}
		}
		m, err := e.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "berth-mutating", metav1.GetOptions{})
		if err != nil || len(m.Webhooks) == 0 || len(m.Webhooks[0].ClientConfig.CABundle) == 0 {
			last = "berth-mutating has no caBundle yet"
			return false, nil
		}
		// The apiserver reaches the webhook through its Service: available
		// replicas are not enough until kube-proxy has their endpoints.
		if out, err := kubectl(ctx, e, "apply", "--server-side", "--dry-run=server", "-f", webhookProbe); err != nil {
			last = "a dry-run through the webhook failed: " + strings.TrimSpace(out)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		pods, _ := kubectl(ctx, e, "get", "pods", "-n", BerthNamespace, "-o", "wide")
		return fmt.Errorf("berth not installed within %s (%s): %w\n%s", timeout, last, err, pods)
	}
	return nil
}

func deploymentDone(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want &&
		d.Status.AvailableReplicas == want && d.Status.Replicas == want
}
