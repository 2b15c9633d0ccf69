package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
)

// Two replicas of the webhook, each with its own cache: the mutating call
// reaches one that has the model and pins the service; the validating call
// reaches one whose cache has not seen the model yet. The pin berth just
// made is not denied for that lag: the validating handler looks again
// (Retry). A model that never arrives is still denied.
func TestValidateWaitsForItsCacheOnAPinTheOtherReplicaMade(t *testing.T) {
	for _, arrives := range []bool{true, false} {
		a := seedWorld(t)
		isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
		req := request(t, admissionv1.Create, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name)
		resp := a.isvcs().Mutate(ctx, req)
		req.Object.Raw = applyPatch(t, req.Object.Raw, resp)

		b := newWorld() // the other replica: the runtimes, not yet the model
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		b.addCSR(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct.yaml", base)
		b.addCSR(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct-2.yaml", base.Add(time.Hour))
		h := b.isvcs()
		h.Retry = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
		if arrives {
			go func() {
				time.Sleep(20 * time.Millisecond)
				b.index.UpsertBaseModel(mistralModel())
			}()
		}
		vresp := h.Validate(ctx, req)
		require.NotNil(t, vresp)
		if arrives {
			assert.True(t, vresp.Allowed, "denied for the replica's lag: %+v", vresp.Result)
		} else {
			require.False(t, vresp.Allowed)
			assert.Contains(t, vresp.Result.Message, `no BaseModel "mistral-7b-instruct"`)
		}
	}
}
