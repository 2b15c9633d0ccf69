package merge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

func mustRevision(t testing.TB, in Input) string {
	t.Helper()
	rev, err := Revision(in)
	require.NoError(t, err)
	require.Len(t, rev, 20)
	return rev
}

func ptr[T any](v T) *T { return &v }

// TestRevision: it changes with what ComposePod writes into the pods, and
// only with that.
func TestRevision(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(t *testing.T, in *Input)
		changes bool
	}{
		{name: "resourceVersion, generation, uid, creationTimestamp", mutate: func(_ *testing.T, in *Input) {
			in.Service.ResourceVersion, in.Service.Generation, in.Service.UID = "42", 7, "uid-2"
			in.Service.CreationTimestamp = metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			in.AcceleratorClass.ResourceVersion = "9"
		}},
		{name: "managedFields", mutate: func(_ *testing.T, in *Input) {
			in.Service.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
		}},
		{name: "service status", mutate: func(_ *testing.T, in *Input) {
			in.Service.Status.ObservedGeneration = 12
			in.Service.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionReady, Status: metav1.ConditionTrue}}
		}},
		{name: "a label no template uses", mutate: func(_ *testing.T, in *Input) { in.Service.Labels["unused"] = "y" }},
		{name: "an annotation no template uses", mutate: func(_ *testing.T, in *Input) {
			in.Service.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}
		}},
		{name: "group identity", mutate: func(_ *testing.T, in *Input) {
			in.Group = GroupIdentity{GroupIndex: 3, Role: RoleWorker, WorkerIndex: 1, GroupSize: 2, LeaderAddress: "x"}
		}},
		{name: "replica counts (scaling is not a roll)", mutate: func(_ *testing.T, in *Input) {
			in.Service.Spec.Engine.Replicas, in.Service.Spec.Engine.MinReplicas, in.Service.Spec.Engine.MaxReplicas = ptr(int32(3)), ptr(int32(2)), ptr(int32(9))
		}},
		{name: "the runtime's name and kind (error text only)", mutate: func(_ *testing.T, in *Input) {
			in.RuntimeName, in.RuntimeKind = "a-much-longer-runtime-name", "ServingRuntime"
		}},
		{name: "class status", mutate: func(_ *testing.T, in *Input) { in.AcceleratorClass.Status.AvailableNodes = 12 }},
		{name: "class cost", mutate: func(_ *testing.T, in *Input) { in.AcceleratorClass.Spec.Cost = &v1beta1.AcceleratorCost{Tier: "low"} }},
		{name: "router config does not change the engine", mutate: func(_ *testing.T, in *Input) { in.Runtime.RouterConfig.Runner.Image = "other:1" }},
		{name: "a runtime annotation ome.io/revision (the webhook overwrites it)", mutate: func(_ *testing.T, in *Input) {
			in.Runtime.Annotations = map[string]string{v1beta1.AnnotationRevision: "forged"}
		}},
		{name: "runtime engine image", changes: true, mutate: func(_ *testing.T, in *Input) { in.Runtime.EngineConfig.Runner.Image = "other:1" }},
		{name: "class node selector", changes: true, mutate: func(_ *testing.T, in *Input) {
			in.AcceleratorClass.Spec.Discovery.NodeSelector = map[string]string{"x": "y"}
		}},
		{name: "class resource name", changes: true, mutate: func(_ *testing.T, in *Input) { in.AcceleratorClass.Spec.Resources[0].Name = "gpu.intel.com/i915" }},
		{name: "RollingUpdate profile spec", changes: true, mutate: func(_ *testing.T, in *Input) {
			in.Profiles["sglang-pd-runtime"].Spec.Containers[0].Image = "patio:2"
		}},
		{name: "service engine", changes: true, mutate: func(_ *testing.T, in *Input) { in.Service.Spec.Engine.Tolerations = []corev1.Toleration{{Key: "k"}} }},
		{name: "service drops its decoder but the runtime keeps one (still PD)", mutate: func(_ *testing.T, in *Input) { in.Service.Spec.Decoder = nil }},
		{name: "PD wiring goes away", changes: true, mutate: func(_ *testing.T, in *Input) { in.Service.Spec.Decoder, in.Runtime.DecoderConfig = nil, nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := pdEngineInput(t)
			rev := mustRevision(t, in)
			tc.mutate(t, &in)
			if tc.changes {
				assert.NotEqual(t, rev, mustRevision(t, in))
			} else {
				assert.Equal(t, rev, mustRevision(t, in))
			}
		})
	}
}

// pdEngineInput is the PD prefill engine case with a label no template uses
// and a service engine to change.
func pdEngineInput(t *testing.T) Input {
	in, _ := loadCase(t, "testdata/pd-prefill-engine")
	in.Service.Labels = map[string]string{"unused": "x"}
	if in.Service.Spec.Engine == nil {
		in.Service.Spec.Engine = &v1beta1.EngineSpec{}
	}
	return in
}

// TestRevisionProfiles: seed 004, "updateStrategy NoUpdate leaves running
// pods alone". A NoUpdate profile's spec reaches new pods only, so it does
// not change the revision; the reference to it (name, overrides) does, and
// so does any change of a RollingUpdate profile.
func TestRevisionProfiles(t *testing.T) {
	noUpdate := func(t *testing.T) (Input, string) {
		in := pdEngineInput(t)
		in.Profiles["sglang-pd-runtime"].Spec.UpdateStrategy = v1beta1.ProfileNoUpdate
		return in, mustRevision(t, in)
	}
	t.Run("NoUpdate profile spec", func(t *testing.T) {
		in, rev := noUpdate(t)
		in.Profiles["sglang-pd-runtime"].Spec.Containers[0].Image = "patio:2"
		in.Profiles["sglang-pd-runtime"].Spec.Volumes = nil
		assert.Equal(t, rev, mustRevision(t, in))
	})
	t.Run("NoUpdate profile: the strategy default is NoUpdate", func(t *testing.T) {
		in, rev := noUpdate(t)
		in.Profiles["sglang-pd-runtime"].Spec.UpdateStrategy = ""
		assert.Equal(t, rev, mustRevision(t, in))
	})
	t.Run("NoUpdate profile: the component's overrides", func(t *testing.T) {
		in, rev := noUpdate(t)
		in.Runtime.EngineConfig.EngineRuntimes[0].Containers[0].Args = []string{"--other"}
		assert.NotEqual(t, rev, mustRevision(t, in))
	})
	t.Run("NoUpdate becomes RollingUpdate", func(t *testing.T) {
		in, rev := noUpdate(t)
		in.Profiles["sglang-pd-runtime"].Spec.UpdateStrategy = v1beta1.ProfileRollingUpdate
		assert.NotEqual(t, rev, mustRevision(t, in))
	})
	t.Run("RollingUpdate profile env", func(t *testing.T) {
		in := pdEngineInput(t)
		rev := mustRevision(t, in)
		in.Profiles["sglang-pd-runtime"].Spec.Containers[0].Env[0].Value = "vllm"
		assert.NotEqual(t, rev, mustRevision(t, in))
	})
	t.Run("a referenced profile that is missing is an error", func(t *testing.T) {
		in := pdEngineInput(t)
		delete(in.Profiles, "sglang-pd-runtime")
		_, err := Revision(in)
		require.ErrorContains(t, err, `ClusterEngineRuntimeProfile "sglang-pd-runtime" not found`)
	})
}

// TestRevisionIgnoresErrorText rewords every layer's Where (text only
// error messages read) and the revision stays.
func TestRevisionIgnoresErrorText(t *testing.T) {
	for _, dir := range successCases(t) {
		in, _ := loadCase(t, dir)
		reworded := func(in Input, role string) (*plan, error) {
			p, err := buildPlan(in, role)
			if err != nil {
				return nil, err
			}
			for i := range p.Layers {
				p.Layers[i].Where = "reworded: " + p.Layers[i].Where + " (see the docs)"
			}
			return p, nil
		}
		got, err := revision(in, reworded)
		require.NoError(t, err)
		assert.Equal(t, mustRevision(t, in), got, dir)
	}
}

// TestRevisionFollowsTemplateLabels: a label a template uses is part of the
// revision; one no template uses is not.
func TestRevisionFollowsTemplateLabels(t *testing.T) {
	in, _ := loadCase(t, "testdata/kserve-containers-templates")
	rev := mustRevision(t, in)
	in.Service.Labels["team.example.com/owner"] = "another team"
	assert.NotEqual(t, rev, mustRevision(t, in))
	in2, _ := loadCase(t, "testdata/kserve-containers-templates")
	in2.Service.Labels["not-used"] = "x"
	in2.Service.ObjectMeta.CreationTimestamp = metav1.Now()
	assert.Equal(t, rev, mustRevision(t, in2))
}

// TestRevisionMultiNode: the revision covers the leader and the worker
// pods and the group size, whichever pod asks.
func TestRevisionMultiNode(t *testing.T) {
	base, _ := loadCase(t, "testdata/multinode-leader")
	rev := mustRevision(t, base)
	worker, _ := loadCase(t, "testdata/multinode-worker")
	assert.Equal(t, rev, mustRevision(t, worker), "leader and worker pods of a component share the revision")

	tests := []struct {
		name    string
		mutate  func(in *Input)
		changes bool
	}{
		{name: "worker args", changes: true, mutate: func(in *Input) { in.Service.Spec.Engine.Worker.Runner.Args = []string{"--tp-size=8"} }},
		{name: "leader args", changes: true, mutate: func(in *Input) { in.Service.Spec.Engine.Leader.Runner.Args = []string{"--tp-size=8"} }},
		{name: "worker.size (group size env)", changes: true, mutate: func(in *Input) { in.Service.Spec.Engine.Worker.Size = ptr(int32(1)) }},
		{name: "replicas", mutate: func(in *Input) { in.Service.Spec.Engine.Replicas = ptr(int32(4)) }},
		{name: "the service's namespace, which no template reads (the canonical leader address is a placeholder)",
			mutate: func(in *Input) { in.Service.Namespace = "other" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := loadCase(t, "testdata/multinode-leader")
			tc.mutate(&in)
			if tc.changes {
				assert.NotEqual(t, rev, mustRevision(t, in))
			} else {
				assert.Equal(t, rev, mustRevision(t, in))
			}
		})
	}
}

// TestRevisionEnvelope pins the envelope's shape: the version, one pod per
// role, no revision annotation, and the canonical identities.
func TestRevisionEnvelope(t *testing.T) {
	assert.Equal(t, "berth.revision/v1", RevisionVersion, "bumping the version is deliberate: update this test and the golden revisions")
	multi := ComponentTopology{Component: v1beta1.ComponentEngine, MultiNode: true, Workers: 3}
	assert.Equal(t, []GroupIdentity{
		{Role: RoleLeader, GroupSize: 4, LeaderAddress: revisionLeaderAddress},
		{Role: RoleWorker, WorkerIndex: 1, GroupSize: 4, LeaderAddress: revisionLeaderAddress},
	}, canonicalGroups(multi))
	assert.Equal(t, []GroupIdentity{{Role: RoleLeader, GroupSize: 1, LeaderAddress: revisionLeaderAddress}},
		canonicalGroups(ComponentTopology{MultiNode: true}), "a leader-only group has no worker pod to hash")
	assert.Equal(t, []GroupIdentity{{}}, canonicalGroups(ComponentTopology{Replicas: 5}))
}
