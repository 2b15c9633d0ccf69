package e2e

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// goFieldDoc is the doc comment of field in struct typeName of the Go
// package in dir (relative to the checkout), markers (+...) left out, as
// one line: what controller-gen writes as the field's description.
func goFieldDoc(t *testing.T, dir, typeName, field string) string {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), filepath.Join(env.Root, dir), nil, parser.ParseComments)
	require.NoError(t, err)
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			obj := f.Scope.Lookup(typeName)
			if obj == nil {
				continue
			}
			st, ok := obj.Decl.(*ast.TypeSpec).Type.(*ast.StructType)
			require.True(t, ok, "%s is not a struct", typeName)
			for _, fl := range st.Fields.List {
				if len(fl.Names) == 1 && fl.Names[0].Name == field && fl.Doc != nil {
					var lines []string
					for _, l := range strings.Split(strings.TrimSpace(fl.Doc.Text()), "\n") {
						if !strings.HasPrefix(l, "+") {
							lines = append(lines, l)
						}
					}
					return strings.Join(lines, " ")
				}
			}
		}
	}
	require.Failf(t, "no documented field", "%s.%s in %s", typeName, field, dir)
	return ""
}

// explain runs kubectl explain until the apiserver publishes the CRD's
// OpenAPI (it follows Established by a moment) and returns its output.
func explain(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := kubectl(t, "", "explain", path)
		if err == nil {
			return out
		}
		if time.Now().After(deadline) {
			require.NoError(t, err, "kubectl explain %s:\n%s", path, out)
		}
		time.Sleep(time.Second)
	}
}

// oneLine joins the indented description kubectl wraps over several lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// kubectl explain against the real apiserver prints the Go doc of berth's
// fields (make generate keeps them in the CRDs), and nothing for fields
// of the Kubernetes types berth inlines (dropped to fit etcd).
func TestKubectlExplainPrintsBerthFieldDocs(t *testing.T) {
	ensureOutOfBox(t)
	cases := []struct {
		path                 string
		dir, typeName, field string
	}{
		{"isvc.spec.acceleratorSelector.strategy", "api/v1beta1", "AcceleratorSelector", "Strategy"},
		{"inferenceservice.spec.acceleratorSelector", "api/v1beta1", "InferenceServiceSpec", "AcceleratorSelector"},
		{"isvc.spec.predictor.affinity", "api/v1beta1", "PodSpec", "Affinity"},
		{"servingpolicy.spec.validationActions", "api/policy/v1alpha1", "ServingPolicySpec", "ValidationActions"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			doc := goFieldDoc(t, c.dir, c.typeName, c.field)
			require.NotEmpty(t, doc)
			out := explain(t, c.path)
			assert.Contains(t, oneLine(out), doc, "kubectl explain %s:\n%s", c.path, out)
		})
	}

	t.Run("below an inlined Kubernetes type", func(t *testing.T) {
		out := explain(t, "isvc.spec.predictor.affinity.nodeAffinity")
		assert.Contains(t, out, "FIELD: nodeAffinity <Object>", out)
		assert.Contains(t, oneLine(out), "DESCRIPTION: <empty>", "no description below corev1.Affinity:\n%s", out)
	})
}

// Every berth CRD as the apiserver stores it (JSON, managedFields of the
// server-side apply included) stays well under etcd's 1.5 MiB request limit.
func TestKubectlExplainCRDsFitInEtcdAsStored(t *testing.T) {
	const etcdObjectLimit = 1536 * 1024
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	require.NotEmpty(t, env.CRDs)
	for _, name := range env.CRDs {
		if !strings.HasSuffix(name, ".ome.io") && !strings.HasSuffix(name, ".berth.dev") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			got, err := env.Applier.Dynamic.Resource(crds).Get(ctxT(t, 30*time.Second), name, metav1.GetOptions{})
			require.NoError(t, err)
			js, err := json.Marshal(got.Object)
			require.NoError(t, err)
			t.Logf("%s: %d bytes as stored (JSON)", name, len(js))
			assert.Less(t, len(js), etcdObjectLimit*3/4, "%s is %d bytes as JSON; etcd takes at most %d", name, len(js), etcdObjectLimit)
		})
	}
}
