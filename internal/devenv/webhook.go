// berthwebhook plugs the berth webhook into the local environment:
// importing it registers a harness Component that builds cmd/berth-webhook,
// runs it as a process next to the control plane with a self-signed
// certificate for 127.0.0.1, and registers deploy/base/webhooks.yaml with
// the apiserver pointing at it. The e2e suite and `berth demo` import it.
package devenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/install"
)

// Webhook is what a started webhook exposes to tests.
type Webhook struct {
	// CertDir holds ca.crt, tls.crt and tls.key; the process reloads the
	// pair when the files change (the rotation test rewrites them).
	CertDir    string
	BaseURL    string // https://127.0.0.1:<port>
	ProbeURL   string // http://127.0.0.1:<port>
	Mutating   []admissionregistrationv1.MutatingWebhookConfiguration
	Validating []admissionregistrationv1.ValidatingWebhookConfiguration
	Process    *cluster.Process
}

// Started is the webhook of the last environment started in this process.
var Started *Webhook

func init() {
	Register(Component{Name: "berth-webhook", Start: start})
}

func start(ctx context.Context, env *Env) error {
	bin := filepath.Join(env.Root, "bin", "berth-webhook")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/berth-webhook")
	build.Dir = env.Root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build cmd/berth-webhook: %v\n%s", err, out)
	}
	ports, err := cluster.FreePorts(2)
	if err != nil {
		return err
	}
	w := &Webhook{
		CertDir:  filepath.Join(env.Cluster.RunDir, "berth-webhook-certs"),
		BaseURL:  "https://127.0.0.1:" + strconv.Itoa(ports[0]),
		ProbeURL: "http://127.0.0.1:" + strconv.Itoa(ports[1]),
	}
	args := []string{
		"--kubeconfig", env.Cluster.KubeconfigPath,
		"--cert-dir", w.CertDir,
		"--self-signed", "--dns-names=", "--ip-addresses=127.0.0.1",
		// The configurations are registered below, once the CA exists.
		"--mutating-config=", "--validating-config=",
		"--listen", "127.0.0.1:" + strconv.Itoa(ports[0]),
		"--probe-listen", "127.0.0.1:" + strconv.Itoa(ports[1]),
		"--log-level", "debug",
		// Rotation tests rewrite the files a few seconds apart; poll faster
		// than the production default so every rewrite is seen.
		"--cert-check-interval", "1s",
	}
	client := &http.Client{Timeout: 2 * time.Second}
	ready := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.ProbeURL+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz answered %s", resp.Status)
		}
		return nil
	}
	if w.Process, err = env.Cluster.StartProcess(ctx, "berth-webhook", bin, args, ready); err != nil {
		return err
	}
	ca, err := os.ReadFile(filepath.Join(w.CertDir, "ca.crt"))
	if err != nil {
		return fmt.Errorf("the webhook wrote no CA: %w", err)
	}
	objs, err := install.ReadObjects(filepath.Join(env.Root, "deploy", "base", "webhooks.yaml"))
	if err != nil {
		return err
	}
	if w.Mutating, w.Validating, err = install.WebhookConfigurations(objs); err != nil {
		return err
	}
	if err := install.RegisterWebhooks(ctx, env.Kube, install.WebhookEndpoint{BaseURL: w.BaseURL, CABundle: ca}, w.Mutating, w.Validating); err != nil {
		return err
	}
	Started = w
	return waitCalled(ctx, env)
}

// waitCalled dry-runs an AcceleratorClass that only berth's webhook refuses
// (an Lt over a non-integer passes the CRD schema) until the apiserver's
// webhook manager has picked up the configuration: from then on every
// object applied goes through berth.
func waitCalled(ctx context.Context, env *Env) error {
	berth, err := versioned.NewForConfig(env.Cluster.RESTConfig())
	if err != nil {
		return err
	}
	probe := &v1beta1.AcceleratorClass{
		ObjectMeta: metav1.ObjectMeta{Name: "berth-webhook-probe"},
		Spec: v1beta1.AcceleratorClassSpec{Discovery: v1beta1.AcceleratorDiscovery{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.memory", Operator: corev1.NodeSelectorOpLt, Values: []string{"24Gi"}}},
		}}}},
	}
	deadline := time.Now().Add(30 * time.Second)
	var lastErr error
	for time.Now().Before(deadline) {
		_, lastErr = berth.OmeV1beta1().AcceleratorClasses().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if lastErr != nil && strings.Contains(lastErr.Error(), `admission webhook "acceleratorclasses.validate.ome.io" denied`) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("the apiserver does not call the berth webhook after 30s (last answer to a probe: %v)", lastErr)
}
