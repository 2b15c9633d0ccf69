// Command capture records the AdmissionReview the API server sends berth's
// pod webhook for the pod the reconciler creates, into
// webhook/handlers/testdata/podreview.json (BenchmarkPodAdmissionReview
// and TestCapturedPodReview read it). It is a one-off tool kept beside its
// output so the file can be captured again (the go tool skips testdata
// folders; run it by path from the repository root):
//
//	go run ./webhook/handlers/testdata/capture
//
// It starts the local control plane (internal/devenv/cluster, the binaries
// of `make deps`) with the API server's default admission plugins, so the
// ServiceAccount plugin runs as in a real cluster (cluster.Options.NodeIP;
// no node is started), registers a mutating webhook for pods carrying
// ome.io/inferenceservice that records each review's body and allows it,
// and creates the reconciler's pod (merge.GroupPod and merge.MarkPod, with
// the reconciler's user agent as field manager) for engine group 0 of the
// InferenceService team-a/chat. The API server decodes, defaults, records
// managedFields and runs its own admission plugins before calling the
// webhook, so the body is what berth's pod webhook receives.
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/merge"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "capture:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	root, err := cluster.RepoRoot(".")
	if err != nil {
		return err
	}
	bins, err := cluster.FindBinaries(root)
	if err != nil {
		return err
	}
	c, err := cluster.Start(ctx, cluster.Options{Binaries: bins, NodeIP: "127.0.0.1", Log: os.Stderr})
	if err != nil {
		return err
	}
	defer c.Stop()
	bodies := make(chan []byte, 1)
	url, caPEM, err := serve(bodies)
	if err != nil {
		return err
	}
	cfg := c.RESTConfig()
	cfg.UserAgent = "berth-reconciler" // the reconciler's field manager
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := register(ctx, kube, url, caPEM); err != nil {
		return err
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	svc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "team-a", UID: "6b0c8a52-3f4e-4c1d-9a57-2f1d0e8c9b10"}}
	pod := merge.GroupPod(svc, merge.ComponentTopology{Component: v1beta1.ComponentEngine, Replicas: 1}, 0, "", 0, merge.GroupPodOptions{})
	merge.MarkPod(pod, v1beta1.ComponentEngine, merge.GroupPodOptions{})
	// The ServiceAccount plugin refuses pods until the namespace's default
	// account exists (the controller-manager creates it). The create itself
	// then fails validation (the webhook adds no image): only the review
	// the API server sent is wanted.
	var body []byte
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods("team-a").Create(ctx, pod, metav1.CreateOptions{})
		select {
		case body = <-bodies:
			return true, nil
		default:
			fmt.Fprintln(os.Stderr, "capture: create:", err)
			return false, nil
		}
	})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	return os.WriteFile(filepath.Join(root, "webhook", "handlers", "testdata", "podreview.json"), out.Bytes(), 0o644)
}

// register points a mutating webhook for the service's pods at url.
func register(ctx context.Context, kube kubernetes.Interface, url string, caPEM []byte) error {
	none, fail := admissionregv1.SideEffectClassNone, admissionregv1.Fail
	cfg := &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "capture"},
		Webhooks: []admissionregv1.MutatingWebhook{{
			Name:                    "pods.capture.berth.dev",
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules:                   []admissionregv1.RuleWithOperations{{Operations: []admissionregv1.OperationType{admissionregv1.Create}, Rule: admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: v1beta1.LabelInferenceService, Operator: metav1.LabelSelectorOpExists}}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	_, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{})
	return err
}

// serve runs an HTTPS server on 127.0.0.1 that sends each review body to
// bodies and allows it; it returns the webhook URL and its CA.
func serve(bodies chan<- []byte) (string, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "capture"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
				http.Error(w, "not a review", http.StatusBadRequest)
				return
			}
			select {
			case bodies <- body:
			default:
			}
			review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
			review.Request = nil
			_ = json.NewEncoder(w).Encode(review)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return "https://" + ln.Addr().String() + "/mutate", caPEM, nil
}
