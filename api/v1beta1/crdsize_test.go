package v1beta1

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// etcdObjectLimit is etcd's default --max-request-bytes (1.5 MiB): a CRD
// stored as JSON above it cannot be applied. The InferenceService inlines
// several pod specs, and OME's aliases (predictor.workerSpec) add one more;
// keep a margin so that a k8s.io/api upgrade (or a long doc comment) does not
// tip it over.
const etcdObjectLimit = 1536 * 1024

// crdFiles lists every generated CRD of deploy/crds, ome.io and
// policy.berth.dev alike.
func crdFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../deploy/crds/*.yaml")
	require.NoError(t, err)
	var crds []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			crds = append(crds, f)
		}
	}
	require.GreaterOrEqual(t, len(crds), 8, "deploy/crds: run make generate")
	return crds
}

func readCRD(t *testing.T, f string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal(b, &obj))
	return obj
}

func TestGeneratedCRDsFitInEtcd(t *testing.T) {
	var groups []string
	for _, f := range crdFiles(t) {
		obj := readCRD(t, f)
		groups = append(groups, obj["spec"].(map[string]any)["group"].(string))
		t.Run(filepath.Base(f), func(t *testing.T) {
			js, err := json.Marshal(obj)
			require.NoError(t, err)
			assert.Less(t, len(js), etcdObjectLimit*3/4, "%s is %d bytes as JSON; etcd takes at most %d", f, len(js), etcdObjectLimit)
		})
	}
	assert.Contains(t, groups, "ome.io")
	assert.Contains(t, groups, "policy.berth.dev")
}

// schemaAt follows a dotted path of properties (a "[]" segment is items).
func schemaAt(t *testing.T, crd map[string]any, path string) map[string]any {
	t.Helper()
	v := crd["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	node := v["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
	for _, seg := range strings.Split(path, ".") {
		var next any
		if seg == "[]" {
			next = node["items"]
		} else {
			props, _ := node["properties"].(map[string]any)
			next = props[seg]
		}
		m, ok := next.(map[string]any)
		require.True(t, ok, "no schema at %s (segment %s)", path, seg)
		node = m
	}
	return node
}

// The CRDs keep the Go doc of berth's fields (kubectl explain) and drop it
// below the Kubernetes types berth inlines (make generate, hack/crd-docs).
func TestGeneratedCRDsDocumentBerthFieldsOnly(t *testing.T) {
	isvc := readCRD(t, "../../deploy/crds/ome.io_inferenceservices.yaml")
	policy := readCRD(t, "../../deploy/crds/policy.berth.dev_servingpolicies.yaml")
	documented := []struct {
		crd  map[string]any
		path string
		want string
	}{
		{isvc, "spec.acceleratorSelector.strategy", "Strategy ranks classes when none is named. Defaults to balanced."},
		{isvc, "spec.predictor.affinity", "Affinity terms from every layer are ANDed, never replaced."},
		{isvc, "spec.predictor.nodeSelector", "NodeSelector is merged key by key: AcceleratorClass < runtime < InferenceService component."},
	}
	for _, d := range documented {
		assert.Equal(t, d.want, schemaAt(t, d.crd, d.path)["description"], d.path)
	}
	assert.NotEmpty(t, schemaAt(t, policy, "spec.validationActions")["description"])
	for _, path := range []string{
		"spec.predictor.affinity.nodeAffinity",
		"spec.predictor.containers.[]",
		"spec.predictor.containers.[].resources",
		"spec.predictor.volumes.[].persistentVolumeClaim.claimName",
	} {
		assert.NotContains(t, schemaAt(t, isvc, path), "description", path)
	}
}
