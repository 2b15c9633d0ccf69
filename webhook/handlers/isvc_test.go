package handlers

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// seedWorld holds the two priority runtimes of seed 000 and its model.
func seedWorld(t *testing.T) *world {
	w := newWorld()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.addCSR(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct.yaml", base)
	w.addCSR(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct-2.yaml", base.Add(time.Hour))
	w.index.UpsertBaseModel(mistralModel())
	return w
}

func seedService(t *testing.T, rel string) *v1beta1.InferenceService {
	var isvc v1beta1.InferenceService
	load(t, rel, &isvc)
	return &isvc
}

// admitISVC runs mutate then validate, as the apiserver does, and returns
// the stored object.
func admitISVC(t *testing.T, w *world, op admissionv1.Operation, isvc, old *v1beta1.InferenceService) (*v1beta1.InferenceService, *admissionv1.AdmissionResponse) {
	t.Helper()
	var oldObj any
	if old != nil {
		oldObj = old
	}
	req := request(t, op, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name)
	if oldObj != nil {
		raw, _ := json.Marshal(old)
		req.OldObject.Raw = raw
	}
	resp := w.isvcs().Mutate(ctx, req)
	stored := applyPatch(t, req.Object.Raw, resp)
	req.Object.Raw = stored
	vresp := w.isvcs().Validate(ctx, req)
	var out v1beta1.InferenceService
	require.NoError(t, json.Unmarshal(stored, &out))
	return &out, mergeResponses(resp, vresp)
}

func mergeResponses(m, v *admissionv1.AdmissionResponse) *admissionv1.AdmissionResponse {
	if !v.Allowed {
		return v
	}
	out := *m
	out.Warnings = append(append([]string{}, m.Warnings...), v.Warnings...)
	return &out
}

func TestMutatePinsTheSeedPriorityWinner(t *testing.T) {
	w := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	out, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", out.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.NotEmpty(t, out.Annotations[v1beta1.AnnotationResolvedInputs])
	assert.EqualValues(t, 1, *out.Spec.Engine.MinReplicas)

	// A second pass over the stored object is an empty patch (reinvocation).
	again := w.isvcs().Mutate(ctx, request(t, admissionv1.Update, "InferenceService", out, out, out.Namespace, out.Name))
	assert.True(t, again.Allowed)
	assert.Empty(t, string(again.Patch))
}

func TestPinSurvivesANewHigherPriorityRuntime(t *testing.T) {
	w := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	stored, _ := admitISVC(t, w, admissionv1.Create, isvc, nil)

	var newer v1beta1.ClusterServingRuntime
	load(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct-2.yaml", &newer)
	newer.Name = "srt-mistral-7b-instruct-3"
	p := int32(9)
	newer.Spec.SupportedModelFormats[0].Priority = &p
	newer.CreationTimestamp = metav1.Now()
	w.index.UpsertClusterServingRuntime(&newer)

	// A fresh service picks the new runtime...
	fresh, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-3", fresh.Annotations[v1beta1.AnnotationResolvedRuntime])

	// ...but updating the existing one (scaling) keeps its pin.
	scaled := stored.DeepCopy()
	three := int32(3)
	scaled.Spec.Engine.MaxReplicas = &three
	out, resp := admitISVC(t, w, admissionv1.Update, scaled, stored)
	require.True(t, resp.Allowed)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", out.Annotations[v1beta1.AnnotationResolvedRuntime])

	// Removing the pin re-resolves.
	unpinned := out.DeepCopy()
	delete(unpinned.Annotations, v1beta1.AnnotationResolvedRuntime)
	out, _ = admitISVC(t, w, admissionv1.Update, unpinned, out)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-3", out.Annotations[v1beta1.AnnotationResolvedRuntime])
}

func TestValidateDeniesUnresolvableServiceListingEveryRuntime(t *testing.T) {
	w := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	big := mistralModel()
	size := "70B"
	big.Spec.ModelParameterSize = &size
	w.index.UpsertBaseModel(big)
	_, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.False(t, resp.Allowed)
	msg := resp.Result.Message
	assert.True(t, strings.HasPrefix(msg, "InferenceService mistral-7b-instruct/mistral-7b-instruct: no runtime can serve BaseModel/mistral-7b-instruct"), msg)
	assert.Contains(t, msg, "ClusterServingRuntime/srt-mistral-7b-instruct:")
	assert.Contains(t, msg, "ClusterServingRuntime/srt-mistral-7b-instruct-2:")
	assert.Contains(t, msg, "model size 70B is outside [5B, 9B]")
	// Sorted lines: "-2:" sorts before ":".
	assert.Less(t, strings.Index(msg, "srt-mistral-7b-instruct-2:"), strings.Index(msg, "srt-mistral-7b-instruct:"), "sorted")
}

// A runtime named explicitly that does not exist is waited for, not
// denied (await_test.go has the cases); the warning names it.
func TestMissingExplicitRuntimeWaits(t *testing.T) {
	w := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-explicit-runtime.yaml")
	isvc.Spec.Runtime.Name = "does-not-exist"
	out, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Empty(t, out.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.Equal(t, []string{`InferenceService mistral-7b-instruct/mistral-7b-instruct: spec.runtime.name: no ServingRuntime "does-not-exist" in namespace mistral-7b-instruct and no ClusterServingRuntime "does-not-exist"; admitted unpinned: berth decides once it exists; if the name is a typo, fix spec.runtime.name`}, resp.Warnings)
}

func TestValidateDeniesGroupShapeChangeOfRunningService(t *testing.T) {
	w := seedWorld(t)
	stored, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	stored.Status.Components = map[string]v1beta1.ComponentStatus{"engine": {Replicas: 2}}
	multi := stored.DeepCopy()
	two := int32(2)
	multi.Spec.Engine.Worker = &v1beta1.WorkerSpec{Size: &two}
	_, resp := admitISVC(t, w, admissionv1.Update, multi, stored)
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, `from "single-pod engine" to "multi-node engine"`)
	assert.Contains(t, resp.Result.Message, "2 running group(s)")

	stored.Status.Components = nil // nothing running: the change is fine
	_, resp = admitISVC(t, w, admissionv1.Update, multi, stored)
	assert.True(t, resp.Allowed, "%+v", resp.Result)
}

func TestMutateDeniesAmbiguousPredictor(t *testing.T) {
	w := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/001-previous-schema-isvc-sklearn.yaml")
	isvc.Spec.Predictor.XGBoost = isvc.Spec.Predictor.SKLearn.DeepCopy()
	resp := w.isvcs().Mutate(ctx, request(t, admissionv1.Create, "InferenceService", isvc, nil, "default", isvc.Name))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "spec.predictor.sklearn spec.predictor.xgboost")
}

func TestHandlersIgnoreDelete(t *testing.T) {
	w := seedWorld(t)
	req := &admissionv1.AdmissionRequest{UID: "d", Operation: admissionv1.Delete}
	for _, resp := range []*admissionv1.AdmissionResponse{
		w.isvcs().Mutate(ctx, req), w.isvcs().Validate(ctx, req), w.pods().Mutate(ctx, req),
		w.runtimes().ValidateCluster(ctx, req), w.runtimes().ValidateNamespaced(ctx, req),
		ValidateAcceleratorClass(ctx, req), ValidateProfile(ctx, req), ValidateBaseModel(ctx, req), ValidateClusterBaseModel(ctx, req),
	} {
		assert.True(t, resp.Allowed)
	}
}

func TestHandlersDenyUndecodableObjects(t *testing.T) {
	w := seedWorld(t)
	req := &admissionv1.AdmissionRequest{UID: "x", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Kind: "Thing"}, Name: "n"}
	req.Object.Raw = []byte(`{"spec": 5}`)
	for name, resp := range map[string]*admissionv1.AdmissionResponse{
		"isvc mutate": w.isvcs().Mutate(ctx, req), "isvc validate": w.isvcs().Validate(ctx, req),
		"pod": w.pods().Mutate(ctx, req), "csr": w.runtimes().ValidateCluster(ctx, req),
		"class": ValidateAcceleratorClass(ctx, req), "profile": ValidateProfile(ctx, req),
		"model": ValidateBaseModel(ctx, req), "cluster model": ValidateClusterBaseModel(ctx, req),
	} {
		require.False(t, resp.Allowed, name)
		assert.Contains(t, resp.Result.Message, "cannot decode the object", name)
	}
}

// Seed 001's previous schema (predictor.sklearn) is migrated at admission
// and the runtime auto-selected, as KServe does since v0.9. The seed's
// kserve-sklearnserver lists no protocolVersions (the seed elides them),
// which KServe reads as "any": the KServe default v1 is then dropped.
func TestPreviousSchemaIsMigratedAndPinned(t *testing.T) {
	w := newWorld()
	w.withElidedImage(w.addCSR(t, "api/v1beta1/testdata/seeds/001-implicit-kserve-sklearnserver.yaml", time.Now()), "kserve/sklearnserver:latest")
	isvc := seedService(t, "api/v1beta1/testdata/seeds/001-previous-schema-isvc-sklearn.yaml")
	out, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, "ClusterServingRuntime/kserve-sklearnserver", out.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.Nil(t, out.Spec.Predictor.SKLearn)
	assert.Equal(t, "sklearn", out.Spec.Predictor.Model.ModelFormat.Name)
	assert.Nil(t, out.Spec.Runtime)
	assert.Nil(t, out.Spec.ProtocolVersion)
	assert.NotEmpty(t, resp.Warnings, "the migration is announced")
}
