package selection_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
)

// EngineGroups counts the engine's groups as merge.Topology does (the
// reconciler creates Topology's Replicas groups); selection may not
// import merge, so this test keeps the two together.
func TestEngineGroupsAgreesWithTopology(t *testing.T) {
	vals := []*int32{nil, ptr(int32(0)), ptr(int32(1)), ptr(int32(3)), ptr(int32(6))}
	for _, r := range vals {
		for _, minR := range vals {
			for _, maxR := range vals {
				for _, rtR := range vals {
					svc := &v1beta1.InferenceService{Spec: v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{
						ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{Replicas: r, MinReplicas: minR, MaxReplicas: maxR}}}}
					rt := &v1beta1.ServingRuntimeSpec{EngineConfig: &v1beta1.EngineSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{MinReplicas: rtR}}}
					want := max(int64(merge.Topology(svc, rt)[0].Replicas), 1)
					assert.Equal(t, want, selection.EngineGroups(svc, rt), "replicas %v min %v max %v runtime min %v", deref(r), deref(minR), deref(maxR), deref(rtR))
				}
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *int32) any {
	if p == nil {
		return "unset"
	}
	return *p
}
