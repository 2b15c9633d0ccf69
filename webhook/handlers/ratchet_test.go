package handlers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1/validation"
)

// ratchet keeps an error of the stored object only when it is the same
// finding: type, field, detail and value.
func TestRatchet(t *testing.T) {
	p := field.NewPath("pods").Key("s-engine-0").Child("spec", "containers").Index(0).Child("image")
	q := field.NewPath("pods").Key("s-engine-1").Child("spec", "containers").Index(0).Child("image")
	had := field.Required(p, "no image")
	for _, tc := range []struct {
		name            string
		errs, old       field.ErrorList
		still, wantKept field.ErrorList
	}{
		{name: "kept", errs: field.ErrorList{had}, old: field.ErrorList{field.Required(p, "no image")}, wantKept: field.ErrorList{had}},
		{name: "new", errs: field.ErrorList{had}, still: field.ErrorList{had}},
		{name: "field changed", errs: field.ErrorList{field.Required(q, "no image")}, old: field.ErrorList{had}, still: field.ErrorList{field.Required(q, "no image")}},
		{name: "detail changed", errs: field.ErrorList{field.Required(p, "no image; set it")}, old: field.ErrorList{had}, still: field.ErrorList{field.Required(p, "no image; set it")}},
		{name: "type changed", errs: field.ErrorList{field.Invalid(p, "a", "no image")}, old: field.ErrorList{had}, still: field.ErrorList{field.Invalid(p, "a", "no image")}},
		{name: "value changed", errs: field.ErrorList{field.Invalid(p, "b", "bad")}, old: field.ErrorList{field.Invalid(p, "a", "bad")}, still: field.ErrorList{field.Invalid(p, "b", "bad")}},
		{name: "same value", errs: field.ErrorList{field.Invalid(p, "a", "bad")}, old: field.ErrorList{field.Invalid(p, "a", "bad")}, wantKept: field.ErrorList{field.Invalid(p, "a", "bad")}},
		{name: "one of each", errs: field.ErrorList{had, field.Required(q, "no image")}, old: field.ErrorList{had}, still: field.ErrorList{field.Required(q, "no image")}, wantKept: field.ErrorList{had}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			still, kept := ratchet(tc.errs, tc.old)
			assert.Equal(t, tc.still, still)
			assert.Equal(t, tc.wantKept, kept)
		})
	}
	assert.Equal(t, []string{"pods[s-engine-0].spec.containers[0].image: Required value: no image (not introduced by this update, so not denied; fix it)"},
		keptWarnings(field.ErrorList{had}, "fix it"))
}

// A BaseModel's UPDATE ratchets on the errors' identity: what the stored
// model had is a warning, what the update introduces is denied at its path.
func TestBaseModelUpdateRatchetsByErrorIdentity(t *testing.T) {
	model := func(uri, path string) *v1beta1.ClusterBaseModel {
		m := &v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: "llama"}}
		m.Spec.Storage = &v1beta1.StorageSpec{StorageURI: ptrTo(uri)}
		if path != "" {
			m.Spec.Storage.Path = ptrTo(path)
		}
		return m
	}
	uri := field.NewPath("spec", "storage", "storageUri")
	const scheme = `unsupported scheme "vendor"; supported: hf://, s3://, gs://, oci://, pvc:// and absolute local paths`
	relative := field.Invalid(field.NewPath("spec", "storage", "path"), "models/x", "the node path of the model cache must be absolute, e.g. /raid/models/meta/llama-3-1-8b-instruct")
	for _, tc := range []struct {
		name            string
		obj, old        *v1beta1.ClusterBaseModel
		still, wantKept field.ErrorList
	}{
		{name: "old error kept", obj: model("vendor://cohere/x", ""), old: model("vendor://cohere/x", ""),
			wantKept: field.ErrorList{field.Invalid(uri, "vendor://cohere/x", scheme)}},
		{name: "new error", obj: model("vendor://cohere/x", ""), old: model("hf://org/repo", ""),
			still: field.ErrorList{field.Invalid(uri, "vendor://cohere/x", scheme)}},
		{name: "old error changed its type", obj: model("vendor://cohere/x", ""), old: model("", ""),
			still: field.ErrorList{field.Invalid(uri, "vendor://cohere/x", scheme)}},
		{name: "one kept, one new", obj: model("vendor://cohere/x", "models/x"), old: model("vendor://cohere/x", ""),
			still: field.ErrorList{relative}, wantKept: field.ErrorList{field.Invalid(uri, "vendor://cohere/x", scheme)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := field.NewPath("spec")
			still, kept := ratchet(validation.ValidateBaseModelSpec(&tc.obj.Spec, at), validation.ValidateBaseModelSpec(&tc.old.Spec, at))
			assert.Equal(t, tc.still, still)
			assert.Equal(t, tc.wantKept, kept)

			resp := ValidateClusterBaseModel(ctx, request(t, admissionv1.Update, "ClusterBaseModel", tc.obj, tc.old, "", tc.obj.Name))
			assert.Equal(t, keptWarnings(tc.wantKept, "services of this model cannot start until it is fixed"), resp.Warnings)
			assertDenial(t, resp, tc.still)
		})
	}
}

// A runtime's UPDATE ratchets its priority conflicts on the errors'
// identity; a tie that moved to another entry is new.
func TestRuntimeUpdateRatchetsByErrorIdentity(t *testing.T) {
	w := newWorld()
	w.index.UpsertClusterServingRuntime(seedRuntime(t, "b", 1))
	moved := func(priority int32) *v1beta1.ClusterServingRuntime { // the tied entry at supportedModelFormats[1]
		r := seedRuntime(t, "a", priority)
		other := *r.Spec.SupportedModelFormats[0].DeepCopy()
		other.Name, other.ModelFormat.Name = "gguf", "gguf"
		r.Spec.SupportedModelFormats = append([]v1beta1.SupportedModelFormat{other}, r.Spec.SupportedModelFormats...)
		r.Spec.SupportedModelFormats[0].Priority = ptrTo(int32(7))
		return r
	}
	tie := func(i int) *field.Error {
		return fieldError(field.NewPath("spec", "supportedModelFormats").Index(i).Child("priority"),
			"priority 1 for format safetensors is also used by ClusterServingRuntime/b (supportedModelFormats[0]), and both could serve the same model; give ClusterServingRuntime/a or ClusterServingRuntime/b a different priority")
	}
	for _, tc := range []struct {
		name            string
		obj, old        *v1beta1.ClusterServingRuntime
		still, wantKept field.ErrorList
	}{
		{name: "old error kept", obj: seedRuntime(t, "a", 1), old: seedRuntime(t, "a", 1), wantKept: field.ErrorList{tie(0)}},
		{name: "new error", obj: seedRuntime(t, "a", 1), old: seedRuntime(t, "a", 3), still: field.ErrorList{tie(0)}},
		{name: "old error whose field changed", obj: moved(1), old: seedRuntime(t, "a", 1), still: field.ErrorList{tie(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := runtimeObject{"ClusterServingRuntime", "", "a"}
			errs, _ := runtimeErrors(w.index, o, &tc.obj.Spec)
			oldErrs, _ := runtimeErrors(w.index, o, &tc.old.Spec)
			still, kept := ratchet(errs, oldErrs)
			assert.Equal(t, tc.still, still)
			assert.Equal(t, tc.wantKept, kept)

			resp := w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Update, "ClusterServingRuntime", tc.obj, tc.old, "", "a"))
			for _, k := range keptWarnings(tc.wantKept, "fix it when you can") {
				assert.Contains(t, resp.Warnings, k)
			}
			assertDenial(t, resp, tc.still)
		})
	}
}

// assertDenial: resp is allowed when want is empty, else denied with one
// status cause per error of want, at its field.
func assertDenial(t *testing.T, resp *admissionv1.AdmissionResponse, want field.ErrorList) {
	t.Helper()
	if len(want) == 0 {
		require.True(t, resp.Allowed, "%+v", resp.Result)
		return
	}
	require.False(t, resp.Allowed)
	require.NotNil(t, resp.Result.Details)
	var fields, wantFields []string
	for _, c := range resp.Result.Details.Causes {
		fields = append(fields, c.Field)
	}
	for _, e := range want {
		wantFields = append(wantFields, e.Field)
		assert.Contains(t, resp.Result.Message, causeLine(e))
	}
	assert.Equal(t, wantFields, fields)
}
