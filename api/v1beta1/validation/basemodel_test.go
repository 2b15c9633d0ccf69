package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func ptrTo[T any](v T) *T { return &v }

func TestValidateBaseModelSpec(t *testing.T) {
	spec := field.NewPath("spec")
	uri := spec.Child("storage", "storageUri")
	storage := func(uri string) v1beta1.BaseModelSpec {
		return v1beta1.BaseModelSpec{Storage: &v1beta1.StorageSpec{StorageURI: &uri}}
	}
	policy := func(p string) v1beta1.BaseModelSpec {
		s := storage("hf://meta-llama/Llama-3.1-8B-Instruct")
		s.Storage.DownloadPolicy = ptrTo(v1beta1.DownloadPolicy(p))
		return s
	}
	relPath := storage("hf://meta-llama/Llama-3.1-8B-Instruct")
	relPath.Storage.Path = ptrTo("raid/models")
	cases := []struct {
		name string
		spec v1beta1.BaseModelSpec
		want field.ErrorList
	}{
		{name: "OME's Llama-3.1-8B-Instruct", spec: storage("hf://meta-llama/Llama-3.1-8B-Instruct")},
		{name: "no storage", spec: v1beta1.BaseModelSpec{}},
		{name: "pvc with a claim", spec: storage("pvc://models/llama")},
		{name: "unknown scheme", spec: storage("vendor://cohere/x"), want: field.ErrorList{field.Invalid(uri, "vendor://cohere/x",
			`unsupported scheme "vendor"; supported: hf://, s3://, gs://, oci://, pvc:// and absolute local paths`)}},
		{name: "empty URI", spec: storage(""), want: field.ErrorList{field.Required(uri, "storage URI is empty")}},
		{name: "pvc without a claim", spec: storage("pvc:///llama"), want: field.ErrorList{field.Invalid(uri, "pvc:///llama",
			"pvc:// needs a claim name, as in pvc://{claim}/{sub-path} or pvc://{namespace}:{claim}/{sub-path}")}},
		{name: "OME's pvc with a namespace", spec: storage("pvc://ai-models:models-pvc/llama/llama-3-70b")},
		{name: "pvc namespace that is no namespace name", spec: storage("pvc://AI_models:models/llama"), want: field.ErrorList{field.Invalid(uri, "pvc://AI_models:models/llama",
			`claim namespace "AI_models" is not a valid namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`)}},
		{name: "pvc claim that is no object name", spec: storage("pvc://Models_1/llama"), want: field.ErrorList{field.Invalid(uri, "pvc://Models_1/llama",
			`claim name "Models_1" is not a valid PersistentVolumeClaim name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`)}},
		{name: "known download policies", spec: policy("ReuseIfExists")},
		{name: "unknown download policy", spec: policy("Sometimes"), want: field.ErrorList{field.NotSupported(spec.Child("storage", "downloadPolicy"),
			v1beta1.DownloadPolicy("Sometimes"), []string{"AlwaysDownload", "ReuseIfExists"})}},
		{name: "relative node path", spec: relPath, want: field.ErrorList{field.Invalid(spec.Child("storage", "path"), "raid/models",
			"the node path of the model cache must be absolute, e.g. /raid/models/meta/llama-3-1-8b-instruct")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ValidateBaseModelSpec(&tc.spec, spec))
		})
	}
	assert.Nil(t, ValidateBaseModelSpec(nil, spec))
}
