package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// withElidedImage gives a seed runtime that elides its containers ("...")
// the image KServe ships for it, so that its services' pods can be created.
func (w *world) withElidedImage(rt *v1beta1.ClusterServingRuntime, image string) {
	rt.Spec.Containers = []corev1.Container{{Name: "kserve-container", Image: image}}
	w.index.UpsertClusterServingRuntime(rt)
}

// What the API server would refuse in the composed pods is denied when the
// service is applied, one line per finding, naming the pod's field; a
// missing image says where to set one.
func TestComposedPodsAreCheckedAtAdmission(t *testing.T) {
	const head = "InferenceService mistral-7b-instruct/mistral-7b-instruct: the pods berth would create for it cannot be composed:\n- "
	for _, tc := range []struct {
		name       string
		mutate     func(rt *v1beta1.ClusterServingRuntime)
		wantDenial string
	}{
		{name: "valid", mutate: func(*v1beta1.ClusterServingRuntime) {}},
		{name: "no image", mutate: func(rt *v1beta1.ClusterServingRuntime) { rt.Spec.EngineConfig.Runner.Image = "" },
			wantDenial: head + `engine pod mistral-7b-instruct-engine-0: spec.containers[0].image: Required value: container "ome-container" has no image; set spec.engine.runner.image on this InferenceService, or an image in ClusterServingRuntime/srt-mistral-7b-instruct (its engineConfig)`},
		{name: "env name with '='", mutate: func(rt *v1beta1.ClusterServingRuntime) {
			rt.Spec.EngineConfig.Runner.Env = append(rt.Spec.EngineConfig.Runner.Env, corev1.EnvVar{Name: "A=B", Value: "1"})
		}, wantDenial: head + `engine pod mistral-7b-instruct-engine-0: spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`},
		{name: "port out of range", mutate: func(rt *v1beta1.ClusterServingRuntime) {
			rt.Spec.EngineConfig.Runner.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 70000}}
		}, wantDenial: head + `engine pod mistral-7b-instruct-engine-0: spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive`},
		{name: "sidecar name not a DNS label", mutate: func(rt *v1beta1.ClusterServingRuntime) {
			rt.Spec.EngineConfig.Containers = []corev1.Container{{Name: "Metrics_Exporter", Image: "exporter:1"}}
		}, wantDenial: head + `engine pod mistral-7b-instruct-engine-0: spec.containers[1].name: Invalid value: "Metrics_Exporter": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := seedWorld(t)
			rt := w.addCSR(t, "api/v1beta1/testdata/seeds/000-srt-mistral-7b-instruct.yaml", time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC))
			tc.mutate(rt)
			w.index.UpsertClusterServingRuntime(rt)
			isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-explicit-runtime.yaml")
			_, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
			if tc.wantDenial == "" {
				require.True(t, resp.Allowed, "%+v", resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			assert.Equal(t, tc.wantDenial, resp.Result.Message)
		})
	}
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
