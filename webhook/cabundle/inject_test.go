package cabundle

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/retry"

	"github.com/berthdev/berth/certs"
)

func TestInject(t *testing.T) {
	ca := testCA(t)
	oldCA := testCA(t)
	mwcResource := schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}
	vwcResource := schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}

	tests := []struct {
		name           string
		objects        []runtime.Object
		mutating       string
		validating     string
		caPEM          []byte
		reactor        func(conflictsLeft *int) k8stesting.ReactionFunc // on patch, nil: none
		wantErr        []string
		wantPatches    int
		wantMutating   []string // webhook names that must carry ca afterwards
		wantValidating []string
		wantUntouched  []string // webhook names (either kind) that keep their old bundle
	}{
		{
			name:           "fresh configurations get the CA on every webhook",
			objects:        []runtime.Object{mutating("berth-mutating", nil, "pods.mutate.ome.io", "inferenceservices.mutate.ome.io"), validating("berth-validating", nil, "a.validate.ome.io", "b.validate.ome.io", "c.validate.ome.io")},
			mutating:       "berth-mutating",
			validating:     "berth-validating",
			caPEM:          ca,
			wantPatches:    2,
			wantMutating:   []string{"pods.mutate.ome.io", "inferenceservices.mutate.ome.io"},
			wantValidating: []string{"a.validate.ome.io", "b.validate.ome.io", "c.validate.ome.io"},
		},
		{
			name:           "rotation replaces an old bundle",
			objects:        []runtime.Object{mutating("berth-mutating", oldCA, "pods.mutate.ome.io"), validating("berth-validating", oldCA, "a.validate.ome.io")},
			mutating:       "berth-mutating",
			validating:     "berth-validating",
			caPEM:          ca,
			wantPatches:    2,
			wantMutating:   []string{"pods.mutate.ome.io"},
			wantValidating: []string{"a.validate.ome.io"},
		},
		{
			name:           "already injected: nothing is written",
			objects:        []runtime.Object{mutating("berth-mutating", ca, "pods.mutate.ome.io"), validating("berth-validating", ca, "a.validate.ome.io")},
			mutating:       "berth-mutating",
			validating:     "berth-validating",
			caPEM:          ca,
			wantPatches:    0,
			wantMutating:   []string{"pods.mutate.ome.io"},
			wantValidating: []string{"a.validate.ome.io"},
		},
		{
			name:          "only the mutating configuration named",
			objects:       []runtime.Object{mutating("berth-mutating", nil, "pods.mutate.ome.io"), validating("berth-validating", oldCA, "a.validate.ome.io")},
			mutating:      "berth-mutating",
			caPEM:         ca,
			wantPatches:   1,
			wantMutating:  []string{"pods.mutate.ome.io"},
			wantUntouched: []string{"a.validate.ome.io"},
		},
		{
			name:         "conflicts are retried",
			objects:      []runtime.Object{mutating("berth-mutating", nil, "pods.mutate.ome.io")},
			mutating:     "berth-mutating",
			caPEM:        ca,
			reactor:      conflictTimes(mwcResource, 2),
			wantPatches:  3,
			wantMutating: []string{"pods.mutate.ome.io"},
		},
		{
			name:        "endless conflicts give up with the name",
			objects:     []runtime.Object{validating("berth-validating", nil, "a.validate.ome.io")},
			validating:  "berth-validating",
			caPEM:       ca,
			reactor:     conflictTimes(vwcResource, 1000),
			wantPatches: retry.DefaultBackoff.Steps,
			wantErr:     []string{`ValidatingWebhookConfiguration "berth-validating"`, "kept changing"},
		},
		{
			name:           "missing configuration names kind, name and fix",
			objects:        []runtime.Object{validating("berth-validating", nil, "a.validate.ome.io")},
			mutating:       "berth-mutating",
			validating:     "berth-validating",
			caPEM:          ca,
			wantPatches:    1, // the validating one is still injected
			wantErr:        []string{`MutatingWebhookConfiguration "berth-mutating" not found`, "kubectl apply -k deploy"},
			wantValidating: []string{"a.validate.ome.io"},
		},
		{
			name:     "forbidden explains the RBAC fix",
			objects:  []runtime.Object{mutating("berth-mutating", nil, "pods.mutate.ome.io")},
			mutating: "berth-mutating",
			caPEM:    ca,
			reactor: func(*int) k8stesting.ReactionFunc {
				return func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(mwcResource, "berth-mutating", nil)
				}
			},
			wantPatches: 1,
			wantErr:     []string{`MutatingWebhookConfiguration "berth-mutating"`, "needs get and patch"},
		},
		{
			name:    "no names",
			caPEM:   ca,
			wantErr: []string{"no webhook configuration named"},
		},
		{
			name:     "a key instead of a certificate",
			mutating: "berth-mutating",
			caPEM:    []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
			wantErr:  []string{"not a PEM certificate bundle", "ca.crt"},
		},
		{
			name:     "empty bundle",
			mutating: "berth-mutating",
			wantErr:  []string{"not a PEM certificate bundle"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.objects...)
			if tc.reactor != nil {
				left := 0
				client.PrependReactor("patch", "*", tc.reactor(&left))
			}
			err := Inject(context.Background(), client, tc.mutating, tc.validating, tc.caPEM)
			if len(tc.wantErr) > 0 {
				require.Error(t, err)
				for _, want := range tc.wantErr {
					assert.Contains(t, err.Error(), want)
				}
			} else {
				require.NoError(t, err)
			}
			patches := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "patch" {
					patches++
				}
			}
			assert.Equal(t, tc.wantPatches, patches, "patch calls")

			bundles := currentBundles(t, client)
			for _, n := range tc.wantMutating {
				assert.Equal(t, string(tc.caPEM), string(bundles["m/"+n]), "mutating webhook %s", n)
			}
			for _, n := range tc.wantValidating {
				assert.Equal(t, string(tc.caPEM), string(bundles["v/"+n]), "validating webhook %s", n)
			}
			for _, n := range tc.wantUntouched {
				assert.Equal(t, string(oldCA), string(bundles["v/"+n]), "webhook %s must keep its bundle", n)
			}
		})
	}
}

// TestInjectKeepsOtherFields checks that the patch touches caBundle only: the
// service reference, rules and selectors of each webhook survive.
func TestInjectKeepsOtherFields(t *testing.T) {
	ca := testCA(t)
	before := mutating("berth-mutating", nil, "pods.mutate.ome.io", "inferenceservices.mutate.ome.io")
	client := fake.NewClientset(before.DeepCopy())
	require.NoError(t, Inject(context.Background(), client, "berth-mutating", "", ca))

	after, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), "berth-mutating", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, after.Webhooks, len(before.Webhooks))
	for i := range before.Webhooks {
		want := before.Webhooks[i].DeepCopy()
		want.ClientConfig.CABundle = ca
		assert.Equal(t, *want, after.Webhooks[i])
	}
}

// conflictTimes makes the first n patches of resource fail with a conflict.
func conflictTimes(resource schema.GroupResource, n int) func(*int) k8stesting.ReactionFunc {
	return func(count *int) k8stesting.ReactionFunc {
		return func(k8stesting.Action) (bool, runtime.Object, error) {
			if *count < n {
				*count++
				return true, nil, apierrors.NewConflict(resource, "x", nil)
			}
			return false, nil, nil
		}
	}
}

func currentBundles(t *testing.T, client *fake.Clientset) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	ms, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, c := range ms.Items {
		for _, w := range c.Webhooks {
			out["m/"+w.Name] = w.ClientConfig.CABundle
		}
	}
	vs, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, c := range vs.Items {
		for _, w := range c.Webhooks {
			out["v/"+w.Name] = w.ClientConfig.CABundle
		}
	}
	return out
}

func mutating(name string, ca []byte, hooks ...string) *admissionregistrationv1.MutatingWebhookConfiguration {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}}
	policy := admissionregistrationv1.Fail
	for _, h := range hooks {
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name:          h,
			ClientConfig:  clientConfig(h, ca),
			FailurePolicy: &policy,
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "ome.io/inferenceservice", Operator: metav1.LabelSelectorOpExists},
			}},
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	return cfg
}

func validating(name string, ca []byte, hooks ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}}
	for _, h := range hooks {
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: h, ClientConfig: clientConfig(h, ca), AdmissionReviewVersions: []string{"v1"},
		})
	}
	return cfg
}

func clientConfig(hook string, ca []byte) admissionregistrationv1.WebhookClientConfig {
	path := "/" + hook
	return admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Namespace: "berth-system", Name: "berth-webhook", Path: &path},
		CABundle: ca,
	}
}

func testCA(t *testing.T) []byte {
	t.Helper()
	b, err := certs.Generate([]string{"berth-webhook.berth-system.svc"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour, time.Now())
	require.NoError(t, err)
	return b.CACert
}
