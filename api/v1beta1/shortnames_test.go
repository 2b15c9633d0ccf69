package v1beta1

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// builtinShortNames are the short names a v1.34 kube-apiserver serves
// (`kubectl api-resources` on a cluster without CRDs). They come from the
// ShortNames() of k8s.io/kubernetes v1.34.4 pkg/registry/*/storage and of
// apiextensions-apiserver's CustomResourceDefinition storage.
var builtinShortNames = []string{
	"cj", "cm", "crd", "crds", "cs", "csr", "deploy", "ds", "ep", "ev", "hpa", "ing", "ip",
	"limits", "netpol", "no", "ns", "pc", "pdb", "po", "pv", "pvc", "quota", "rc", "rs",
	"sa", "sc", "sts", "svc", "vac",
}

// builtinResourceNames are the plural and singular resource names of every
// kind client-go knows: kubectl resolves a short name only after these, so
// a short name equal to one of them would never reach berth's kind.
func builtinResourceNames() map[string]string {
	out := map[string]string{}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") {
			continue
		}
		plural, singular := meta.UnsafeGuessKindToResource(gvk)
		out[plural.Resource] = gvk.GroupKind().String()
		out[singular.Resource] = gvk.GroupKind().String()
	}
	for _, s := range builtinShortNames {
		out[s] = "a built-in resource's short name"
	}
	return out
}

// TestShortNamesCollideWithNothingBuiltIn: `kubectl get csr` listed
// CertificateSigningRequests instead of ClusterServingRuntimes, and
// `kubectl delete csr <runtime>` deleted nothing and exited 0. No short
// name of a berth kind may equal a name the apiserver itself serves, nor
// another berth kind's.
func TestShortNamesCollideWithNothingBuiltIn(t *testing.T) {
	builtin := builtinResourceNames()
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "crds", "ome.io_*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	owner := map[string]string{}
	var all []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var crd struct {
			Spec struct {
				Names struct {
					Kind       string   `json:"kind"`
					ShortNames []string `json:"shortNames"`
				} `json:"names"`
			} `json:"spec"`
		}
		require.NoError(t, yaml.Unmarshal(b, &crd), f)
		n := crd.Spec.Names
		for _, s := range n.ShortNames {
			all = append(all, s)
			if what, ok := builtin[s]; ok {
				t.Errorf("%s: short name %q is already %s; pick one kubectl does not resolve to a built-in kind", n.Kind, s, what)
			}
			if other, ok := owner[s]; ok {
				t.Errorf("%s: short name %q is also %s's", n.Kind, s, other)
			}
			owner[s] = n.Kind
		}
	}
	sort.Strings(all)
	assert.Equal(t, []string{"ac", "acc", "bm", "cbm", "cerp", "csrt", "isvc", "sr"}, all, "berth's short names (docs/api.md lists them)")
}
