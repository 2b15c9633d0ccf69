package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// The apiserver's checks for a custom resource, minus the parts that need a
// running server: the OpenAPI schema (types, enums, patterns, minimums) and
// the CEL rules (x-kubernetes-validations), after structural defaulting.
// Unknown fields are not the schema's business (the apiserver prunes them);
// strict decoding into the Go types catches those.

const crdDir = "crds"

// crdValidator validates objects of one kind against its CRD.
type crdValidator struct {
	crd        *apiextensionsv1.CustomResourceDefinition
	schema     validation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator // nil when the CRD has no CEL rules
}

// validate returns every schema and CEL error for obj, as the apiserver
// would report them on create.
func (v *crdValidator) validate(obj map[string]any) field.ErrorList {
	defaulting.Default(obj, v.structural)
	errs := validation.ValidateCustomResource(nil, obj, v.schema)
	if v.cel != nil {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// readCRD reads one generated CRD file.
func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crd, nil
}

// newCRDValidator builds the validator for the served version of crd.
func newCRDValidator(crd *apiextensionsv1.CustomResourceDefinition) (*crdValidator, error) {
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil {
		return nil, fmt.Errorf("CRD %s: want exactly one version with a schema", crd.Name)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
	}
	sv, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
	}
	return &crdValidator{
		crd:        crd,
		schema:     sv,
		structural: structural,
		cel:        cel.NewValidator(structural, true, celconfig.PerCallLimit),
	}, nil
}

// validateCRDDefinition runs the apiserver's create-time validation of a CRD,
// which compiles every CEL rule and rejects rules whose estimated cost
// exceeds the per-rule limit or, summed, the per-CRD limit.
func validateCRDDefinition(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	c := crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(c)
	// What the apiserver's PrepareForCreate does before validating.
	c.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	for _, v := range c.Spec.Versions {
		if v.Storage {
			c.Status.StoredVersions = []string{v.Name}
		}
	}
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(c, internal, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal)
}

// loadValidators returns a validator per kind for every CRD in deploy/crds.
// Building them parses the large InferenceService and runtime schemas, so
// they are built once per test binary and shared (they are read-only).
func loadValidators(t *testing.T) map[string]*crdValidator {
	t.Helper()
	v, err := sharedValidators()
	require.NoError(t, err)
	return v
}

var sharedValidators = sync.OnceValues(func() (map[string]*crdValidator, error) {
	paths, err := filepath.Glob(filepath.Join(crdDir, "ome.io_*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no CRDs in %s; run make generate", crdDir)
	}
	out := map[string]*crdValidator{}
	for _, p := range paths {
		crd, err := readCRD(p)
		if err != nil {
			return nil, err
		}
		v, err := newCRDValidator(crd)
		if err != nil {
			return nil, err
		}
		out[crd.Spec.Names.Kind] = v
	}
	return out, nil
})

// manifest is one YAML document of a file.
type manifest struct {
	file  string // path relative to the deploy folder
	index int    // document index within the file
	raw   []byte // the document as YAML
	obj   map[string]any
}

func (m manifest) String() string {
	if m.index == 0 {
		return m.file
	}
	return fmt.Sprintf("%s#%d", m.file, m.index)
}

func (m manifest) kind() string { s, _ := m.obj["kind"].(string); return s }

func (m manifest) name() string {
	md, _ := m.obj["metadata"].(map[string]any)
	s, _ := md["name"].(string)
	return s
}

// readManifests reads every document of every *.yaml file under dir except
// kustomization.yaml, sorted by path. Numbers decode as int64 or float64,
// the way the apiserver hands them to the validators.
func readManifests(t *testing.T, dir string) []manifest {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	sort.Strings(paths)
	var out []manifest
	for _, p := range paths {
		if filepath.Base(p) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		docs, err := splitYAML(data)
		require.NoError(t, err, p)
		for i, d := range docs {
			js, err := yaml.YAMLToJSONStrict(d)
			require.NoError(t, err, "%s#%d", p, i)
			var obj map[string]any
			require.NoError(t, utiljson.Unmarshal(js, &obj), "%s#%d", p, i)
			out = append(out, manifest{file: p, index: i, raw: d, obj: obj})
		}
	}
	return out
}

// splitYAML splits a multi-document YAML stream, dropping empty documents.
func splitYAML(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
}

func stripComments(d []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(d), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// deepCopyJSON copies a decoded JSON object so a test case can change it.
func deepCopyJSON(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	js, err := utiljson.Marshal(obj)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, utiljson.Unmarshal(js, &out))
	return out
}

// errorsText joins errors in a stable order for messages and assertions.
func errorsText(errs field.ErrorList) string {
	s := make([]string, 0, len(errs))
	for _, e := range errs {
		s = append(s, e.Error())
	}
	sort.Strings(s)
	return strings.Join(s, "\n")
}
