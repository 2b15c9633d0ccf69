package main

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/certs"
	"github.com/berthdev/berth/internal/gcdefault"
	"github.com/berthdev/berth/webhook/admission"
	"github.com/berthdev/berth/webhook/app"
	"github.com/berthdev/berth/webhook/metrics"
	"github.com/berthdev/berth/webhook/server"
)

// The no-op webhook: berth-webhook's server and AdmissionReview codec
// (webhook/server, webhook/admission, its GOGC default) answering every
// pod "allowed" without looking at it, in a child process of this tool
// (-serve-noop), registered for pods labelled noopLabel. Its path is the
// API server's cost of calling any mutating webhook, apart from what
// berth's pod handler adds.
const (
	noopLabel   = "berth.dev/admission-load-noop"
	noopPath    = "/noop"
	noopConfig  = "berth-admission-load-noop"
	noopProcess = "noop-webhook"
	// noopWebhookName names it in the API server's metrics.
	noopWebhookName = "noop.admission-load.berth.dev"
)

// serveNoop is the child: it serves noopPath over TLS on a free loopback
// port with the certificate in certDir and prints "READY <addr>".
func serveNoop(certDir string) error {
	gcdefault.Set(app.DefaultGOGC, os.Getenv) // as berth-webhook
	reloader, err := certs.NewReloader(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"), time.Minute, slog.Default())
	if err != nil {
		return err
	}
	allow := func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return admission.Allowed()
	}
	routes := []server.Route{{Path: noopPath, Name: "noop", Decide: allow}}
	srv := server.New("127.0.0.1:0", server.Router(routes, func() bool { return true }, metrics.New(), slog.Default()), reloader.TLSConfig(), "", nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("READY %s\n", ln.Addr())
	return srv.Run(context.Background(), ln, nil, time.Second)
}

// noopWebhook is the running child.
type noopWebhook struct {
	cmd *exec.Cmd
}

func (n *noopWebhook) pid() int { return n.cmd.Process.Pid }

func (n *noopWebhook) stop() { _ = n.cmd.Process.Kill(); _ = n.cmd.Wait() }

// startNoop starts the child with a new certificate under dir and
// registers it with the API server for pods labelled noopLabel in the
// tool's namespace.
func startNoop(ctx context.Context, kube kubernetes.Interface, dir string) (*noopWebhook, error) {
	bundle, err := certs.Generate(nil, []net.IP{net.ParseIP("127.0.0.1")}, 24*time.Hour, time.Now())
	if err != nil {
		return nil, err
	}
	if err := bundle.WriteFiles(dir); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-serve-noop", dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n := &noopWebhook{cmd: cmd}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY ") {
		n.stop()
		return nil, fmt.Errorf("the no-op webhook did not start: %q %v", line, err)
	}
	addr := strings.TrimSpace(strings.TrimPrefix(line, "READY "))
	if err := registerNoop(ctx, kube, "https://"+addr+noopPath, bundle.CACert); err != nil {
		n.stop()
		return nil, err
	}
	return n, nil
}

// registerNoop registers url for pod creates labelled noopLabel in the
// tool's namespace, with berth's pod webhook's failure policy and
// timeout, and waits until a dry-run create reaches it.
func registerNoop(ctx context.Context, kube kubernetes.Interface, url string, ca []byte) error {
	fail, none, never := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.NeverReinvocationPolicy
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: noopConfig},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    noopWebhookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{noopLabel: "true"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			ReinvocationPolicy:      &never,
			TimeoutSeconds:          ptr(int32(5)),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{FieldManager: fieldOwner}); err != nil {
		return fmt.Errorf("registering the no-op webhook: %w", err)
	}
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "noop-probe", Labels: map[string]string{noopLabel: "true"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: engineImage}}},
	}
	deadline := time.Now().Add(30 * time.Second)
	for scrapeWebhookCalls(ctx, kube, noopWebhookName).count == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server does not call the no-op webhook after 30s")
		}
		_, _ = kube.CoreV1().Pods(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}
