// Package cabundle registers the webhook's CA with the apiserver: it patches
// caBundle into berth's Mutating/ValidatingWebhookConfigurations, and, for
// self-managed installs without cert-manager, keeps the CA and serving
// certificate in a Secret shared by every replica.
package cabundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/berthdev/berth/certs"
)

// FieldManager names berth's writes in managedFields.
const FieldManager = "berth-webhook"

// Inject sets caBundle on every webhook of the named configurations (either
// may be empty, not both).
//
// It reads each configuration and sends a strategic merge patch that carries
// the resourceVersion it read: a webhook added concurrently (another replica,
// a kubectl apply) turns into a conflict, and the read-patch cycle is retried,
// so no webhook is left without the CA. Configurations that already carry
// caPEM are not written at all, so replicas starting together do not churn.
// Only get and patch are needed, which the self-managed RBAC grants on
// exactly these two names.
func Inject(ctx context.Context, client kubernetes.Interface, mutatingName, validatingName string, caPEM []byte) error {
	if mutatingName == "" && validatingName == "" {
		return errors.New("cabundle: no webhook configuration named; pass the MutatingWebhookConfiguration and/or ValidatingWebhookConfiguration names (berth-mutating, berth-validating)")
	}
	if _, err := certs.ParseCertificates(caPEM); err != nil {
		return fmt.Errorf("cabundle: caBundle is not a PEM certificate bundle: %w; pass the CA certificate (ca.crt), not the key", err)
	}
	var errs []error
	if mutatingName != "" {
		mwc := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
		errs = append(errs, injectOne(ctx, "MutatingWebhookConfiguration", mutatingName, caPEM,
			func(ctx context.Context) (string, []webhookCA, error) {
				cfg, err := mwc.Get(ctx, mutatingName, metav1.GetOptions{})
				if err != nil {
					return "", nil, err
				}
				hooks := make([]webhookCA, len(cfg.Webhooks))
				for i, w := range cfg.Webhooks {
					hooks[i] = webhookCA{Name: w.Name, CABundle: w.ClientConfig.CABundle}
				}
				return cfg.ResourceVersion, hooks, nil
			},
			func(ctx context.Context, patch []byte) error {
				_, err := mwc.Patch(ctx, mutatingName, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
				return err
			}))
	}
	if validatingName != "" {
		vwc := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
		errs = append(errs, injectOne(ctx, "ValidatingWebhookConfiguration", validatingName, caPEM,
			func(ctx context.Context) (string, []webhookCA, error) {
				cfg, err := vwc.Get(ctx, validatingName, metav1.GetOptions{})
				if err != nil {
					return "", nil, err
				}
				hooks := make([]webhookCA, len(cfg.Webhooks))
				for i, w := range cfg.Webhooks {
					hooks[i] = webhookCA{Name: w.Name, CABundle: w.ClientConfig.CABundle}
				}
				return cfg.ResourceVersion, hooks, nil
			},
			func(ctx context.Context, patch []byte) error {
				_, err := vwc.Patch(ctx, validatingName, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
				return err
			}))
	}
	return errors.Join(errs...)
}

// webhookCA is the part of a webhook entry Inject reads and writes.
type webhookCA struct {
	Name     string
	CABundle []byte
}

// injectOne runs the read-patch cycle for one configuration, retrying on
// conflicts with client-go's default backoff.
func injectOne(ctx context.Context, kind, name string, caPEM []byte,
	get func(context.Context) (string, []webhookCA, error),
	patch func(context.Context, []byte) error,
) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		resourceVersion, hooks, err := get(ctx)
		if err != nil {
			return err
		}
		body, changed, err := buildPatch(resourceVersion, hooks, caPEM)
		if err != nil || !changed {
			return err
		}
		return patch(ctx, body)
	})
	if err == nil {
		return nil
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("cabundle: %s %q not found; apply the berth manifests first (kubectl apply -k deploy)", kind, name)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("cabundle: not allowed to update %s %q: %w; the webhook's ServiceAccount needs get and patch on it (deploy/overlays/self-managed grants them)", kind, name, err)
	case apierrors.IsConflict(err):
		return fmt.Errorf("cabundle: %s %q kept changing while caBundle was being set (%w); it is retried at the next start or rotation", kind, name, err)
	default:
		return fmt.Errorf("cabundle: setting caBundle on %s %q: %w", kind, name, err)
	}
}

// buildPatch returns the strategic merge patch that sets caPEM on every
// webhook whose caBundle differs, and whether there is anything to change.
// webhooks merge by name in admissionregistration/v1, so the patch touches
// only caBundle and leaves everything else of each entry alone.
func buildPatch(resourceVersion string, hooks []webhookCA, caPEM []byte) ([]byte, bool, error) {
	type clientConfig struct {
		CABundle []byte `json:"caBundle"`
	}
	type webhook struct {
		Name         string       `json:"name"`
		ClientConfig clientConfig `json:"clientConfig"`
	}
	type metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	}
	var patch struct {
		Metadata metadata  `json:"metadata"`
		Webhooks []webhook `json:"webhooks"`
	}
	patch.Metadata.ResourceVersion = resourceVersion
	for _, h := range hooks {
		if !bytes.Equal(h.CABundle, caPEM) {
			patch.Webhooks = append(patch.Webhooks, webhook{Name: h.Name, ClientConfig: clientConfig{CABundle: caPEM}})
		}
	}
	if len(patch.Webhooks) == 0 {
		return nil, false, nil
	}
	body, err := json.Marshal(patch)
	return body, true, err
}
