package main

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/internal/loadwebhook"
	"github.com/berthdev/berth/webhook/server"
)

// The no-op webhook: berth-webhook's server and AdmissionReview codec
// (internal/loadwebhook) answering every pod "allowed" without looking at
// it, in a child process of this tool (-serve-noop), registered for pods
// labelled noopLabel. Its path is the API server's cost of calling any
// mutating webhook, apart from what berth's pod handler adds.
const (
	noopLabel   = "berth.dev/admission-load-noop"
	noopPath    = "/noop"
	noopConfig  = "berth-admission-load-noop"
	noopProcess = "noop-webhook"
	// noopWebhookName names it in the API server's metrics.
	noopWebhookName = "noop.admission-load.berth.dev"
)

// serveNoop is the child: it serves noopPath with the certificate in
// certDir.
func serveNoop(certDir string) error {
	return loadwebhook.Serve(certDir, []server.Route{{Path: noopPath, Name: "noop", Decide: loadwebhook.Allow}})
}

// startNoop starts the child with a new certificate under dir and
// registers it with the API server for pods labelled noopLabel in the
// tool's namespace.
func startNoop(ctx context.Context, kube kubernetes.Interface, dir string) (*loadwebhook.Child, error) {
	c, err := loadwebhook.Start(dir, []string{"-serve-noop", dir}, nil)
	if err != nil {
		return nil, fmt.Errorf("the no-op webhook: %w", err)
	}
	if err := registerNoop(ctx, kube, "https://"+c.Addr+noopPath, c.CA); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
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
