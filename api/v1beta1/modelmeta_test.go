package v1beta1

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func TestParseStorageURI(t *testing.T) {
	cases := []struct {
		uri     string
		want    StorageLocation
		wantErr string
	}{
		// config/models/meta/Llama-3.1-8B-Instruct.yaml in OME
		{uri: "hf://meta-llama/Llama-3.1-8B-Instruct", want: StorageLocation{Scheme: SchemeHF, Repo: "meta-llama/Llama-3.1-8B-Instruct"}},
		{uri: "hf://meta-llama/Llama-3.1-8B-Instruct@0e9e39f", want: StorageLocation{Scheme: SchemeHF, Repo: "meta-llama/Llama-3.1-8B-Instruct", Revision: "0e9e39f"}},
		{uri: "hf://gpt2", want: StorageLocation{Scheme: SchemeHF, Repo: "gpt2"}},
		{uri: "hf://", wantErr: `storage URI "hf://": hf:// needs a repository, as in hf://org/repo[@revision]`},
		{uri: "hf://org/repo@", wantErr: `storage URI "hf://org/repo@": the revision after @ is empty`},
		{uri: "hf://org/repo/extra", wantErr: `storage URI "hf://org/repo/extra": hf:// needs a repository, as in hf://org/repo[@revision]`},
		{uri: "s3://models/meta/llama-3-1-8b", want: StorageLocation{Scheme: SchemeS3, Bucket: "models", Prefix: "meta/llama-3-1-8b"}},
		{uri: "s3://models", want: StorageLocation{Scheme: SchemeS3, Bucket: "models"}},
		{uri: "s3:///x", wantErr: `storage URI "s3:///x": s3:// needs a bucket, as in s3://bucket/prefix`},
		{uri: "gs://b/p/q/", want: StorageLocation{Scheme: SchemeGS, Bucket: "b", Prefix: "p/q"}},
		{uri: "oci://n/idabc/b/models/o/meta/llama", want: StorageLocation{Scheme: SchemeOCI, Namespace: "idabc", Bucket: "models", Prefix: "meta/llama"}},
		{uri: "oci://n/idabc/b/models", want: StorageLocation{Scheme: SchemeOCI, Namespace: "idabc", Bucket: "models"}},
		{uri: "oci://idabc/models/x", wantErr: `storage URI "oci://idabc/models/x": oci:// is written oci://n/{namespace}/b/{bucket}/o/{prefix}`},
		{uri: "pvc://models-pvc/meta/llama-3-1-8b", want: StorageLocation{Scheme: SchemePVC, ClaimName: "models-pvc", SubPath: "meta/llama-3-1-8b"}},
		{uri: "pvc://models-pvc", want: StorageLocation{Scheme: SchemePVC, ClaimName: "models-pvc"}},
		{uri: "pvc:///meta", wantErr: `storage URI "pvc:///meta": pvc:// needs a claim name, as in pvc://{claim}/{sub-path} or pvc://{namespace}:{claim}/{sub-path}`},
		{uri: "pvc://ai-models:models-pvc/llama/llama-3-70b", want: StorageLocation{Scheme: SchemePVC, ClaimNamespace: "ai-models", ClaimName: "models-pvc", SubPath: "llama/llama-3-70b"}},
		{uri: "pvc://ai-models:models-pvc", want: StorageLocation{Scheme: SchemePVC, ClaimNamespace: "ai-models", ClaimName: "models-pvc"}},
		{uri: "pvc://:models-pvc/llama", wantErr: `storage URI "pvc://:models-pvc/llama": the namespace before ':' is empty, as in pvc://{namespace}:{claim}/{sub-path}`},
		{uri: "pvc://ai-models:/llama", wantErr: `storage URI "pvc://ai-models:/llama": pvc:// needs a claim name, as in pvc://{claim}/{sub-path} or pvc://{namespace}:{claim}/{sub-path}`},
		{uri: "pvc://ai-models:m/../x", wantErr: `storage URI "pvc://ai-models:m/../x": the sub-path may not leave the claim (..)`},
		{uri: "pvc://a/../../etc", wantErr: `storage URI "pvc://a/../../etc": the sub-path may not leave the claim (..)`},
		{uri: "/raid/models/meta/llama", want: StorageLocation{Scheme: SchemeLocal, Path: "/raid/models/meta/llama"}},
		{uri: "local:///raid/models", want: StorageLocation{Scheme: SchemeLocal, Path: "/raid/models"}},
		{uri: "local://raid", wantErr: `storage URI "local://raid": local paths are absolute, as in /raid/models or local:///raid/models`},
		{uri: "", wantErr: `storage URI is empty`},
		{uri: "vendor://cohere/models/x", wantErr: `storage URI "vendor://cohere/models/x": unsupported scheme "vendor"; supported: hf://, s3://, gs://, oci://, pvc:// and absolute local paths`},
		{uri: "models/llama", wantErr: `storage URI "models/llama": unsupported scheme ""; supported: hf://, s3://, gs://, oci://, pvc:// and absolute local paths`},
	}
	for _, tc := range cases {
		t.Run(tc.uri, func(t *testing.T) {
			got, err := ParseStorageURI(tc.uri)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tc.wantErr, err.Error())
				assert.True(t, errors.Is(err, ErrStorageURI))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestStorageLocationDiscoverable(t *testing.T) {
	want := map[StorageScheme]bool{SchemeHF: true, SchemeS3: true, SchemePVC: true, SchemeLocal: false, SchemeGS: false, SchemeOCI: false}
	for s, d := range want {
		assert.Equal(t, d, StorageLocation{Scheme: s}.Discoverable(), string(s))
	}
}

// llamaOME is OME's Llama-3.1-8B-Instruct ClusterBaseModel
// (config/models/meta/Llama-3.1-8B-Instruct.yaml): storage only.
const llamaOME = `
apiVersion: ome.io/v1beta1
kind: ClusterBaseModel
metadata: {name: llama-3-1-8b-instruct, generation: 3}
spec:
  modelCapabilities: [TEXT_TO_TEXT]
  vendor: meta
  disabled: false
  version: "1.0.0"
  displayName: meta.llama-3.1-8b-instruct
  storage:
    storageUri: hf://meta-llama/Llama-3.1-8B-Instruct
    path: /raid/models/meta/llama-3-1-8b-instruct
`

func llamaDiscovered() *ModelMetadata {
	return &ModelMetadata{
		ModelFormat:        &ModelFormat{Name: "safetensors", Version: ptr("1.0.0")},
		ModelFramework:     &ModelFrameworkSpec{Name: "transformers", Version: ptr("4.43.0.dev0")},
		ModelType:          ptr("llama"),
		ModelArchitecture:  ptr("LlamaForCausalLM"),
		ModelParameterSize: ptr("8.03B"),
		ParameterCount:     ptr(int64(8030261248)),
		MaxTokens:          ptr(int32(131072)),
		DType:              "bfloat16",
		Source:             "hf://meta-llama/Llama-3.1-8B-Instruct@0e9e39f249a16976918f6564b8830bc894c89659",
		ResolvedAt:         &metav1.Time{Time: time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)},
	}
}

func resolved(status metav1.ConditionStatus, gen int64, reason, msg string) []metav1.Condition {
	return []metav1.Condition{{Type: ConditionMetadataResolved, Status: status, ObservedGeneration: gen, Reason: reason, Message: msg}}
}

func TestEffectiveModelSpec(t *testing.T) {
	var m ClusterBaseModel
	require.NoError(t, yaml.UnmarshalStrict([]byte(llamaOME), &m))

	t.Run("discovered fills what the admin left unset", func(t *testing.T) {
		got := EffectiveModelSpec(m.Spec, ModelStatus{Discovered: llamaDiscovered()})
		assert.Equal(t, ModelFormat{Name: "safetensors", Version: ptr("1.0.0")}, got.ModelFormat)
		assert.Equal(t, "LlamaForCausalLM", str(got.ModelArchitecture))
		assert.Equal(t, "8.03B", str(got.ModelParameterSize))
		assert.Equal(t, "llama", str(got.ModelType))
		assert.Equal(t, int32(131072), i32(got.MaxTokens))
		assert.Equal(t, "transformers", got.ModelFramework.Name)
		assert.Nil(t, got.Quantization)
		assert.Equal(t, "meta", str(got.Vendor))
		assert.Nil(t, m.Spec.ModelArchitecture, "the input spec is not modified")
	})
	t.Run("what the admin wrote wins", func(t *testing.T) {
		spec := *m.Spec.DeepCopy()
		spec.ModelFormat = ModelFormat{Name: "pytorch"}
		spec.ModelArchitecture = ptr("MyLlama")
		spec.ModelParameterSize = ptr("8B")
		spec.Quantization = ptr(ModelQuantization("fp8"))
		spec.MaxTokens = ptr(int32(8192))
		got := EffectiveModelSpec(spec, ModelStatus{Discovered: llamaDiscovered()})
		assert.Equal(t, ModelFormat{Name: "pytorch"}, got.ModelFormat)
		assert.Equal(t, "MyLlama", str(got.ModelArchitecture))
		assert.Equal(t, "8B", str(got.ModelParameterSize))
		assert.Equal(t, ModelQuantization("fp8"), *got.Quantization)
		assert.Equal(t, int32(8192), i32(got.MaxTokens))
		assert.Equal(t, "llama", str(got.ModelType), "still filled: the admin left it unset")
	})
	t.Run("a format version without a name keeps the admin's version", func(t *testing.T) {
		spec := *m.Spec.DeepCopy()
		spec.ModelFormat = ModelFormat{Version: ptr("2")}
		got := EffectiveModelSpec(spec, ModelStatus{Discovered: llamaDiscovered()})
		assert.Equal(t, ModelFormat{Name: "safetensors", Version: ptr("2")}, got.ModelFormat)
	})
	t.Run("nothing discovered", func(t *testing.T) {
		assert.Equal(t, m.Spec, EffectiveModelSpec(m.Spec, ModelStatus{}))
	})
	t.Run("no aliasing with the status", func(t *testing.T) {
		st := ModelStatus{Discovered: llamaDiscovered()}
		got := EffectiveModelSpec(m.Spec, st)
		*got.ModelArchitecture = "Changed"
		assert.Equal(t, "LlamaForCausalLM", *st.Discovered.ModelArchitecture)
	})
}

func TestModelAwaitsMetadata(t *testing.T) {
	var m ClusterBaseModel
	require.NoError(t, yaml.UnmarshalStrict([]byte(llamaOME), &m))
	full := *m.Spec.DeepCopy()
	full.ModelFormat = ModelFormat{Name: "safetensors"}
	full.ModelArchitecture = ptr("LlamaForCausalLM")
	full.ModelParameterSize = ptr("8B")
	noArch := *full.DeepCopy()
	noArch.ModelArchitecture = nil
	gcs := *m.Spec.DeepCopy()
	gcs.Storage.StorageURI = ptr("gs://b/p")
	local := *m.Spec.DeepCopy() // on nodes: the reconciler cannot read it
	local.Storage.StorageURI = ptr("/raid/models/meta/llama")
	pvc := *m.Spec.DeepCopy()
	pvc.Storage.StorageURI = ptr("pvc://models/llama")
	bad := *m.Spec.DeepCopy()
	bad.Storage.StorageURI = ptr("vendor://x")
	noStorage := *m.Spec.DeepCopy()
	noStorage.Storage = nil

	const pending = "model metadata not yet known: modelFormat.name, modelArchitecture and modelParameterSize are not in the spec; discovery from hf://meta-llama/Llama-3.1-8B-Instruct is pending"
	cases := []struct {
		name     string
		spec     BaseModelSpec
		conds    []metav1.Condition
		wait     bool
		wantText string
	}{
		{name: "nothing known yet", spec: m.Spec, wait: true, wantText: pending},
		{name: "resolved for this generation", spec: m.Spec, conds: resolved(metav1.ConditionTrue, 3, "Discovered", ""), wait: false},
		{name: "resolved for an older generation", spec: m.Spec, conds: resolved(metav1.ConditionTrue, 2, "Discovered", ""), wait: true, wantText: pending},
		{name: "discovery failed", spec: m.Spec, conds: resolved(metav1.ConditionFalse, 3, "Unauthorized", "hf://meta-llama/Llama-3.1-8B-Instruct: 401: set storage.key to a Secret with a token"), wait: true,
			wantText: "model metadata not yet known: modelFormat.name, modelArchitecture and modelParameterSize are not in the spec; discovery from hf://meta-llama/Llama-3.1-8B-Instruct failed: Unauthorized: hf://meta-llama/Llama-3.1-8B-Instruct: 401: set storage.key to a Secret with a token"},
		{name: "only the architecture is missing", spec: noArch, wait: true,
			wantText: "model metadata not yet known: modelArchitecture is not in the spec; discovery from hf://meta-llama/Llama-3.1-8B-Instruct is pending"},
		{name: "the spec says everything", spec: full, wait: false},
		{name: "scheme with no discovery", spec: gcs, wait: false},
		{name: "local path: no discovery", spec: local, wait: false},
		{name: "pvc is inspected", spec: pvc, wait: true,
			wantText: "model metadata not yet known: modelFormat.name, modelArchitecture and modelParameterSize are not in the spec; discovery from pvc://models/llama is pending"},
		{name: "unparsable URI", spec: bad, wait: false},
		{name: "no storage", spec: noStorage, wait: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wait, why := ModelAwaitsMetadata(tc.spec, ModelStatus{Conditions: tc.conds}, 3)
			assert.Equal(t, tc.wait, wait)
			assert.Equal(t, tc.wantText, why)
		})
	}
}
