package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/certs"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/testing/e2eutil"
)

// The seam the berth webhook plugs into works against the real apiserver:
// a TLS server on 127.0.0.1 with a certificate from the certs package,
// registered through install.RegisterWebhooks from a service-style
// configuration (as deploy/base has), is called by the apiserver and its
// denial reaches the client. The server here is a stand-in that denies
// labelled ConfigMaps; it is not berth's webhook.
func TestWebhookSeam(t *testing.T) {
	ns := e2eutil.Namespace(t, env.Kube, "e2e-seam")
	bundle, err := certs.Generate(nil, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour, time.Now())
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(bundle.ServingCert, bundle.ServingKey)
	require.NoError(t, err)

	calls := make(chan string, 100)
	mux := http.NewServeMux()
	mux.HandleFunc("/validate/configmaps", func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		var cm corev1.ConfigMap
		_ = json.Unmarshal(review.Request.Object.Raw, &cm)
		calls <- cm.Name
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: cm.Labels["e2e.berth.dev/deny"] == ""}
		if !resp.Allowed {
			resp.Result = &metav1.Status{Message: "ConfigMap " + cm.Name + ": denied by the e2e seam webhook"}
		}
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(&review)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	path := "/validate/configmaps"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	cfg := admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-seam"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "configmaps.e2e.berth.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "berth-system", Name: "berth-webhook", Path: &path}},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	endpoint := install.WebhookEndpoint{BaseURL: "https://" + l.Addr().String(), CABundle: bundle.CACert}
	require.NoError(t, install.RegisterWebhooks(ctx, env.Kube, endpoint, nil, []admissionregistrationv1.ValidatingWebhookConfiguration{cfg}))
	t.Cleanup(func() {
		_ = env.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), "e2e-seam", metav1.DeleteOptions{})
	})

	// Registration reaches the apiserver's webhook manager within about a
	// second; probe with dry-run creates until the webhook answers.
	denied := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "deny-me", Namespace: ns, Labels: map[string]string{"e2e.berth.dev/deny": "yes"}}}
	var createErr error
	require.Eventually(t, func() bool {
		_, createErr = env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, denied, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return createErr != nil
	}, 20*time.Second, 200*time.Millisecond, "the apiserver never called the webhook")
	assert.Contains(t, createErr.Error(), `admission webhook "configmaps.e2e.berth.dev" denied the request: ConfigMap deny-me: denied by the e2e seam webhook`)

	_, err = env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "allow-me", Namespace: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	var seen []string
	for len(calls) > 0 {
		seen = append(seen, <-calls)
	}
	assert.Contains(t, strings.Join(seen, ","), "allow-me", "the allowed object went through the webhook too")
}
