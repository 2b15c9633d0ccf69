package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
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
	assert.Contains(t, lookup(c, "args"), inspectorFlag+"registry.example/berth:v1.2.3")
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
		"unknown mode":          {"certificates.mode=vault", "certificates/mode"},
		"zero replicas":         {"webhook.replicas=0", "webhook/replicas"},
		"replicas not a number": {"reconciler.replicas=two", "reconciler/replicas"},
		"plain http webhook":    {"webhook.url=http://127.0.0.1:9443", "webhook/url"},
		"caBundle not base64":   {"webhook.caBundle=-----BEGIN CERTIFICATE-----", "webhook/caBundle"},
		"unknown pull policy":   {"webhook.image.pullPolicy=Sometimes", "webhook/image/pullPolicy"},
		"misspelt key":          {"runtime.enabled=false", "runtime"},
		"flag not a boolean":    {"runtimes.enabled=yes", "runtimes/enabled"},
		"empty image tag":       {"reconciler.image.tag=", "reconciler/image/tag"},
		"namespace not a label": {"namespace.name=Berth_System", "namespace/name"},
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
