package cli

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/objects"
)

const seeds = "../../api/v1beta1/testdata/seeds/"

// TestPinnedServiceToldOfANewerRuntime: a service pinned to seed 000's
// priority-1 runtime, created before the priority-2 one, is told that a
// newer runtime now wins and why its own lost; the pin holds.
func TestPinnedServiceToldOfANewerRuntime(t *testing.T) {
	set, err := objects.LoadPaths(seeds+"000-priority-srt-mistral-7b-instruct.yaml", seeds+"000-priority-srt-mistral-7b-instruct-2.yaml",
		"../../cmd/berth/testdata/seed000/mistral-model.yaml", "../../cmd/berth/testdata/seed000/pinned-isvc.yaml")
	require.NoError(t, err)
	require.Empty(t, set.Problems)
	pinnedAt := time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, rt := range set.ClusterServingRuntimes {
		rt.CreationTimestamp = metav1.NewTime(pinnedAt.Add(-time.Hour))
		if rt.Name == "srt-mistral-7b-instruct-2" {
			rt.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
		}
	}
	require.Len(t, set.InferenceServices, 1)
	isvc := set.InferenceServices[0]
	require.Equal(t, pinnedAt, isvc.CreationTimestamp.UTC())

	r, err := Explain(context.Background(), newWorld(set, ""), isvc)
	require.NoError(t, err)
	require.True(t, r.Allowed, r.Denial)
	require.NotNil(t, r.Pin)
	assert.True(t, r.Pin.Passes)
	assert.True(t, r.Pin.FreshDiffers)
	assert.Equal(t, []string{"a newer runtime (created 2026-01-02 00:00:00Z, after the service) now exists: ClusterServingRuntime/srt-mistral-7b-instruct-2; " +
		"ClusterServingRuntime/srt-mistral-7b-instruct: matches, but priority 1 is below ClusterServingRuntime/srt-mistral-7b-instruct-2's 2; " +
		"the pin keeps ClusterServingRuntime/srt-mistral-7b-instruct"}, r.Pin.Why)
	require.NotNil(t, r.Decision)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct", r.Decision.Runtime, "the decision in force is the pin")
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", r.Pin.Fresh.Runtime)
}

// TestPinnedServiceSameDecision: with only the pinned runtime, a decision
// made today is the same, and explain says so.
func TestPinnedServiceSameDecision(t *testing.T) {
	set, err := objects.LoadPaths(seeds+"000-priority-srt-mistral-7b-instruct.yaml",
		"../../cmd/berth/testdata/seed000/mistral-model.yaml", "../../cmd/berth/testdata/seed000/pinned-isvc.yaml")
	require.NoError(t, err)
	r, err := Explain(context.Background(), newWorld(set, ""), set.InferenceServices[0])
	require.NoError(t, err)
	require.NotNil(t, r.Pin)
	assert.False(t, r.Pin.FreshDiffers)
	assert.Equal(t, []string{"a decision made today would choose the same runtime and AcceleratorClass"}, r.Pin.Why)
	assert.Equal(t, v1beta1.AnnotationResolvedRuntime, "ome.io/resolved-runtime")
}

// TestServiceName reads the forms kubectl users type.
func TestServiceName(t *testing.T) {
	for in, want := range map[string]string{"isvc/a": "a", "inferenceservice/b": "b", "inferenceservices.ome.io/c": "c", "d": "d"} {
		got, err := serviceName(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := serviceName("pod/x")
	assert.EqualError(t, err, `"pod/x": only InferenceServices are explained (isvc/NAME)`)
}
