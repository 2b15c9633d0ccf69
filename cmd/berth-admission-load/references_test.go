package main

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// The replay webhook's patch, applied as the API server applies it
// (evanphx/json-patch v4) to the replay path's pod, gives the pod berth
// composed: its spec and annotations, with the replay pod's own name and
// labels.
func TestReplayPatchMakesTheComposedPod(t *testing.T) {
	svc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: serviceName, Namespace: namespace, UID: "u1"}}
	stored := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: namespace,
			Annotations: map[string]string{v1beta1.AnnotationRevision: "abc123", "other": "x"}},
		Spec: corev1.PodSpec{
			SchedulerName: noScheduler,
			NodeSelector:  map[string]string{"nvidia.com/gpu.product": "H100"},
			Containers: []corev1.Container{{
				Name: "ome-container", Image: engineImage, Args: []string{"--port", "8080"},
				Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-abcde"}},
		},
	}
	p, err := replayPatch(stored)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(p)
	if err != nil {
		t.Fatal(err)
	}
	pod := podFor(svc, "replay-1", false)
	pod.Labels[replayLabel] = "true"
	wantLabels := maps.Clone(pod.Labels)
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(raw)
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(stored.Spec, got.Spec); d != "" {
		t.Errorf("spec (-composed +replayed):\n%s", d)
	}
	if d := cmp.Diff(stored.Annotations, got.Annotations); d != "" {
		t.Errorf("annotations (-composed +replayed):\n%s", d)
	}
	if got.Name != "replay-1" || !maps.Equal(got.Labels, wantLabels) {
		t.Errorf("name %q, labels %v; want replay-1, %v", got.Name, got.Labels, wantLabels)
	}
}
