package handlers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Bad lifecycle settings of the seed 000 service are denied at admission
// with one structured cause per field, so kubectl names every field.
func TestLifecycleDenials(t *testing.T) {
	zero, five := intstr.FromInt32(0), intstr.FromInt32(5)
	cases := []struct {
		name   string
		edit   func(*v1beta1.InferenceService)
		causes []metav1.StatusCause
	}{
		{name: "defaults are fine", edit: func(*v1beta1.InferenceService) {}},
		{name: "maxUnavailable 0", edit: func(s *v1beta1.InferenceService) {
			s.Spec.RolloutStrategy = &v1beta1.RolloutStrategy{RollingUpdateConfiguration: &v1beta1.RollingUpdateConfiguration{MaxUnavailable: &zero}}
		}, causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable",
			Message: "Invalid value: 0: must be at least 1: a rolling update that may take no serving group down can never progress"}}},
		{name: "partition above the 4 groups maxReplicas allows", edit: func(s *v1beta1.InferenceService) {
			s.Spec.Engine = &v1beta1.EngineSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{MinReplicas: ptrTo(int32(2)), MaxReplicas: ptrTo(int32(4))}}
			s.Spec.RolloutStrategy = &v1beta1.RolloutStrategy{RollingUpdateConfiguration: &v1beta1.RollingUpdateConfiguration{Partition: &five}}
		}, causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.rolloutStrategy.rollingUpdateConfiguration.partition",
			Message: "Invalid value: 5: is above the 4 serving group(s) the service can have: groups with an ordinal below the partition keep their revision, so no group would ever roll. Use at most 4 (equal pauses the rollout)"}}},
		{name: "replicas above maxReplicas", edit: func(s *v1beta1.InferenceService) {
			s.Spec.Engine = &v1beta1.EngineSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{MaxReplicas: ptrTo(int32(1)), Replicas: ptrTo(int32(4))}}
		}, causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.engine.replicas",
			Message: "Invalid value: 4: is above maxReplicas 1 (of the service, else its runtime); raise spec.engine.maxReplicas to scale further"}}},
		{name: "replicas within bounds", edit: func(s *v1beta1.InferenceService) {
			s.Spec.Engine = &v1beta1.EngineSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{MaxReplicas: ptrTo(int32(4)), Replicas: ptrTo(int32(4))}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := seedWorld(t)
			isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
			tc.edit(isvc)
			_, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
			if tc.causes == nil {
				assert.True(t, resp.Allowed, "%+v", resp.Result)
				return
			}
			require.False(t, resp.Allowed)
			require.NotNil(t, resp.Result.Details)
			if diff := cmp.Diff(tc.causes, resp.Result.Details.Causes); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
		})
	}
}

// A name whose generated pod names would pass 63 characters is denied,
// naming the longest generated name and how much to shorten.
func TestLongServiceNameDenied(t *testing.T) {
	w := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	isvc.Name = strings.Repeat("m", 60)
	_, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.False(t, resp.Allowed)
	require.NotNil(t, resp.Result.Details)
	require.Len(t, resp.Result.Details.Causes, 1)
	c := resp.Result.Details.Causes[0]
	assert.Equal(t, "metadata.name", c.Field)
	assert.Contains(t, c.Message, "is not a valid DNS-1035 label")
	assert.Contains(t, c.Message, "shorten the InferenceService name to at most")
}

func ptrTo[T any](v T) *T { return &v }

// The engine gets replicas (the scale subresource reads it); raising
// minReplicas later raises a replicas the user never changed, while an
// explicit out-of-bounds replicas is denied.
func TestEngineReplicasDefaultAndFollowBounds(t *testing.T) {
	w := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	isvc.Spec.Engine = nil
	stored, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	require.NotNil(t, stored.Spec.Engine.Replicas)
	assert.Equal(t, int32(1), *stored.Spec.Engine.Replicas, "replicas starts at minReplicas")

	edited := stored.DeepCopy()
	edited.Spec.Engine.MinReplicas, edited.Spec.Engine.MaxReplicas = ptrTo(int32(3)), ptrTo(int32(4))
	again, resp := admitISVC(t, w, admissionv1.Update, edited, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, int32(3), *again.Spec.Engine.Replicas, "an untouched replicas follows minReplicas up")

	explicit := again.DeepCopy()
	explicit.Spec.Engine.Replicas = ptrTo(int32(9))
	_, resp = admitISVC(t, w, admissionv1.Update, explicit, again)
	require.False(t, resp.Allowed, "an explicit replicas above maxReplicas is denied, not clamped")
}
