package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/berthdev/berth/deploy"
)

func TestDecodeObjects(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string // Kind/name
		wantErr string
	}{
		{"multi-document with empty ones", "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\n# only a comment\n---\napiVersion: ome.io/v1beta1\nkind: AcceleratorClass\nmetadata: {name: b}\n",
			[]string{"ConfigMap/a", "AcceleratorClass/b"}, ""},
		{"json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x"}}`, []string{"Namespace/x"}, ""},
		{"missing kind", "apiVersion: v1\nmetadata: {name: a}\n", nil, "f.yaml: document 1: set apiVersion and kind"},
		{"missing name", "apiVersion: v1\nkind: ConfigMap\n", nil, "f.yaml: document 1 (ConfigMap): set metadata.name"},
		{"broken yaml names the document", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [\n", nil, "f.yaml: document 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := DecodeObjects([]byte(tc.in), "f.yaml")
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
				assert.Equal(t, "f.yaml", o.Source)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadObjectsFolderIsSortedAndSkipsKustomization(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"b.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
		"a.yml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata: {name: k}\n",
		"notes.txt":          "not yaml",
	}
	for n, c := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644))
	}
	objs, err := ReadObjects(dir)
	require.NoError(t, err)
	require.Len(t, objs, 2)
	assert.Equal(t, "a", objs[0].GetName())
	assert.Equal(t, "b", objs[1].GetName())
	assert.Equal(t, "ConfigMap/b ("+filepath.Join(dir, "b.yaml")+")", objs[1].String())
}

// Every CRD compiled into deploy.FS decodes (the environment applies them
// as read here), and the compiled-in copy is the repository's.
func TestRepositoryCRDsDecode(t *testing.T) {
	objs, err := ReadObjectsFS(deploy.FS, "crds", "deploy")
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	for _, o := range objs {
		assert.Equal(t, "CustomResourceDefinition", o.GetKind(), o.String())
		// berth's groups: ome.io (OME's kinds) and policy.berth.dev.
		assert.True(t, strings.HasPrefix(o.Source, "deploy/crds/ome.io_") || strings.HasPrefix(o.Source, "deploy/crds/policy.berth.dev_"), o.Source)
	}
	onDisk, err := ReadObjects(filepath.Join("..", "..", "..", "deploy", "crds"))
	require.NoError(t, err)
	assert.Len(t, onDisk, len(objs))
}

func TestReadObjectsFSNamesTheMissingFolder(t *testing.T) {
	_, err := ReadObjectsFS(fstest.MapFS{}, "runtimes", "deploy")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read manifests deploy/runtimes")
}

func TestPointAt(t *testing.T) {
	path := "/mutate/pods"
	url := "https://berth-webhook.berth-system.svc:443/validate/acceleratorclasses"
	ca := []byte("PEM")
	tests := []struct {
		name    string
		base    string
		in      admissionregistrationv1.WebhookClientConfig
		want    string
		wantErr string
	}{
		{"service reference keeps its path", "https://127.0.0.1:9443",
			admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "berth-webhook", Namespace: "berth-system", Path: &path}},
			"https://127.0.0.1:9443/mutate/pods", ""},
		{"url keeps its path, not its host", "https://127.0.0.1:9443/",
			admissionregistrationv1.WebhookClientConfig{URL: &url},
			"https://127.0.0.1:9443/validate/acceleratorclasses", ""},
		{"no path", "https://127.0.0.1:9443",
			admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "x", Namespace: "y"}},
			"https://127.0.0.1:9443/", ""},
		{"plain http is refused", "http://127.0.0.1:9443", admissionregistrationv1.WebhookClientConfig{URL: &url}, "", "want https://127.0.0.1:<port>"},
		{"no host", "https://", admissionregistrationv1.WebhookClientConfig{URL: &url}, "", "want https://127.0.0.1:<port>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc := tc.in
			err := WebhookEndpoint{BaseURL: tc.base, CABundle: ca}.PointAt(&cc)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, cc.URL)
			assert.Equal(t, tc.want, *cc.URL)
			assert.Nil(t, cc.Service, "a URL and a service reference are exclusive")
			assert.Equal(t, ca, cc.CABundle)
		})
	}
}

func TestWebhookConfigurations(t *testing.T) {
	objs, err := DecodeObjects([]byte(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: m}
webhooks:
- name: pods.mutate.ome.io
  clientConfig: {service: {namespace: berth-system, name: berth-webhook, path: /mutate/pods}}
  admissionReviewVersions: [v1]
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: v}
webhooks:
- name: a.validate.ome.io
  clientConfig: {service: {namespace: berth-system, name: berth-webhook, path: /validate/a}}
  admissionReviewVersions: [v1]
  sideEffects: None
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ignored}
`), "webhooks.yaml")
	require.NoError(t, err)
	mut, val, err := WebhookConfigurations(objs)
	require.NoError(t, err)
	require.Len(t, mut, 1)
	require.Len(t, val, 1)
	assert.Equal(t, "/mutate/pods", *mut[0].Webhooks[0].ClientConfig.Service.Path)
	assert.Equal(t, "a.validate.ome.io", val[0].Webhooks[0].Name)

	bad, err := DecodeObjects([]byte("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: v}\nwebhooks: {oops: 1}\n"), "bad.yaml")
	require.NoError(t, err)
	_, _, err = WebhookConfigurations(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ValidatingWebhookConfiguration/v (bad.yaml)")
}

// The repository's webhook manifests decode into typed configurations.
func TestRepositoryWebhookManifests(t *testing.T) {
	objs, err := ReadObjectsFS(deploy.FS, "base/webhooks.yaml", "deploy")
	require.NoError(t, err)
	mut, val, err := WebhookConfigurations(objs)
	require.NoError(t, err)
	assert.NotEmpty(t, mut)
	assert.NotEmpty(t, val)
}
