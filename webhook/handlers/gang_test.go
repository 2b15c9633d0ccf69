package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// spec.gangPolicy cannot be removed once set: the webhook says
// so with the field, as the CRD's transition rule does.
func TestValidateDeniesRemovingGangPolicy(t *testing.T) {
	w := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	isvc.Spec.GangPolicy = &v1beta1.GangPolicy{Scheduler: v1beta1.GangSchedulerCoscheduling}
	stored, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)

	removed := stored.DeepCopy()
	removed.Spec.GangPolicy = nil
	_, resp = admitISVC(t, w, admissionv1.Update, removed, stored)
	require.False(t, resp.Allowed)
	require.NotNil(t, resp.Result.Details)
	require.Len(t, resp.Result.Details.Causes, 1)
	assert.Equal(t, "spec.gangPolicy", resp.Result.Details.Causes[0].Field)
	assert.Contains(t, resp.Result.Details.Causes[0].Message, "cannot be removed once set")

	changed := stored.DeepCopy()
	changed.Spec.GangPolicy.Scheduler = v1beta1.GangSchedulerVolcano
	_, resp = admitISVC(t, w, admissionv1.Update, changed, stored)
	assert.True(t, resp.Allowed, "%+v", resp.Result)
}

// minRoleReplicas is checked against the resolved topology: a runtime's
// decoderConfig gives the service a decoder its spec does not show.
func TestValidateGangPolicyAgainstTheRuntimesDecoder(t *testing.T) {
	w := seedWorld(t)
	rt := w.addCSR(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct-2.yaml", time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC))
	rt.Spec.DecoderConfig = &v1beta1.DecoderSpec{Runner: &v1beta1.RunnerSpec{Image: rt.Spec.EngineConfig.Runner.Image}}
	w.index.UpsertClusterServingRuntime(rt)

	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	isvc.Spec.GangPolicy = &v1beta1.GangPolicy{MinRoleReplicas: map[string]int32{"decode": 1, "prefill": 1}}
	_, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)

	isvc.Spec.GangPolicy.MinRoleReplicas["decode"] = 2
	_, resp = admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.False(t, resp.Allowed)
	require.NotNil(t, resp.Result.Details)
	assert.Equal(t, "spec.gangPolicy.minRoleReplicas[decode]", resp.Result.Details.Causes[0].Field)
	assert.Contains(t, resp.Result.Details.Causes[0].Message, "is above the 1 serving group(s) of the decoder")
}
