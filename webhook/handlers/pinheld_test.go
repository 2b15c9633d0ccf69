package handlers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// A pin never moves without the user: while the pinned runtime (or class)
// is deleted, an update that changes nothing the decision depends on keeps
// the pin with a warning; annotation ome.io/repin set to a new value, or a
// changed input, decides again. Setting ome.io/repin to the value it
// already has changes nothing.
func TestPinHeldWhileItsRuntimeIsGone(t *testing.T) {
	const gone = "the pinned runtime ClusterServingRuntime/srt-mistral-7b-instruct-2 no longer exists; the service keeps its pin and its running pods (berth never moves a service on its own), but no new pod can be created until it is recreated. To let berth decide again, set annotation ome.io/repin to a new value (berth repin mistral-7b-instruct -n mistral-7b-instruct)"
	stored := func(t *testing.T, w *world) *v1beta1.InferenceService {
		out, resp := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
		require.True(t, resp.Allowed, "%+v", resp.Result)
		require.Equal(t, pinWinner, out.Annotations[v1beta1.AnnotationResolvedRuntime])
		w.index.DeleteClusterServingRuntime("srt-mistral-7b-instruct-2")
		return out
	}
	for _, tc := range []struct {
		name        string
		edit        func(*v1beta1.InferenceService)
		wantPin     string
		wantWarning string
	}{
		{name: "a label: the pin holds", edit: func(i *v1beta1.InferenceService) { i.Labels = map[string]string{"team": "search"} },
			wantPin: pinWinner, wantWarning: gone},
		{name: "scaling: the pin holds", edit: func(i *v1beta1.InferenceService) { i.Spec.Engine.MaxReplicas = ptrTo(int32(3)) },
			wantPin: pinWinner, wantWarning: gone},
		{name: "ome.io/repin: berth decides again", edit: func(i *v1beta1.InferenceService) { i.Annotations[v1beta1.AnnotationRepin] = "2026-11-27T01:00:00Z" },
			wantPin: pinLow, wantWarning: `annotation ome.io/repin="2026-11-27T01:00:00Z" asks for a new decision: berth decided again (the pin was ClusterServingRuntime/srt-mistral-7b-instruct-2)`},
		{name: "an input of the decision changed: berth decides again", edit: func(i *v1beta1.InferenceService) { i.Annotations[v1beta1.AnnotationSelectionStrategy] = "cost" },
			wantPin: pinLow},
		{name: "the pin removed: berth decides again", edit: func(i *v1beta1.InferenceService) { delete(i.Annotations, v1beta1.AnnotationResolvedRuntime) },
			wantPin: pinLow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := seedWorld(t)
			old := stored(t, w)
			upd := old.DeepCopy()
			tc.edit(upd)
			out, resp := admitISVC(t, w, admissionv1.Update, upd, old)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			assert.Equal(t, tc.wantPin, out.Annotations[v1beta1.AnnotationResolvedRuntime])
			if tc.wantPin == pinWinner {
				assert.Equal(t, old.Annotations[AnnotationDecision], out.Annotations[AnnotationDecision], "the decision is kept as it was")
			}
			if tc.wantWarning != "" {
				assert.Contains(t, resp.Warnings, tc.wantWarning)
			}
		})
	}

	t.Run("the same ome.io/repin again changes nothing", func(t *testing.T) {
		w := seedWorld(t)
		old := stored(t, w)
		old.Annotations[v1beta1.AnnotationRepin] = "1"
		upd := old.DeepCopy()
		upd.Labels = map[string]string{"team": "search"}
		out, resp := admitISVC(t, w, admissionv1.Update, upd, old)
		require.True(t, resp.Allowed, "%+v", resp.Result)
		assert.Equal(t, pinWinner, out.Annotations[v1beta1.AnnotationResolvedRuntime])
		assert.Contains(t, resp.Warnings, gone)
	})

	t.Run("a deleted class holds too", func(t *testing.T) {
		w := seedWorld(t)
		old := stored(t, w)
		w.addCSR(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct-2.yaml", old.CreationTimestamp.Time)
		old.Annotations[v1beta1.AnnotationResolvedAcceleratorClass] = "nvidia-h100-80gb" // pinned, then deleted
		upd := old.DeepCopy()
		upd.Labels = map[string]string{"team": "search"}
		out, resp := admitISVC(t, w, admissionv1.Update, upd, old)
		require.True(t, resp.Allowed, "%+v", resp.Result)
		assert.Equal(t, "nvidia-h100-80gb", out.Annotations[v1beta1.AnnotationResolvedAcceleratorClass])
		assert.Equal(t, pinWinner, out.Annotations[v1beta1.AnnotationResolvedRuntime])
		require.NotEmpty(t, resp.Warnings)
		assert.Contains(t, resp.Warnings[0], "the pinned AcceleratorClass nvidia-h100-80gb no longer exists")
	})
}
