package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/internal/loadwebhook"
	"github.com/berthdev/berth/webhook/admission"
	"github.com/berthdev/berth/webhook/server"
)

// The reference webhooks: berth-webhook's server and AdmissionReview codec
// (internal/loadwebhook) in one child process of this tool (-serve-references),
// registered for pods labelled for each:
//
//   - noop answers every pod "allowed" without looking at it: the API
//     server's cost of calling any mutating webhook;
//   - replay answers every pod with one patch written before the run,
//     which makes the pod the one berth's webhook composed (the probe's,
//     as stored: its annotations added and its spec replaced whole, the
//     shape of berth's patch), without reading the request: the API
//     server's cost of a webhook that returns this patch, whoever computes
//     it.
//
// So noop − without is what any webhook costs a create, replay − noop what
// the API server charges for applying berth's answer, and with − replay
// what berth's handler adds by computing it.
const (
	noopLabel   = "berth.dev/admission-load-noop"
	replayLabel = "berth.dev/admission-load-replay"
	noopPath    = "/noop"
	replayPath  = "/replay"
	refsConfig  = "berth-admission-load-references"
	refsProcess = "ref-webhooks"
	// noopWebhookName and replayWebhookName name them in the API
	// server's metrics.
	noopWebhookName   = "noop.admission-load.berth.dev"
	replayWebhookName = "replay.admission-load.berth.dev"
	// replayFile, in the child's certificate folder, holds replay's patch.
	replayFile = "replay-patch.json"
)

// serveReferences is the child: it serves noopPath and replayPath with the
// certificate and the patch in dir.
func serveReferences(dir string) error {
	p, err := os.ReadFile(filepath.Join(dir, replayFile))
	if err != nil {
		return err
	}
	replay := func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return admission.Patched(p)
	}
	return loadwebhook.Serve(dir, []server.Route{
		{Path: noopPath, Name: "noop", Decide: loadwebhook.Allow},
		{Path: replayPath, Name: "replay", Decide: replay},
	})
}

// replayPatch is the JSON patch that makes a pod with the tool's
// skeleton's metadata the pod berth composed (stored, as the API server
// returned it): its annotations set and its spec replaced whole, the two
// operations of berth's own patch on a skeleton pod, in its order
// (TestCapturedPodReview in webhook/handlers). The service account's token
// volume in stored's spec stays: the API server's ServiceAccount
// admission, run again after a webhook's change, leaves a pod that mounts
// one alone.
func replayPatch(stored *corev1.Pod) ([]byte, error) {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	return json.Marshal([]op{
		{"add", "/metadata/annotations", stored.Annotations},
		{"replace", "/spec", stored.Spec},
	})
}

// startReferences writes replay's patch (from stored) and a new
// certificate under dir, starts the child and registers both webhooks
// with the API server for pods labelled for them in the tool's namespace.
func startReferences(ctx context.Context, kube kubernetes.Interface, dir string, stored *corev1.Pod) (*loadwebhook.Child, error) {
	p, err := replayPatch(stored)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, replayFile), p, 0o600); err != nil {
		return nil, err
	}
	c, err := loadwebhook.Start(dir, []string{"-serve-references", dir}, nil)
	if err != nil {
		return nil, fmt.Errorf("the reference webhooks: %w", err)
	}
	if err := registerReferences(ctx, kube, "https://"+c.Addr, c.CA); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// registerReferences registers base's two paths for pod creates labelled
// for each in the tool's namespace, with berth's pod webhook's failure
// policy and timeout, and waits until a dry-run create reaches each.
func registerReferences(ctx context.Context, kube kubernetes.Interface, base string, ca []byte) error {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: refsConfig},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			referenceWebhook(noopWebhookName, base+noopPath, noopLabel, ca),
			referenceWebhook(replayWebhookName, base+replayPath, replayLabel, ca),
		},
	}
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{FieldManager: fieldOwner}); err != nil {
		return fmt.Errorf("registering the reference webhooks: %w", err)
	}
	for name, label := range map[string]string{noopWebhookName: noopLabel, replayWebhookName: replayLabel} {
		if err := awaitCalled(ctx, kube, name, label); err != nil {
			return err
		}
	}
	return nil
}

func referenceWebhook(name, url, label string, ca []byte) admissionregistrationv1.MutatingWebhook {
	fail, none, never := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.NeverReinvocationPolicy
	return admissionregistrationv1.MutatingWebhook{
		Name:                    name,
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
		Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
		NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}},
		ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}},
		FailurePolicy:           &fail,
		SideEffects:             &none,
		ReinvocationPolicy:      &never,
		TimeoutSeconds:          ptr(int32(5)),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// awaitCalled dry-run creates a pod labelled label until the API server's
// metrics count a call to the webhook name (30 s at most).
func awaitCalled(ctx context.Context, kube kubernetes.Interface, name, label string) error {
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reference-probe", Labels: map[string]string{label: "true"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: engineImage}}},
	}
	deadline := time.Now().Add(30 * time.Second)
	for scrapeWebhookCalls(ctx, kube, name).count == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server does not call %s after 30s", name)
		}
		_, _ = kube.CoreV1().Pods(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}
