package handlers

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// A template key missing from the service was found only when the
// reconciler's pods were admitted. The service's admission composes its
// pods and denies the service itself.
func TestMissingTemplateKeyIsDeniedAtServiceAdmission(t *testing.T) {
	w := seedWorld(t)
	var rt v1beta1.ClusterServingRuntime
	load(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct-2.yaml", &rt)
	rt.CreationTimestamp = metav1.NewTime(time.Now())
	rt.Spec.EngineConfig.Runner.Args = append(rt.Spec.EngineConfig.Runner.Args, "--team={{.Labels.team}}")
	w.index.UpsertClusterServingRuntime(&rt)

	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	_, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.False(t, resp.Allowed, "the runtime reads label team, which the service lacks")
	assert.Contains(t, resp.Result.Message, "template key .Labels.team not found on InferenceService mistral-7b-instruct/mistral-7b-instruct")
	assert.Contains(t, resp.Result.Message, "engineConfig.runner.args")
	require.NotNil(t, resp.Result.Details)
	assert.Equal(t, []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.engine",
		Message: "Invalid value: runtime ClusterServingRuntime/srt-mistral-7b-instruct-2 engineConfig.runner.args[0]: template key .Labels.team not found on InferenceService mistral-7b-instruct/mistral-7b-instruct; add the label or remove the reference"}},
		resp.Result.Details.Causes, "one cause, on the service's component the pod is composed for")
	assert.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)

	isvc.Labels = map[string]string{"team": "search"}
	_, resp = admitISVC(t, w, admissionv1.Create, isvc, nil)
	assert.True(t, resp.Allowed, "%+v", resp.Result)

	// Templates in the service's own fields are rendered too.
	own := isvc.DeepCopy()
	own.Spec.Engine.Runner = &v1beta1.RunnerSpec{Args: []string{"--owner={{.Annotations.owner}}"}}
	_, resp = admitISVC(t, w, admissionv1.Create, own, nil)
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "spec.engine.runner.args[0]")
	assert.Contains(t, resp.Result.Message, "template key .Annotations.owner not found")

	// An update of a service that already lacked the key is not denied for it.
	stored := isvc.DeepCopy()
	stored.Labels = nil
	stored.Annotations = map[string]string{v1beta1.AnnotationResolvedRuntime: pinWinner}
	stored.Annotations[v1beta1.AnnotationResolvedInputs] = inputDigest(stored)
	scaled := stored.DeepCopy()
	scaled.Spec.Engine.MaxReplicas = ptrTo(int32(2))
	_, resp = admitISVC(t, w, admissionv1.Update, scaled, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Contains(t, resp.Warnings[len(resp.Warnings)-1], "template key .Labels.team not found")
}

// The CRD rule "decoder needs engine" never fired: the mutating webhook
// added spec.engine before the apiserver validated. What the user sent is
// checked.
func TestDecoderWithoutEngineIsDenied(t *testing.T) {
	w := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	isvc.Spec.Engine = nil
	isvc.Spec.Decoder = &v1beta1.DecoderSpec{}
	resp := w.isvcs().Mutate(ctx, request(t, admissionv1.Create, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name))
	require.False(t, resp.Allowed)
	require.NotNil(t, resp.Result.Details)
	want := []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.engine",
		Message: "Required value: decoder needs engine: spec.decoder serves the decode phase of a prefill/decode pair and spec.engine the prefill phase; set spec.engine or remove spec.decoder"}}
	if diff := cmp.Diff(want, resp.Result.Details.Causes); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}

	// A stored service that already has a decoder (its engine defaulted by
	// an older berth) is not denied when an apply drops the engine.
	stored := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	stored.Spec.Decoder = &v1beta1.DecoderSpec{}
	resp = w.isvcs().Mutate(ctx, request(t, admissionv1.Update, "InferenceService", isvc, stored, isvc.Namespace, isvc.Name))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Contains(t, resp.Warnings, "spec.engine: Required value: decoder needs engine: spec.decoder serves the decode phase of a prefill/decode pair and spec.engine the prefill phase; set spec.engine or remove spec.decoder (not introduced by this update, so not denied; berth defaults the engine)")
}

// KServe samples: the protocol defaults as KServe's does (v1; v2 for
// Triton, ONNX and Hugging Face), and the runtime is auto-selected by
// priority among the runtimes that serve it, not hard-coded per framework.
func TestKServeSamplesAreAutoSelected(t *testing.T) {
	w := newWorld()
	now := time.Now()
	w.withElidedImage(w.addCSR(t, "api/v1beta1/testdata/seeds/001-priority-kserve-sklearnserver.yaml", now), "kserve/sklearnserver:latest")
	w.withElidedImage(w.addCSR(t, "api/v1beta1/testdata/seeds/001-priority-mlserver.yaml", now), "docker.io/seldonio/mlserver:1.5.0")
	cases := []struct {
		file, runtime string
		protocol      v1beta1.ProtocolVersion
	}{
		{"001-previous-schema-isvc-sklearn.yaml", "ClusterServingRuntime/kserve-sklearnserver", v1beta1.ProtocolKServeV1},
		{"001-implicit-isvc-sklearn.yaml", "ClusterServingRuntime/kserve-sklearnserver", v1beta1.ProtocolKServeV1},
		{"001-priority-isvc-sklearn-v2.yaml", "ClusterServingRuntime/mlserver", v1beta1.ProtocolKServeV2},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			out, resp := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/"+tc.file), nil)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			assert.Equal(t, tc.runtime, out.Annotations[v1beta1.AnnotationResolvedRuntime])
			require.NotNil(t, out.Spec.ProtocolVersion)
			assert.Equal(t, tc.protocol, *out.Spec.ProtocolVersion)
			assert.Nil(t, out.Spec.Runtime, "no runtime is named for the user")
		})
	}

	// The previous schema asking for v2 goes to mlserver by priority.
	v2 := seedService(t, "api/v1beta1/testdata/seeds/001-previous-schema-isvc-sklearn.yaml")
	v2.Spec.Predictor.SKLearn.ProtocolVersion = ptrTo(v1beta1.ProtocolKServeV2)
	out, resp := admitISVC(t, w, admissionv1.Create, v2, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, "ClusterServingRuntime/mlserver", out.Annotations[v1beta1.AnnotationResolvedRuntime])
}

// A role's composition error is its component's field on the service; an
// error merge does not attribute is the service's spec.
func TestComposeErrorNamesTheComponent(t *testing.T) {
	inner := errors.New("runtime X engineConfig.runner.args[0]: template key .Labels.team not found")
	assert.Equal(t, fieldError(field.NewPath("spec", "decoder"), inner.Error()),
		composeError(&merge.ComposeError{Component: v1beta1.ComponentDecoder, Role: merge.RoleLeader, Err: inner}))
	assert.Equal(t, fieldError(field.NewPath("spec"), "merge: no pod"), composeError(errors.New("merge: no pod")))
}
