package devenv

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/certs"
	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/devenv/process"
)

// WebhookComponent runs berth-webhook (cmd/berth-webhook) as a supervised
// process on 127.0.0.1 with a certificate for 127.0.0.1, registers the
// configurations of deploy/base/webhooks.yaml pointing at it, and returns
// once the apiserver calls it.
//
// The certificate is made here and written to CertDir before the process
// starts (the process only watches the files), so a restarted webhook
// serves a certificate of the CA the registered caBundle trusts.
type WebhookComponent struct {
	// Bin is the berth-webhook executable (FindComponent("berth-webhook")).
	Bin string

	// Set by Start.
	// CertDir holds ca.crt, tls.crt and tls.key; the process reloads the
	// pair when the files change (the rotation test rewrites them).
	CertDir    string
	BaseURL    string // https://127.0.0.1:<port>
	ProbeURL   string // http://127.0.0.1:<port>
	Mutating   []admissionregistrationv1.MutatingWebhookConfiguration
	Validating []admissionregistrationv1.ValidatingWebhookConfiguration
	// Process is the supervised process: Kill, Restarts, Deaths, LogPath.
	Process *process.Supervised
}

// Webhook returns the webhook component for the berth-webhook at bin.
func Webhook(bin string) *WebhookComponent { return &WebhookComponent{Bin: bin} }

// Name implements Component.
func (w *WebhookComponent) Name() string { return "berth-webhook" }

// Start implements Component.
func (w *WebhookComponent) Start(ctx context.Context, env *Env) error {
	ports, err := cluster.FreePorts(2)
	if err != nil {
		return err
	}
	w.BaseURL = "https://127.0.0.1:" + strconv.Itoa(ports[0])
	w.CertDir = filepath.Join(env.Cluster.RunDir, "berth-webhook-certs")
	bundle, err := certs.Generate(nil, []net.IP{net.ParseIP("127.0.0.1")}, 365*24*time.Hour, time.Now())
	if err != nil {
		return fmt.Errorf("webhook certificate: %w", err)
	}
	if err := bundle.WriteFiles(w.CertDir); err != nil {
		return err
	}
	proc := &ProcessComponent{name: w.Name(), Bin: w.Bin, ProbePort: ports[1], Args: []string{
		"--cert-dir", w.CertDir,
		// The certificate is in CertDir already; the configurations are
		// registered below, so the process injects no caBundle itself.
		"--self-signed=false", "--mutating-config=", "--validating-config=",
		"--listen", "127.0.0.1:" + strconv.Itoa(ports[0]),
		"--log-level", "debug",
		// Rotation tests rewrite the files a few seconds apart; poll faster
		// than the production default so every rewrite is seen.
		"--cert-check-interval", "1s",
	}}
	if err := proc.Start(ctx, env); err != nil {
		return err
	}
	w.ProbeURL, w.Process = proc.ProbeURL, proc.Process
	objs, err := Manifests("base/webhooks.yaml")
	if err != nil {
		return err
	}
	if w.Mutating, w.Validating, err = install.WebhookConfigurations(objs); err != nil {
		return err
	}
	endpoint := install.WebhookEndpoint{BaseURL: w.BaseURL, CABundle: bundle.CACert}
	if err := install.RegisterWebhooks(ctx, env.Kube, endpoint, w.Mutating, w.Validating); err != nil {
		return err
	}
	return w.WaitCalled(ctx, env)
}

// WaitCalled dry-runs an AcceleratorClass that only berth's webhook refuses
// (an Lt over a non-integer passes the CRD schema) until the apiserver
// relays the webhook's denial, for at most 30s: from then on every object
// applied goes through berth. Start uses it after registering; tests use
// it after a restart.
func (w *WebhookComponent) WaitCalled(ctx context.Context, env *Env) error {
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
