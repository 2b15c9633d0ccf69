package install

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// WebhookEndpoint is a webhook server running as a local process (or in
// the test binary) on 127.0.0.1: the apiserver reaches it by URL, trusting
// CABundle (PEM) for its serving certificate.
type WebhookEndpoint struct {
	// BaseURL such as https://127.0.0.1:9443; each webhook's path is appended.
	BaseURL  string
	CABundle []byte
}

// PointAt rewrites clientConfig of every webhook to BaseURL + path: a
// service reference keeps its path (deploy/ manifests reference the
// in-cluster Service), a URL keeps its path and drops its host. The
// configuration is changed in place.
func (e WebhookEndpoint) PointAt(cc *admissionregistrationv1.WebhookClientConfig) error {
	base, err := url.Parse(e.BaseURL)
	if err != nil || base.Scheme != "https" || base.Host == "" {
		return fmt.Errorf("webhook endpoint %q: want https://127.0.0.1:<port>", e.BaseURL)
	}
	path := ""
	switch {
	case cc.Service != nil && cc.Service.Path != nil:
		path = *cc.Service.Path
	case cc.URL != nil:
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return fmt.Errorf("webhook clientConfig.url %q: %w", *cc.URL, err)
		}
		path = u.Path
	}
	full := strings.TrimSuffix(e.BaseURL, "/") + "/" + strings.TrimPrefix(path, "/")
	cc.Service = nil
	cc.URL = &full
	cc.CABundle = append([]byte(nil), e.CABundle...)
	return nil
}

// RegisterWebhooks points every webhook of the given configurations at e
// and creates them, replacing configurations of the same name. Call it
// after the webhook process answers and before applying the objects it
// admits. (There is no wait for the apiserver to start calling it:
// registration takes effect within about a second; callers that need
// certainty probe with a dry-run create.)
func RegisterWebhooks(ctx context.Context, kube kubernetes.Interface, e WebhookEndpoint,
	mutating []admissionregistrationv1.MutatingWebhookConfiguration,
	validating []admissionregistrationv1.ValidatingWebhookConfiguration) error {
	for i := range mutating {
		cfg := mutating[i].DeepCopy()
		for j := range cfg.Webhooks {
			if err := e.PointAt(&cfg.Webhooks[j].ClientConfig); err != nil {
				return fmt.Errorf("MutatingWebhookConfiguration %s webhook %s: %w", cfg.Name, cfg.Webhooks[j].Name, err)
			}
		}
		api := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
		if err := api.Delete(ctx, cfg.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replace MutatingWebhookConfiguration %s: %w", cfg.Name, err)
		}
		cfg.ResourceVersion = ""
		if _, err := api.Create(ctx, cfg, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("create MutatingWebhookConfiguration %s: %w", cfg.Name, err)
		}
	}
	for i := range validating {
		cfg := validating[i].DeepCopy()
		for j := range cfg.Webhooks {
			if err := e.PointAt(&cfg.Webhooks[j].ClientConfig); err != nil {
				return fmt.Errorf("ValidatingWebhookConfiguration %s webhook %s: %w", cfg.Name, cfg.Webhooks[j].Name, err)
			}
		}
		api := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
		if err := api.Delete(ctx, cfg.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("replace ValidatingWebhookConfiguration %s: %w", cfg.Name, err)
		}
		cfg.ResourceVersion = ""
		if _, err := api.Create(ctx, cfg, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("create ValidatingWebhookConfiguration %s: %w", cfg.Name, err)
		}
	}
	return nil
}

// WebhookConfigurations picks the Mutating- and ValidatingWebhookConfigurations
// out of objs (e.g. ReadObjects("deploy/base/webhooks.yaml")) as typed
// objects, ready for RegisterWebhooks. Other kinds are ignored.
func WebhookConfigurations(objs []Object) ([]admissionregistrationv1.MutatingWebhookConfiguration, []admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var mut []admissionregistrationv1.MutatingWebhookConfiguration
	var val []admissionregistrationv1.ValidatingWebhookConfiguration
	for _, o := range objs {
		if o.GroupVersionKind().GroupVersion() != admissionregistrationv1.SchemeGroupVersion {
			continue
		}
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			var m admissionregistrationv1.MutatingWebhookConfiguration
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &m, true); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", o, err)
			}
			mut = append(mut, m)
		case "ValidatingWebhookConfiguration":
			var v admissionregistrationv1.ValidatingWebhookConfiguration
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &v, true); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", o, err)
			}
			val = append(val, v)
		}
	}
	return mut, val, nil
}
