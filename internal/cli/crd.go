package cli

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/deploy"
)

// The apiserver's checks of a custom resource that need no server: the
// OpenAPI schema of berth's generated CRDs (deploy/crds, compiled into the
// binary) after structural defaulting, and their CEL rules.

type crdValidator struct {
	schema     validation.SchemaValidator
	structural *structuralschema.Structural
	cel        *cel.Validator
}

func (v *crdValidator) validate(obj map[string]any) field.ErrorList {
	defaulting.Default(obj, v.structural)
	errs := validation.ValidateCustomResource(nil, obj, v.schema)
	if v.cel != nil {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs
}

// crdValidators are built once: the schemas are large.
var crdValidators = sync.OnceValues(func() (map[string]*crdValidator, error) {
	files, err := fs.Glob(deploy.FS, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	out := map[string]*crdValidator{}
	for _, f := range files {
		if strings.HasSuffix(f, "kustomization.yaml") {
			continue
		}
		data, err := fs.ReadFile(deploy.FS, f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		v, err := newCRDValidator(crd)
		if err != nil {
			return nil, err
		}
		out[crd.Spec.Group+"/"+crd.Spec.Names.Kind] = v
	}
	return out, nil
})

func newCRDValidator(crd *apiextensionsv1.CustomResourceDefinition) (*crdValidator, error) {
	if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil {
		return nil, fmt.Errorf("CRD %s has no schema", crd.Name)
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
	return &crdValidator{schema: sv, structural: structural, cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}, nil
}

// schemaErrors validates one document of kind (group/Kind) against its
// CRD; ok is false when berth has no CRD for the kind.
func schemaErrors(groupKind string, doc []byte) (field.ErrorList, bool, error) {
	vs, err := crdValidators()
	if err != nil {
		return nil, false, err
	}
	v, ok := vs[groupKind]
	if !ok {
		return nil, false, nil
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, true, err
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return nil, true, err
	}
	return v.validate(obj), true, nil
}
