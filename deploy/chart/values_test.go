package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/version"
)

func ofKind(objs []Object, kind string) []Object {
	var out []Object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func byName(t *testing.T, objs []Object, kind, name string) Object {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind && o.Name == name {
			return o
		}
	}
	require.Failf(t, "missing", "%s %s not rendered", kind, name)
	return Object{}
}

// webhookPaths maps each webhook's name to the Service path it calls in
// the default install.
func webhookPaths(t *testing.T) map[string]string {
	t.Helper()
	paths := map[string]string{}
	for _, o := range kustomize(t, selfManaged) {
		if !isWebhookConfiguration(o) {
			continue
		}
		for _, h := range o.Obj["webhooks"].([]any) {
			name, _ := lookup(h, "name").(string)
			paths[name], _ = lookup(h, "clientConfig", "service", "path").(string)
		}
	}
	require.NotEmpty(t, paths)
	return paths
}

// TestKnobsInAnotherNamespace: namespace.name replaces berth-system
// everywhere (objects, RBAC subjects, DNS names, the webhooks'
// namespaceSelector), and replicas and images come from the values.
func TestKnobsInAnotherNamespace(t *testing.T) {
	t.Parallel()
	objs := mustTemplate(t, "--set", strings.Join([]string{
		"namespace.name=team-a",
		"webhook.replicas=3", "webhook.image.repository=registry.example/berth-webhook", "webhook.image.tag=v1.2.3",
		"reconciler.replicas=1", "reconciler.image.pullPolicy=Always", "reconciler.modelInspectorImage=registry.example/berth:v1.2.3",
		"runtimes.enabled=false", "acceleratorClasses.enabled=false",
	}, ","))
	for _, o := range objs {
		assert.NotContains(t, string(o.Raw), namespace, "%s still names %s", o, namespace)
		if o.Namespace != "" {
			assert.Equal(t, "team-a", o.Namespace, "%s", o)
		}
	}
	assert.Equal(t, "team-a", byName(t, objs, "Namespace", "team-a").Name)
	assert.Empty(t, ofKind(objs, "ClusterServingRuntime"))
	assert.Empty(t, ofKind(objs, "AcceleratorClass"))

	wh := byName(t, objs, "Deployment", "berth-webhook").Obj
	assert.EqualValues(t, 3, lookup(wh, "spec", "replicas"))
	c := lookup(wh, "spec", "template", "spec", "containers").([]any)[0]
	assert.Equal(t, "registry.example/berth-webhook:v1.2.3", lookup(c, "image"))
	assert.Contains(t, lookup(c, "args"), "--dns-names=berth-webhook.team-a.svc,berth-webhook.team-a.svc.cluster.local")

	rec := byName(t, objs, "Deployment", "berth-reconciler").Obj
	assert.EqualValues(t, 1, lookup(rec, "spec", "replicas"))
	c = lookup(rec, "spec", "template", "spec", "containers").([]any)[0]
	assert.Equal(t, "Always", lookup(c, "imagePullPolicy"))
	assert.Equal(t, "ghcr.io/berthdev/berth-reconciler:0.1.0", lookup(c, "image"))
	assert.Equal(t, []any{"--model-inspector-image", "registry.example/berth:v1.2.3"}, flagAndNext(lookup(c, "args"), "--model-inspector-image"))
}

// flagAndNext is the flag in args and the arg after it.
func flagAndNext(args any, flag string) []any {
	list, _ := args.([]any)
	i := slices.Index(list, any(flag))
	if i < 0 || i+1 >= len(list) {
		return nil
	}
	return list[i : i+2]
}

// TestImagesRegistryAndTag: images.registry and images.tag move every berth
// image at once (the Deployments' and the images their flags name); by
// default they are ghcr.io/berthdev at the chart's appVersion, which is
// version/VERSION; a per-image value overrides one.
func TestImagesRegistryAndTag(t *testing.T) {
	t.Parallel()
	images := func(objs []Object) map[string]any {
		wh := lookup(byName(t, objs, "Deployment", "berth-webhook").Obj, "spec", "template", "spec", "containers").([]any)[0]
		rec := lookup(byName(t, objs, "Deployment", "berth-reconciler").Obj, "spec", "template", "spec", "containers").([]any)[0]
		return map[string]any{
			"webhook":    lookup(wh, "image"),
			"downloader": flagAndNext(lookup(wh, "args"), "--model-downloader-image"),
			"reconciler": lookup(rec, "image"),
			"inspector":  flagAndNext(lookup(rec, "args"), "--model-inspector-image"),
		}
	}
	cases := map[string]struct {
		set  string
		want map[string]any
	}{
		"defaults": {"", map[string]any{
			"webhook":    version.Image("berth-webhook"),
			"downloader": []any{"--model-downloader-image", version.Image("berth-downloader")},
			"reconciler": version.Image("berth-reconciler"),
			"inspector":  []any{"--model-inspector-image", version.Image("berth")},
		}},
		"registry and tag": {"images.registry=localhost:5000/mirror,images.tag=1.2.3-rc.1", map[string]any{
			"webhook":    "localhost:5000/mirror/berth-webhook:1.2.3-rc.1",
			"downloader": []any{"--model-downloader-image", "localhost:5000/mirror/berth-downloader:1.2.3-rc.1"},
			"reconciler": "localhost:5000/mirror/berth-reconciler:1.2.3-rc.1",
			"inspector":  []any{"--model-inspector-image", "localhost:5000/mirror/berth:1.2.3-rc.1"},
		}},
		"one image overridden": {"images.tag=2.0.0,webhook.image.tag=2.0.1,webhook.modelDownloaderImage=kserve/storage-initializer:v0.16.0", map[string]any{
			"webhook":    "ghcr.io/berthdev/berth-webhook:2.0.1",
			"downloader": []any{"--model-downloader-image", "kserve/storage-initializer:v0.16.0"},
			"reconciler": "ghcr.io/berthdev/berth-reconciler:2.0.0",
			"inspector":  []any{"--model-inspector-image", "ghcr.io/berthdev/berth:2.0.0"},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var args []string
			if tc.set != "" {
				args = []string{"--set", tc.set}
			}
			assert.Equal(t, tc.want, images(mustTemplate(t, args...)))
		})
	}
}

// TestPlacement: nodeSelector, tolerations and affinity of each Deployment
// come from the values, and are absent by default (TestChartMatchesKustomize).
func TestPlacement(t *testing.T) {
	t.Parallel()
	values := filepath.Join(t.TempDir(), "placement.yaml")
	require.NoError(t, os.WriteFile(values, []byte(`webhook:
  nodeSelector: {node.berth.dev/real: "true"}
  tolerations: [{key: node.berth.dev/real, operator: Equal, value: "true", effect: NoSchedule}]
reconciler:
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [system]}]}]}}}
`), 0o644))
	objs := mustTemplate(t, "-f", values)
	wh := lookup(byName(t, objs, "Deployment", "berth-webhook").Obj, "spec", "template", "spec").(map[string]any)
	assert.Equal(t, map[string]any{"node.berth.dev/real": "true"}, wh["nodeSelector"])
	assert.Equal(t, []any{map[string]any{"key": "node.berth.dev/real", "operator": "Equal", "value": "true", "effect": "NoSchedule"}}, wh["tolerations"])
	assert.NotContains(t, wh, "affinity")
	rec := lookup(byName(t, objs, "Deployment", "berth-reconciler").Obj, "spec", "template", "spec").(map[string]any)
	assert.NotContains(t, rec, "nodeSelector")
	assert.NotContains(t, rec, "tolerations")
	assert.Equal(t, "pool", lookup(rec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
		"nodeSelectorTerms").([]any)[0].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)["key"])
}

// TestExternalWebhookURL: with webhook.url every webhook calls the URL plus
// the path it calls on the Service, trusting webhook.caBundle; the
// in-cluster webhook and its certificate objects are left out, in either
// certificates mode, and nothing else changes.
func TestExternalWebhookURL(t *testing.T) {
	t.Parallel()
	paths := webhookPaths(t)
	for _, mode := range []string{modeSelf, modeCertMgr} {
		t.Run(mode, func(t *testing.T) {
			objs := mustTemplate(t, "--set", "namespace.name=dev,webhook.url=https://127.0.0.1:9443/,webhook.caBundle=Q0E=,certificates.mode="+mode+
				",namespace.create=false,runtimes.enabled=false,acceleratorClasses.enabled=false")
			seen := 0
			for _, o := range objs {
				if !isWebhookConfiguration(o) {
					continue
				}
				assert.Nil(t, lookup(o.Obj, "metadata", "annotations"), "%s: no CA injection", o)
				for _, h := range o.Obj["webhooks"].([]any) {
					name, _ := lookup(h, "name").(string)
					want := map[string]any{"url": "https://127.0.0.1:9443" + paths[name], "caBundle": "Q0E="}
					assert.Equal(t, want, lookup(h, "clientConfig"), "webhook %s", name)
					seen++
				}
			}
			assert.Equal(t, len(paths), seen, "every webhook is rendered once")
			for _, o := range objs {
				switch o.Kind {
				case "Namespace", "Secret", "Service", "PodDisruptionBudget", "Issuer", "Certificate":
					t.Errorf("%s rendered with webhook.url", o)
				case "Deployment":
					assert.Equal(t, "berth-reconciler", o.Name, "only the reconciler runs in the cluster")
				}
			}
			// The rest is the install of the default mode: RBAC, the reconciler.
			for _, o := range kustomize(t, certManager) {
				if o.Kind == "ServiceAccount" || strings.HasPrefix(o.Kind, "Cluster") {
					var want map[string]any
					require.NoError(t, yaml.Unmarshal([]byte(strings.ReplaceAll(string(o.Raw), namespace, "dev")), &want))
					assert.Empty(t, firstDiff(want, byName(t, objs, o.Kind, o.Name).Obj, ""), "%s", o)
				}
			}
		})
	}
}

// TestSchemaRefusesBadValues: values.schema.json makes helm refuse a bad
// value before rendering anything, naming the value.
func TestSchemaRefusesBadValues(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ set, want string }{
		"unknown mode":           {"certificates.mode=vault", "certificates/mode"},
		"zero replicas":          {"webhook.replicas=0", "webhook/replicas"},
		"replicas not a number":  {"reconciler.replicas=two", "reconciler/replicas"},
		"plain http webhook":     {"webhook.url=http://127.0.0.1:9443", "webhook/url"},
		"caBundle not base64":    {"webhook.caBundle=-----BEGIN CERTIFICATE-----", "webhook/caBundle"},
		"unknown pull policy":    {"webhook.image.pullPolicy=Sometimes", "webhook/image/pullPolicy"},
		"misspelt key":           {"runtime.enabled=false", "runtime"},
		"flag not a boolean":     {"runtimes.enabled=yes", "runtimes/enabled"},
		"image tag with a colon": {"reconciler.image.tag=a:b", "reconciler/image/tag"},
		"registry with a tag":    {"images.registry=ghcr.io/berthdev/", "images/registry"},
		"bad images tag":         {"images.tag=-1", "images/tag"},
		"namespace not a label":  {"namespace.name=Berth_System", "namespace/name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := helmTemplate(t, "--set", tc.set)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "values don't meet the specifications of the schema")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestHelmLintStrict: `helm lint --strict` passes in every mode (templates
// parse, rendered objects are valid YAML with the fields Helm checks).
func TestHelmLintStrict(t *testing.T) {
	t.Parallel()
	for _, set := range []string{"certificates.mode=self-managed", "certificates.mode=cert-manager", "webhook.url=https://127.0.0.1:9443,webhook.caBundle=Q0E="} {
		out, err := exec.Command(helmBin(t), "lint", "--strict", chartDir, "--set", set).CombinedOutput()
		assert.NoError(t, err, "helm lint --set %s:\n%s", set, out)
		assert.Contains(t, string(out), "0 chart(s) failed", set)
	}
}
