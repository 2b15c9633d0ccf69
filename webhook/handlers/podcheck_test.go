package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// withElidedImage gives a seed runtime that elides its containers ("...")
// the image KServe ships for it, so that its services' pods can be created.
func (w *world) withElidedImage(rt *v1beta1.ClusterServingRuntime, image string) {
	rt.Spec.Containers = []corev1.Container{{Name: "kserve-container", Image: image}}
	w.index.UpsertClusterServingRuntime(rt)
}

// What the API server would refuse in the composed pods is denied when the
// service is applied, with reason Invalid and one cause per finding whose
// field names the composed pod and its field; a missing image says where
// to set one.
func TestComposedPodsAreCheckedAtAdmission(t *testing.T) {
	const head = "InferenceService mistral-7b-instruct/mistral-7b-instruct: the pods berth would create for it cannot be composed:\n- "
	pod := field.NewPath("pods").Key("mistral-7b-instruct-engine-0").Child("spec", "containers")
	for _, tc := range []struct {
		name   string
		mutate func(rt *v1beta1.ClusterServingRuntime)
		want   *field.Error
		line   string
	}{
		{name: "valid", mutate: func(*v1beta1.ClusterServingRuntime) {}},
		{name: "no image", mutate: func(rt *v1beta1.ClusterServingRuntime) { rt.Spec.EngineConfig.Runner.Image = "" },
			want: field.Required(pod.Index(0).Child("image"), `container "ome-container" has no image; set spec.engine.runner.image on this InferenceService, or an image in ClusterServingRuntime/srt-mistral-7b-instruct (its engineConfig)`),
			line: `pods[mistral-7b-instruct-engine-0].spec.containers[0].image: Required value: container "ome-container" has no image; set spec.engine.runner.image on this InferenceService, or an image in ClusterServingRuntime/srt-mistral-7b-instruct (its engineConfig)`},
		{name: "env name with '='", mutate: func(rt *v1beta1.ClusterServingRuntime) {
			rt.Spec.EngineConfig.Runner.Env = append(rt.Spec.EngineConfig.Runner.Env, corev1.EnvVar{Name: "A=B", Value: "1"})
		}, want: field.Invalid(pod.Index(0).Child("env").Index(0).Child("name"), "A=B", "a valid environment variable name must consist only of printable ASCII characters other than '='"),
			line: `pods[mistral-7b-instruct-engine-0].spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`},
		{name: "port out of range", mutate: func(rt *v1beta1.ClusterServingRuntime) {
			rt.Spec.EngineConfig.Runner.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 70000}}
		}, want: field.Invalid(pod.Index(0).Child("ports").Index(0).Child("containerPort"), int32(70000), "must be between 1 and 65535, inclusive"),
			line: `pods[mistral-7b-instruct-engine-0].spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`},
		{name: "sidecar name not a DNS label", mutate: func(rt *v1beta1.ClusterServingRuntime) {
			rt.Spec.EngineConfig.Containers = []corev1.Container{{Name: "Metrics_Exporter", Image: "exporter:1"}}
		}, want: field.Invalid(pod.Index(1).Child("name"), "Metrics_Exporter", "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
			line: `pods[mistral-7b-instruct-engine-0].spec.containers[1].name: Invalid value: "Metrics_Exporter": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := seedWorld(t)
			rt := w.addCSR(t, "api/v1beta1/testdata/seeds/000-srt-mistral-7b-instruct.yaml", time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC))
			tc.mutate(rt)
			w.index.UpsertClusterServingRuntime(rt)
			isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-explicit-runtime.yaml")
			h := w.isvcs()
			d, err := h.resolve(ctx, isvc, nil)
			require.NoError(t, err)
			_, errs := h.compose(isvc, d)
			if tc.want == nil {
				assert.Empty(t, errs)
			} else {
				assert.Equal(t, field.ErrorList{tc.want}, errs)
			}

			_, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
			if tc.want == nil {
				require.True(t, resp.Allowed, "%+v", resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			assert.Equal(t, head+tc.line, resp.Result.Message)
			assert.Equal(t, metav1.StatusReasonInvalid, resp.Result.Reason)
			require.NotNil(t, resp.Result.Details)
			assert.Equal(t, []metav1.StatusCause{{Type: metav1.CauseType(tc.want.Type), Field: tc.want.Field, Message: tc.want.ErrorBody()}}, resp.Result.Details.Causes)
		})
	}
}

// On UPDATE, a finding the stored service had too (same type, field and
// detail) is a warning; one the update introduces is denied.
func TestComposedPodFindingsAreRatchetedOnUpdate(t *testing.T) {
	w := seedWorld(t)
	rt := w.addCSR(t, "api/v1beta1/testdata/seeds/000-srt-mistral-7b-instruct.yaml", time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC))
	rt.Spec.EngineConfig.Runner.Image = ""
	w.index.UpsertClusterServingRuntime(rt)
	stored := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-explicit-runtime.yaml")

	scaled := stored.DeepCopy()
	scaled.Spec.Engine.MaxReplicas = ptrTo(int32(2))
	_, resp := admitISVC(t, w, admissionv1.Update, scaled, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Contains(t, resp.Warnings, `pods[mistral-7b-instruct-engine-0].spec.containers[0].image: Required value: container "ome-container" has no image; set spec.engine.runner.image on this InferenceService, or an image in ClusterServingRuntime/srt-mistral-7b-instruct (its engineConfig)`+
		" (not introduced by this update, so not denied; pods of this service cannot be created until it is fixed)")

	badEnv := scaled.DeepCopy()
	badEnv.Spec.Engine.Runner = &v1beta1.RunnerSpec{Env: []corev1.EnvVar{{Name: "A=B", Value: "1"}}}
	_, resp = admitISVC(t, w, admissionv1.Update, badEnv, stored)
	require.False(t, resp.Allowed, "the update introduced the env name")
	require.NotNil(t, resp.Result.Details)
	for _, c := range resp.Result.Details.Causes {
		assert.NotEqual(t, "pods[mistral-7b-instruct-engine-0].spec.containers[0].image", c.Field, "the stored service lacked the image too")
	}
	assert.Len(t, resp.Result.Details.Causes, 1, "%+v", resp.Result.Details.Causes)
}

// OEP-0003's Story 2 runtime, verbatim, has no image: it is admitted with a
// warning that says so and where to set one; a runtime with an image gets
// none. (e2e TestStory2RuntimeWithoutImageIsDeniedAtApply denies its service.)
func TestRuntimeWithoutImageIsWarnedAndItsServiceDenied(t *testing.T) {
	w := newWorld()
	w.addClass(t, "deploy/accelerators/nvidia-a100-40gb.yaml")
	w.addClass(t, "deploy/accelerators/nvidia-h100-80gb.yaml")
	var sr v1beta1.ServingRuntime
	load(t, "api/v1beta1/testdata/seeds/002-story2-sglang-universal.yaml", &sr)
	sr.Namespace = "default"
	resp := w.runtimes().ValidateNamespaced(ctx, request(t, admissionv1.Create, "ServingRuntime", &sr, nil, "default", sr.Name))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, []string{`engine pods composed from this runtime would be refused by the API server: spec.containers[0].image: Required value: container "ome-container" has no image; set spec.engineConfig.runner.image (or an image in every acceleratorConfigurations entry), else every InferenceService of it must set spec.engine.runner.image or it is denied`},
		resp.Warnings)

	imaged := sr.DeepCopy()
	imaged.Spec.EngineConfig = &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Image: "lmsysorg/sglang:v0.4.6"}}
	resp = w.runtimes().ValidateNamespaced(ctx, request(t, admissionv1.Create, "ServingRuntime", imaged, nil, "default", sr.Name))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Empty(t, resp.Warnings)

	perClass := sr.DeepCopy() // every class's configuration brings the image
	for i := range perClass.Spec.AcceleratorConfigurations {
		perClass.Spec.AcceleratorConfigurations[i].Runner.Image = "lmsysorg/sglang:v0.4.6"
	}
	resp = w.runtimes().ValidateNamespaced(ctx, request(t, admissionv1.Create, "ServingRuntime", perClass, nil, "default", sr.Name))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Empty(t, resp.Warnings)
}
