package handlers

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// gpuWorld: the out-of-box SGLang Mistral runtime, the H100 and A100 classes
// with one node each, and a pinned service.
func gpuWorld(t *testing.T) (*world, *v1beta1.InferenceService) {
	w := newWorld()
	w.addCSR(t, "deploy/runtimes/srt-mistral-7b-instruct-rt.yaml", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	w.addClass(t, "deploy/accelerators/nvidia-h100-80gb.yaml")
	w.addClass(t, "deploy/accelerators/nvidia-a100-40gb.yaml")
	w.addNode("h100-0", map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, map[corev1.ResourceName]int64{"nvidia.com/gpu": 8})
	w.addNode("a100-0", map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, map[corev1.ResourceName]int64{"nvidia.com/gpu": 8})
	m := mistralModel()
	fw := "4.57.1"
	m.Spec.ModelFramework.Version = &fw
	m.Namespace = "team-a"
	w.index.UpsertBaseModel(m)

	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "team-a"},
		Spec: v1beta1.InferenceServiceSpec{
			Model:               &v1beta1.ModelRef{Name: m.Name},
			AcceleratorSelector: &v1beta1.AcceleratorSelector{PreferredClasses: []string{"nvidia-h100-80gb"}},
			Engine: &v1beta1.EngineSpec{PodSpec: v1beta1.PodSpec{NodeSelector: map[string]string{"topology.kubernetes.io/zone": "us-west-2a"}},
				Runner: &v1beta1.RunnerSpec{Env: []corev1.EnvVar{{Name: "USER_SETTING", Value: "on"}}}},
		},
	}
	stored, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	require.NoError(t, w.services.Add(stored))
	return w, stored
}

// skeletonPod is the pod the reconciler creates for group 0 of a
// service's component (merge.SkeletonPod), as JSON, with fields unknown to
// our k8s.io/api added: they must survive the patch.
func skeletonPod(t testing.TB, service, component string) []byte {
	t.Helper()
	svc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: service, Namespace: "team-a", UID: "uid-" + types.UID(service)}}
	raw, err := json.Marshal(merge.SkeletonPod(svc, component, merge.GroupIdentity{}))
	require.NoError(t, err)
	var pod map[string]any
	require.NoError(t, json.Unmarshal(raw, &pod))
	pod["futureTopLevel"] = map[string]any{"keep": true}
	spec := pod["spec"].(map[string]any)
	spec["futureSpecField"] = "keep-me"
	spec["containers"].([]any)[0].(map[string]any)["futureContainerField"] = 7
	raw, err = json.Marshal(pod)
	require.NoError(t, err)
	return raw
}

func admitPod(t *testing.T, w *world, raw []byte) (*admissionv1.AdmissionResponse, []byte) {
	t.Helper()
	req := &admissionv1.AdmissionRequest{UID: "p", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Kind: "Pod"}, Namespace: "team-a"}
	req.Object.Raw = raw
	resp := w.pods().Mutate(ctx, req)
	if !resp.Allowed {
		return resp, nil
	}
	return resp, applyPatch(t, raw, resp)
}

func TestPodIsComposedFromThePinnedDecision(t *testing.T) {
	w, isvc := gpuWorld(t)
	assert.Equal(t, "nvidia-h100-80gb", isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass])
	resp, out := admitPod(t, w, skeletonPod(t, "chat", v1beta1.ComponentEngine))
	require.True(t, resp.Allowed, "%+v", resp.Result)

	var pod corev1.Pod
	require.NoError(t, json.Unmarshal(out, &pod))
	assert.Equal(t, "NVIDIA-H100-80GB-HBM3", pod.Spec.NodeSelector["nvidia.com/gpu.product"])
	assert.Equal(t, "us-west-2a", pod.Spec.NodeSelector["topology.kubernetes.io/zone"])
	c := pod.Spec.Containers[0]
	assert.Equal(t, "lmsysorg/sglang:v0.5.5.post3", c.Image)
	assert.Contains(t, strings.Join(c.Args, " "), "--served-model-name chat")
	q := c.Resources.Limits["nvidia.com/gpu"]
	assert.Equal(t, "1", q.String())
	assert.True(t, hasEnv(c.Env, "USER_SETTING"))
	assert.NotEmpty(t, pod.Annotations[v1beta1.AnnotationRevision])

	// Fields unknown to our k8s.io/api survive.
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m))
	assert.Equal(t, map[string]any{"keep": true}, m["futureTopLevel"])
	spec := m["spec"].(map[string]any)
	assert.Equal(t, "keep-me", spec["futureSpecField"])
	assert.Equal(t, float64(7), spec["containers"].([]any)[0].(map[string]any)["futureContainerField"])

	// Reinvocation: a second pass over the stored pod is an empty patch.
	again, _ := admitPod(t, w, out)
	require.True(t, again.Allowed)
	assert.Empty(t, string(again.Patch))
}

func TestPodDeniedWithoutServiceOrPin(t *testing.T) {
	w, isvc := gpuWorld(t)
	resp, _ := admitPod(t, w, skeletonPod(t, "nope", v1beta1.ComponentEngine))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "InferenceService team-a/nope does not exist")

	unpinned := isvc.DeepCopy()
	delete(unpinned.Annotations, v1beta1.AnnotationResolvedRuntime)
	require.NoError(t, w.services.Update(unpinned))
	resp, _ = admitPod(t, w, skeletonPod(t, "chat", v1beta1.ComponentEngine))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "has no resolved runtime")

	require.NoError(t, w.services.Update(isvc))
	resp, _ = admitPod(t, w, skeletonPod(t, "chat", "gpu"))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, `is not engine, decoder or router`)
}

func TestPodWithoutLabelIsUntouched(t *testing.T) {
	w, _ := gpuWorld(t)
	plain := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i"}]}}`
	resp, _ := admitPod(t, w, []byte(plain))
	assert.True(t, resp.Allowed)
	assert.Empty(t, resp.Patch)
}

// FuzzPodPatch: for arbitrary user args, env values, labels and an unknown
// field, the returned patch applied with evanphx/json-patch yields exactly
// the pod merge composes, the unknown field included, and a second pass is
// an empty patch.
func FuzzPodPatch(f *testing.F) {
	f.Add("--tp-size=2", "value", "team-x", `{"a":[1,2]}`)
	f.Add("{{.Name}}", `quote"back\slash`, "", `null`)
	f.Add("--flag", "{{ jinja }}", "x/y", `"s"`)
	f.Fuzz(func(t *testing.T, arg, envValue, label, unknown string) {
		var unknownJSON any
		if json.Unmarshal([]byte(unknown), &unknownJSON) != nil {
			unknownJSON = unknown
		}
		w, _ := gpuWorld(t)
		pod := map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "labels": map[string]any{"ome.io/inferenceservice": "chat", "extra": label},
				// The handler leaves managedFields out of its encodings
				// (podpatch.go): the patch must leave it as sent.
				"managedFields": []any{map[string]any{"manager": label, "operation": "Update", "apiVersion": "v1",
					"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{}}, "f:" + arg: unknownJSON}}}},
			"futureField": unknownJSON,
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "ome-container", "image": "x", "args": []any{arg},
				"env": []any{map[string]any{"name": "E", "value": envValue}}, "futureContainerField": unknownJSON,
			}}},
		}
		raw, err := json.Marshal(pod)
		require.NoError(t, err)
		resp, out := admitPod(t, w, raw)
		if !resp.Allowed {
			return // e.g. a label value merge rejects; denials carry a message
		}
		// Compare with composing the typed pod directly.
		var typed corev1.Pod
		require.NoError(t, json.Unmarshal(raw, &typed))
		isvc, err := w.pods().service(ctx, "team-a", "chat")
		require.NoError(t, err)
		d, err := w.index.Resolve(isvc, "ClusterServingRuntime", "srt-mistral-7b-instruct-rt", "nvidia-h100-80gb")
		require.NoError(t, err)
		group, err := merge.GroupIdentityFromPod(&typed)
		require.NoError(t, err)
		in := merge.Input{Service: isvc, Component: "engine", RuntimeKind: d.Runtime.Kind, RuntimeName: d.Runtime.Name,
			Runtime: d.Runtime.Spec, AcceleratorClass: d.AcceleratorClass, Profiles: map[string]*v1beta1.ClusterEngineRuntimeProfile{}, Group: group}
		typed.Namespace = "team-a"
		require.NoError(t, merge.ComposePod(in, &typed))
		typed.Namespace = ""
		rev, err := merge.Revision(in)
		require.NoError(t, err)
		typed.Annotations = map[string]string{v1beta1.AnnotationRevision: rev}
		var got corev1.Pod
		require.NoError(t, json.Unmarshal(out, &got))
		if !equality.Semantic.DeepEqual(&typed, &got) {
			t.Fatalf("patched pod differs from composed pod:\npatched: %s\ncomposed: %s", out, mustJSON(&typed))
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal(out, &m))
		// Compare with the value as it was sent: JSON cannot carry invalid
		// UTF-8, so the request already holds U+FFFD where the fuzzer wrote
		// a bad byte.
		var sent map[string]any
		require.NoError(t, json.Unmarshal(raw, &sent))
		assert.Equal(t, mustJSON(sent["futureField"]), mustJSON(m["futureField"]))
		assert.Equal(t, mustJSON(sent["metadata"].(map[string]any)["managedFields"]), mustJSON(m["metadata"].(map[string]any)["managedFields"]))
		assert.Equal(t, mustJSON(sent["futureField"]), mustJSON(m["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["futureContainerField"]))
		again, _ := admitPod(t, w, out)
		require.True(t, again.Allowed)
		assert.Empty(t, string(again.Patch))
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func revisionOf(t *testing.T, w *world) string {
	t.Helper()
	resp, out := admitPod(t, w, skeletonPod(t, "chat", v1beta1.ComponentEngine))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	var pod corev1.Pod
	require.NoError(t, json.Unmarshal(out, &pod))
	return pod.Annotations[v1beta1.AnnotationRevision]
}

// The revision cache must never serve a stale revision: a new service
// version (resourceVersion) or a replaced runtime object is a new key.
func TestRevisionFollowsServiceAndRuntimeVersions(t *testing.T) {
	w, isvc := gpuWorld(t)
	isvc.ResourceVersion, isvc.UID = "1", "uid-1"
	require.NoError(t, w.services.Update(isvc))
	first := revisionOf(t, w)
	assert.Equal(t, first, revisionOf(t, w), "same inputs, same revision")

	changed := isvc.DeepCopy()
	changed.ResourceVersion = "2"
	changed.Spec.Engine.Runner.Env[0].Value = "off"
	require.NoError(t, w.services.Update(changed))
	second := revisionOf(t, w)
	assert.NotEqual(t, first, second, "a changed service changes the revision")

	var updated v1beta1.ClusterServingRuntime
	load(t, "deploy/runtimes/srt-mistral-7b-instruct-rt.yaml", &updated)
	updated.Spec.EngineConfig.Runner.Image = "lmsysorg/sglang:next"
	w.index.UpsertClusterServingRuntime(&updated) // what the informer does on an update
	assert.NotEqual(t, second, revisionOf(t, w), "a replaced runtime object changes the revision")
}

// A pod that composes on its own is still denied when another role of its
// component cannot be composed: the revision covers every role.
func TestPodDeniedWhenTheRevisionCannotBeComposed(t *testing.T) {
	w, isvc := gpuWorld(t)
	broken := isvc.DeepCopy()
	broken.Spec.Engine.Leader = &v1beta1.LeaderSpec{Runner: &v1beta1.RunnerSpec{Args: []string{"--x={{.Labels.missing}}"}}}
	require.NoError(t, w.services.Update(broken))
	resp, _ := admitPod(t, w, skeletonPod(t, "chat", v1beta1.ComponentEngine))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, " of InferenceService team-a/chat: InferenceService team-a/chat spec.engine.leader.runner.args[0]: "+
		"template key .Labels.missing not found on InferenceService team-a/chat; add the label or remove the reference")
}
