package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/devenv/kueue"
	"github.com/berthdev/berth/internal/devenv/process"
)

// StartKueue runs Kueue's controller manager (bin: sigs.k8s.io/kueue's
// cmd/kueue, which `make deps` builds into bin/kueue-<kueue.Version>/kueue)
// next to the control plane, as a control plane process: not restarted,
// reported by Died, stopped with the cluster. Call it once Kueue's CRDs
// (kueue.CRDs) are Established. It returns once the manager's /readyz
// answers: its webhook certificate is made and its webhook server listens.
// Not on an attached (kind) cluster.
//
// Kueue's manager always serves its webhooks, and without its internal
// certificate management it reads a metrics certificate from a fixed path
// under /etc. So it runs as Kueue installs itself: internalCertManagement
// on, with the namespace and the (empty) Secret it keeps the certificate
// in, which this creates; the manager writes the certificate into the
// Secret and its CA into the CRDs' conversion webhooks, and this copies the
// certificate into the manager's certificate folder (mountKueueCerts: a
// pod would mount the Secret there). No webhook configuration is installed and the
// Service the conversion webhooks name has no endpoint here: the apiserver
// never calls Kueue, so objects are neither defaulted nor validated by its
// webhooks, and the kinds with a conversion webhook (ClusterQueue,
// LocalQueue, Workload, Cohort, MultiKueueCluster) are usable in their
// stored version, v1beta2, only. ResourceFlavor has no conversion webhook:
// v1beta1 and v1beta2 both work. No leader election, no metrics server, no
// visibility server (VisibilityOnDemand off); the webhook server and the
// health probes listen on loopback. It acts with the admin's credentials.
func (c *Cluster) StartKueue(ctx context.Context, bin string) error {
	if c.attached != nil {
		return errors.New("Kueue's manager runs only next to a local control plane this package started, not on an attached cluster")
	}
	if err := c.kueueNamespace(ctx); err != nil {
		return err
	}
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	webhookPort, probePort := ports[0], ports[1]
	certDir := filepath.Join(c.RunDir, "kueue-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	config := filepath.Join(c.RunDir, "kueue-config.yaml")
	if err := os.WriteFile(config, kueueConfig(webhookPort, probePort, certDir), 0o644); err != nil {
		return fmt.Errorf("write Kueue's configuration: %w", err)
	}
	t := time.Now()
	p, err := c.start("kueue", bin, []string{"--config=" + config, "--kubeconfig=" + c.KubeconfigPath})
	if err != nil {
		return err
	}
	if err := c.mountKueueCerts(ctx, certDir); err != nil {
		return err
	}
	// Each probe gives up after 5 s: the manager serves its probes first
	// from a bootstrap manager that makes the certificate, then from the
	// real one, and a request caught between the two gets no answer.
	probe := &http.Client{Timeout: 5 * time.Second}
	if err := p.WaitReady(ctx, c.opts.Timeout, process.HTTPReady(probe, "http://127.0.0.1:"+strconv.Itoa(probePort)+"/readyz", "")); err != nil {
		return err
	}
	c.record("kueue", t)
	return nil
}

// kueueNamespace creates Kueue's namespace and the empty Secret its
// internal certificate management fills.
func (c *Cluster) kueueNamespace(ctx context.Context) error {
	kube, err := c.Clientset()
	if err != nil {
		return err
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueue.Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", kueue.Namespace, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: kueue.WebhookSecretName, Namespace: kueue.Namespace}}
	_, err = kube.CoreV1().Secrets(kueue.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s/%s: %w", kueue.Namespace, kueue.WebhookSecretName, err)
	}
	return nil
}

// mountKueueCerts does what the kubelet does for Kueue's pod, which mounts
// the webhook Secret at the certificate folder: once the manager has
// written its certificate into the Secret, the Secret's tls.crt and
// tls.key are written into certDir, where the manager waits for them
// before it serves. It gives up after the cluster's Timeout.
func (c *Cluster) mountKueueCerts(ctx context.Context, certDir string) error {
	kube, err := c.Clientset()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var last error
	for {
		s, err := kube.CoreV1().Secrets(kueue.Namespace).Get(ctx, kueue.WebhookSecretName, metav1.GetOptions{})
		if err == nil && len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 {
			for _, name := range []string{"tls.crt", "tls.key"} {
				if err := os.WriteFile(filepath.Join(certDir, name), s.Data[name], 0o600); err != nil {
					return err
				}
			}
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Kueue wrote no certificate into Secret %s/%s in %s (last error: %v)", kueue.Namespace, kueue.WebhookSecretName, c.opts.Timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// kueueConfig is the manager's configuration (config.kueue.x-k8s.io
// v1beta2; Kueue's config/components/manager/controller_manager_config.yaml
// changed as StartKueue says), with the Job integration only.
func kueueConfig(webhookPort, probePort int, certDir string) []byte {
	return fmt.Appendf(nil, `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %q
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: %s
  webhookSecretName: %s
featureGates:
  VisibilityOnDemand: false
integrations:
  frameworks:
  - batch/job
`, kueue.Namespace, probePort, webhookPort, certDir, kueue.WebhookServiceName, kueue.WebhookSecretName)
}
