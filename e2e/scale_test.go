package e2e

// Scaling: replicas of each component, set directly or through the
// InferenceService's scale subresource, which the HorizontalPodAutoscaler
// the reconciler creates targets.

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Engine 1→3→1 and decoder 2→1 on a prefill/decode service: the right
// ordinals come and go (the highest go), and the groups that stay, and the
// other components, are never touched.
func TestScaleEngineAndDecoder(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-scale")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-scale")).PD().Obj())
	createService(t, MakeService(ns, "sc").Runtime(rt.Name).Replicas(1).DecoderReplicas(2).Obj())
	waitService(t, ns, "sc", "Ready=True", serviceReady)
	pods := waitPods(t, ns, "sc", "engine, two decoders and a router serving",
		podsNamed("sc-engine-0", "sc-decoder-0", "sc-decoder-1", "sc-router-0"))

	steps := []struct {
		name   string
		mutate func(*v1beta1.InferenceService)
		want   []string
		engine int32 // status.components.engine.replicas afterwards
		dec    int32
	}{
		{"engine 1→3", func(s *v1beta1.InferenceService) { s.Spec.Engine.Replicas = ptr(int32(3)) },
			[]string{"sc-engine-0", "sc-engine-1", "sc-engine-2", "sc-decoder-0", "sc-decoder-1", "sc-router-0"}, 3, 2},
		{"engine 3→1", func(s *v1beta1.InferenceService) { s.Spec.Engine.Replicas = ptr(int32(1)) },
			[]string{"sc-engine-0", "sc-decoder-0", "sc-decoder-1", "sc-router-0"}, 1, 2},
		{"decoder 2→1", func(s *v1beta1.InferenceService) { s.Spec.Decoder.Replicas = ptr(int32(1)) },
			[]string{"sc-engine-0", "sc-decoder-0", "sc-router-0"}, 1, 1},
	}
	for _, st := range steps {
		// Steps build on each other: not parallel, and a failed one ends the test.
		ok := t.Run(st.name, func(t *testing.T) {
			w := startPodWatch(t, ns)
			updateService(t, ns, "sc", st.mutate)
			isvc := waitService(t, ns, "sc", "Ready=True for the new replicas", func(s *v1beta1.InferenceService) bool {
				return serviceReady(s) && s.Status.Components[v1beta1.ComponentEngine].Replicas == st.engine &&
					s.Status.Components[v1beta1.ComponentDecoder].Replicas == st.dec
			})
			after := waitPods(t, ns, "sc", "pods "+st.name, podsNamed(st.want...))
			wantGone := map[string]bool{}
			for _, p := range pods {
				wantGone[p.Name] = true
			}
			for _, p := range after {
				delete(wantGone, p.Name)
				if old := podByName(pods, p.Name); old != nil {
					assert.Equal(t, old.UID, p.UID, "pod %s is kept as it was", p.Name)
				}
				c := p.Labels[v1beta1.LabelComponent]
				assert.Equal(t, isvc.Status.Components[c].Revision, p.Annotations[v1beta1.AnnotationRevision], "pod %s revision", p.Name)
			}
			_, events, err := w.snapshot()
			require.NoError(t, err)
			var gone, want []string
			for _, p := range goneInOrder(events, uidSet(pods)) {
				gone = append(gone, p.Name)
			}
			for n := range wantGone {
				want = append(want, n)
			}
			sort.Strings(want)
			assert.ElementsMatch(t, want, gone, "pods deleted")
			pods = after
		})
		if !ok {
			return
		}
	}
}

// A service scaling on cpu gets an autoscaling/v2 HorizontalPodAutoscaler
// it owns, which targets the InferenceService's scale subresource; that
// subresource answers from the start (minReplicas groups), `kubectl scale
// isvc` scales the engine through it, and the real HPA controller reads it
// (AbleToScale).
func TestAutoscalerScalesThroughScaleSubresource(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-hpa")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-hpa")).Obj())
	createService(t, MakeService(ns, "auto").Runtime(rt.Name).Autoscale(v1beta1.ScaleMetricCPU, 1, 3).Obj())
	isvc := waitService(t, ns, "auto", "Ready=True", serviceReady)
	waitPods(t, ns, "auto", "one group serving", podsNamed("auto-engine-0"))

	var hpa *autoscalingv2.HorizontalPodAutoscaler
	waitFor(t, ns, "the HPA auto", func() bool {
		h, err := env.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctxT(t, apiTimeout), "auto", metav1.GetOptions{})
		hpa = h
		return err == nil
	})
	assertOwned(t, isvc, hpa, "HPA")
	assert.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "ome.io/v1beta1", Kind: "InferenceService", Name: "auto"}, hpa.Spec.ScaleTargetRef)
	assert.Equal(t, ptr(int32(1)), hpa.Spec.MinReplicas)
	assert.EqualValues(t, 3, hpa.Spec.MaxReplicas)
	if assert.Len(t, hpa.Spec.Metrics, 1) && assert.NotNil(t, hpa.Spec.Metrics[0].Resource) {
		assert.Equal(t, corev1.ResourceCPU, hpa.Spec.Metrics[0].Resource.Name)
	}

	// What the HPA reads, before anyone scaled: the minReplicas group.
	scalePath := "/apis/ome.io/v1beta1/namespaces/" + ns + "/inferenceservices/auto/scale"
	out, err := kubectl(t, "", "get", "--raw", scalePath)
	if assert.NoError(t, err, "GET the scale subresource of a service that sets minReplicas but not replicas: %s", out) {
		var scale autoscalingv1.Scale
		require.NoError(t, json.Unmarshal([]byte(out), &scale), out)
		assert.EqualValues(t, 1, scale.Spec.Replicas, "scale spec before scaling")
		assert.EqualValues(t, 1, scale.Status.Replicas, "scale status before scaling")
	}

	out, err = kubectl(t, "", "scale", "isvc", "auto", "-n", ns, "--replicas", "2")
	require.NoError(t, err, out)
	assert.Equal(t, ptr(int32(2)), getService(t, ns, "auto").Spec.Engine.Replicas, "spec.engine.replicas written through the scale subresource")
	waitService(t, ns, "auto", "two groups Ready", func(s *v1beta1.InferenceService) bool {
		return serviceReady(s) && s.Status.Replicas == 2 && s.Status.ReadyReplicas == 2
	})
	pods := waitPods(t, ns, "auto", "two groups serving", podsNamed("auto-engine-0", "auto-engine-1"))

	out, err = kubectl(t, "", "get", "--raw", scalePath)
	require.NoError(t, err, out)
	var scale autoscalingv1.Scale
	require.NoError(t, json.Unmarshal([]byte(out), &scale), out)
	assert.EqualValues(t, 2, scale.Spec.Replicas, "scale spec")
	assert.EqualValues(t, 2, scale.Status.Replicas, "scale status")
	require.NotEmpty(t, scale.Status.Selector, "scale status selector")
	sel, err := metav1.ParseToLabelSelector(scale.Status.Selector)
	require.NoError(t, err)
	s, err := metav1.LabelSelectorAsSelector(sel)
	require.NoError(t, err)
	for _, p := range pods {
		assert.True(t, s.Matches(labelsOf(p)), "the scale selector %q counts pod %s", scale.Status.Selector, p.Name)
	}

	waitFor(t, ns, "the HPA controller reading the scale subresource (AbleToScale=True)", func() bool {
		h, err := env.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctxT(t, apiTimeout), "auto", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.AbleToScale && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

func labelsOf(p corev1.Pod) labels.Set { return labels.Set(p.Labels) }
