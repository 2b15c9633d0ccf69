package merge

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

// kserveTorchServe is KServe's torchserve runtime, vendored verbatim.
func kserveTorchServe(t *testing.T) *v1beta1.ServingRuntimeSpec {
	t.Helper()
	b, err := os.ReadFile("testdata/upstream/kserve-torchserve.yaml")
	require.NoError(t, err)
	var rt v1beta1.ClusterServingRuntime
	require.NoError(t, yaml.UnmarshalStrict(b, &rt))
	require.Equal(t, "{{.Labels.serviceEnvelope}}", rt.Spec.Containers[0].Env[0].Value, "the vendored runtime changed")
	return &rt.Spec
}

// composeKServeEngine composes the engine of svc on rt, as admission does.
func composeKServeEngine(t *testing.T, svc *v1beta1.InferenceService, rt *v1beta1.ServingRuntimeSpec) (*corev1.Pod, []string, []error) {
	t.Helper()
	roles, errs := ComposeService(ServiceInput{Service: svc, RuntimeKind: "ClusterServingRuntime", RuntimeName: "kserve-torchserve", Runtime: rt})
	for _, r := range roles {
		if r.Topology.Component == v1beta1.ComponentEngine {
			return r.Pod, r.Warnings, errs
		}
	}
	return nil, nil, errs
}

// KServe's torchserve runtime sets TS_SERVICE_ENVELOPE from the label
// serviceEnvelope, which KServe renders empty when the service has none:
// berth composes the same pod and warns, naming the key and the field.
func TestKServeTorchServeRendersAMissingLabelEmpty(t *testing.T) {
	rt := kserveTorchServe(t)
	svc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "torchserve", Namespace: "default"},
		Spec:       v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{}},
	}
	pod, warnings, errs := composeKServeEngine(t, svc, rt)
	require.Empty(t, errs)
	require.NotNil(t, pod)
	v, ok := wrappers.ContainerEnv(pod, "kserve-container", "TS_SERVICE_ENVELOPE")
	assert.True(t, ok, "TS_SERVICE_ENVELOPE is set")
	assert.Equal(t, "", v)
	assert.Equal(t, []string{"runtime ClusterServingRuntime/kserve-torchserve spec.containers[0].env[0].value (TS_SERVICE_ENVELOPE): " +
		"template key .Labels.serviceEnvelope not found on InferenceService default/torchserve; rendered empty, as KServe renders it; add the label to set it"}, warnings)
	rev, err := Revision(Input{Service: svc, Component: v1beta1.ComponentEngine, RuntimeKind: "ClusterServingRuntime", RuntimeName: "kserve-torchserve", Runtime: rt})
	require.NoError(t, err)

	labelled := svc.DeepCopy()
	labelled.Labels = map[string]string{"serviceEnvelope": "kserve"}
	pod, warnings, errs = composeKServeEngine(t, labelled, rt)
	require.Empty(t, errs)
	v, _ = wrappers.ContainerEnv(pod, "kserve-container", "TS_SERVICE_ENVELOPE")
	assert.Equal(t, "kserve", v)
	assert.Empty(t, warnings)
	labelledRev, err := Revision(Input{Service: labelled, Component: v1beta1.ComponentEngine, RuntimeKind: "ClusterServingRuntime", RuntimeName: "kserve-torchserve", Runtime: rt})
	require.NoError(t, err)
	assert.NotEqual(t, rev, labelledRev, "the label's value is in the pods, so in the revision")
}

// In a KServe-shaped runtime (spec.containers) a missing label or
// annotation renders empty, with a warning, except where the empty value
// would change the command line: an argument that renders empty, or a flag
// whose value does. Berth's own shape (engineConfig) and the service's
// strings keep berth's rule: a missing key is an error.
func TestKServeContainersMissingTemplateKeys(t *testing.T) {
	const where = "runtime ClusterServingRuntime/kserve-torchserve "
	const missing = "template key .Labels.envelope not found on InferenceService ns/svc"
	const warned = "; rendered empty, as KServe renders it; add the label to set it"
	tests := []struct {
		name    string
		mutate  func(rt *v1beta1.ServingRuntimeSpec, svc *v1beta1.InferenceService)
		check   func(t *testing.T, p *corev1.Pod)
		warning string
		err     string
	}{
		{
			name: "env value renders empty",
			mutate: func(rt *v1beta1.ServingRuntimeSpec, _ *v1beta1.InferenceService) {
				rt.Containers[0].Env = []corev1.EnvVar{{Name: "E", Value: "{{.Labels.envelope}}"}}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				v, _ := wrappers.ContainerEnv(p, "kserve-container", "E")
				assert.Equal(t, "", v)
			},
			warning: where + "spec.containers[0].env[0].value (E): " + missing + warned,
		},
		{
			name: "annotation by index in an env value",
			mutate: func(rt *v1beta1.ServingRuntimeSpec, _ *v1beta1.InferenceService) {
				rt.Containers[0].Env = []corev1.EnvVar{{Name: "E", Value: `v-{{index .Annotations "a/b"}}`}}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				v, _ := wrappers.ContainerEnv(p, "kserve-container", "E")
				assert.Equal(t, "v-", v)
			},
			warning: where + `spec.containers[0].env[0].value (E): template key index .Annotations "a/b" not found on InferenceService ns/svc; ` +
				"rendered empty, as KServe renders it; add the annotation to set it",
		},
		{
			name: "sidecar env value",
			mutate: func(rt *v1beta1.ServingRuntimeSpec, _ *v1beta1.InferenceService) {
				rt.Containers = append(rt.Containers, corev1.Container{Name: "agent", Image: "kserve/agent", Env: []corev1.EnvVar{{Name: "E", Value: "{{.Labels.envelope}}"}}})
			},
			check: func(t *testing.T, p *corev1.Pod) {
				v, ok := wrappers.ContainerEnv(p, "agent", "E")
				assert.True(t, ok)
				assert.Equal(t, "", v)
			},
			warning: where + "spec.containers[1].env[0].value (E): " + missing + warned,
		},
		{
			name: "argument keeps text around the empty value",
			mutate: func(rt *v1beta1.ServingRuntimeSpec, _ *v1beta1.InferenceService) {
				rt.Containers[0].Args = []string{"torchserve", "--name=model-{{.Labels.envelope}}"}
			},
			check: func(t *testing.T, p *corev1.Pod) {
				assert.Equal(t, []string{"torchserve", "--name=model-"}, p.Spec.Containers[0].Args)
			},
			warning: where + "spec.containers[0].args[1]: " + missing + warned,
		},
		{
			name: "flag value that would be empty",
			mutate: func(rt *v1beta1.ServingRuntimeSpec, _ *v1beta1.InferenceService) {
				rt.Containers[0].Args = []string{"torchserve", "--service-envelope={{.Labels.envelope}}"}
			},
			err: "engine: " + where + "spec.containers[0].args[1]: " + missing +
				`; it would render as "--service-envelope=", and a flag value or an argument left empty changes the command line; add the label or remove the reference`,
		},
		{
			name: "argument that would be empty",
			mutate: func(rt *v1beta1.ServingRuntimeSpec, _ *v1beta1.InferenceService) {
				rt.Containers[0].Args = []string{"torchserve", "--service-envelope", "{{.Labels.envelope}}"}
			},
			err: "engine: " + where + "spec.containers[0].args[2]: " + missing +
				`; it would render as "", and a flag value or an argument left empty changes the command line; add the label or remove the reference`,
		},
		{
			name: "command that would be empty",
			mutate: func(rt *v1beta1.ServingRuntimeSpec, _ *v1beta1.InferenceService) {
				rt.Containers[0].Command = []string{"{{.Labels.envelope}}"}
			},
			err: "engine: " + where + "spec.containers[0].command[0]: " + missing +
				`; it would render as "", and a flag value or an argument left empty changes the command line; add the label or remove the reference`,
		},
		{
			name: "berth's shape keeps berth's rule",
			mutate: func(rt *v1beta1.ServingRuntimeSpec, _ *v1beta1.InferenceService) {
				rt.EngineConfig = &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Env: []corev1.EnvVar{{Name: "E", Value: "{{.Labels.envelope}}"}}}}
			},
			err: "engine: " + where + "engineConfig.runner.env[0].value (E): " + missing + "; add the label or remove the reference",
		},
		{
			name: "the service's strings keep berth's rule",
			mutate: func(_ *v1beta1.ServingRuntimeSpec, svc *v1beta1.InferenceService) {
				svc.Spec.Engine.Runner = &v1beta1.RunnerSpec{Env: []corev1.EnvVar{{Name: "E", Value: "{{.Labels.envelope}}"}}}
			},
			err: "engine: InferenceService ns/svc spec.engine.runner.env[0].value (E): " + missing + "; add the label or remove the reference",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := kserveTorchServe(t).DeepCopy()
			rt.Containers[0].Env = nil
			svc := &v1beta1.InferenceService{
				ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns"},
				Spec:       v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{}},
			}
			tc.mutate(rt, svc)
			pod, warnings, errs := composeKServeEngine(t, svc, rt)
			if tc.err != "" {
				require.Len(t, errs, 1)
				assert.EqualError(t, errs[0], tc.err)
				_, err := Revision(Input{Service: svc, Component: v1beta1.ComponentEngine, RuntimeKind: "ClusterServingRuntime", RuntimeName: "kserve-torchserve", Runtime: rt})
				assert.Error(t, err, "the reconciler cannot compute a revision either")
				return
			}
			require.Empty(t, errs)
			tc.check(t, pod)
			assert.Equal(t, []string{tc.warning}, warnings)
			again := pod.DeepCopy()
			require.NoError(t, ComposePod(Input{Service: svc, Component: v1beta1.ComponentEngine, RuntimeKind: "ClusterServingRuntime",
				RuntimeName: "kserve-torchserve", Runtime: rt}, again))
			assert.Equal(t, pod, again, "composing the composed pod changes nothing")
		})
	}
}
