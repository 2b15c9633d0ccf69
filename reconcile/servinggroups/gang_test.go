package servinggroups

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/wrappers"
	"github.com/berthdev/berth/reconcile/plan"
	"github.com/berthdev/berth/reconcile/servinggroups/gang"
)

var volcanoPodGroups = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}

type gangFixture struct {
	*fixture
	dyn *dynamicfake.FakeDynamicClient
}

func newGangFixture(t *testing.T, crds []runtime.Object, objs ...runtime.Object) *gangFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}: "CustomResourceDefinitionList",
		{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}:           "PodGroupList",
		{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}:            "PodGroupList",
	}, crds...)
	f := newFixtureWith(t, Options{Now: time.Now, Dynamic: dyn}, objs...)
	return &gangFixture{fixture: f, dyn: dyn}
}

func pdRuntime(name string) *v1beta1.ClusterServingRuntime {
	rt := runtimeObj(name, false)
	rt.Spec.DecoderConfig = &v1beta1.DecoderSpec{Runner: &v1beta1.RunnerSpec{Name: "ome-container", Image: "decoder:v1"}}
	return rt
}

func pdService(name, runtime string) *v1beta1.InferenceService {
	s := serviceObj(name, runtime, 3)
	two := int32(2)
	s.Spec.Decoder = &v1beta1.DecoderSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{Replicas: &two}}
	s.Spec.GangPolicy = &v1beta1.GangPolicy{Scheduler: v1beta1.GangSchedulerVolcano, MinRoleReplicas: map[string]int32{"prefill": 2, "decode": 1}}
	return s
}

func (f *gangFixture) podGroup(name string) *unstructured.Unstructured {
	u, err := f.dyn.Resource(volcanoPodGroups).Namespace("ns").Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return u
}

func (f *gangFixture) podGroupWrites() int {
	n := 0
	for _, a := range f.dyn.Actions() {
		if a.GetResource().Resource == "podgroups" && (a.GetVerb() == "create" || a.GetVerb() == "update" || a.GetVerb() == "delete") {
			n++
		}
	}
	return n
}

func TestGangPodGroupFollowsTheCRDSchema(t *testing.T) {
	for _, withSubGroups := range []bool{false, true} {
		t.Run(map[bool]string{false: "Volcano v1.12.1: no subGroupPolicy", true: "Volcano 1.14: subGroupPolicy"}[withSubGroups], func(t *testing.T) {
			f := newGangFixture(t, []runtime.Object{wrappers.VolcanoPodGroupCRD(withSubGroups)}, pdRuntime("rt"), pdService("pd", "rt"))
			f.syncUntil("ns/pd", func() bool { return len(f.pods("ns")) == 5 && f.podGroup("pd") != nil })
			pg := f.podGroup("pd")
			obs, ok := gang.Read(pg, f.svc("pd"))
			require.True(t, ok, "the PodGroup is the service's")
			want := plan.Gang{MinMember: 3, MinTaskMember: map[string]int32{"engine-0": 1, "engine-1": 1, "decoder-0": 1}}
			if withSubGroups {
				want.SubGroups = []plan.SubGroup{{Name: "engine", SubGroupSize: 1, MinSubGroups: 2}, {Name: "decoder", SubGroupSize: 1, MinSubGroups: 1}}
			}
			assert.True(t, want.Equal(obs.Spec.Gang), "want %+v, got %+v", want, obs.Spec.Gang)
			assert.Equal(t, "default", obs.Spec.Queue)
			for _, p := range f.pods("ns") {
				assert.Equal(t, "pd", p.Annotations[AnnotationVolcanoGroupName], p.Name)
				assert.Equal(t, p.Labels[v1beta1.LabelComponent]+"-"+p.Labels[v1beta1.LabelGroupIndex], p.Annotations[AnnotationVolcanoTaskSpec], p.Name)
				assert.Equal(t, "volcano", p.Spec.SchedulerName, p.Name)
			}

			// A steady state writes no PodGroup.
			time.Sleep(100 * time.Millisecond) // the informer sees the PodGroup
			before := f.podGroupWrites()
			for range 3 {
				_, err := f.c.sync(f.ctx, "ns/pd")
				require.NoError(t, err)
			}
			assert.Equal(t, before, f.podGroupWrites(), "PodGroup writes in a steady state: %v", f.dyn.Actions())
		})
	}
}

func TestGangWithoutCRDSaysSoAndMarksNothing(t *testing.T) {
	f := newGangFixture(t, nil, pdRuntime("rt"), pdService("pd", "rt"))
	f.syncUntil("ns/pd", func() bool { return len(f.pods("ns")) == 5 })
	_, err := f.c.sync(f.ctx, "ns/pd")
	require.NoError(t, err)
	var cond *metav1.Condition
	require.Eventually(t, func() bool {
		cond = meta.FindStatusCondition(f.svc("pd").Status.Conditions, ConditionGangScheduling)
		return cond != nil
	}, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, ReasonPodGroupCRDMissing, cond.Reason)
	assert.Contains(t, cond.Message, "podgroups.scheduling.volcano.sh")
	for _, p := range f.pods("ns") {
		assert.Empty(t, p.Annotations[AnnotationVolcanoGroupName], p.Name)
	}
	assert.Zero(t, f.podGroupWrites())
}

func (f *gangFixture) svc(name string) *v1beta1.InferenceService {
	s, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return s
}

// A service without a decoder whose pods use volcano: one PodGroup per
// engine group; scaling down deletes the gone group's PodGroup, and a
// runtime that stops naming volcano turns gang scheduling off and deletes
// the rest (rbg #56: no PodGroup left behind).
func TestGangPodGroupPerGroupFollowsGroupsAndTurnsOff(t *testing.T) {
	rt := runtimeObj("rt", true) // a leader and 2 workers
	rt.Spec.EngineConfig.SchedulerName = "volcano"
	f := newGangFixture(t, []runtime.Object{wrappers.VolcanoPodGroupCRD(false)}, rt, serviceObj("chat", "rt", 2))
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 6 && f.podGroup("chat-engine-1") != nil })
	for _, name := range []string{"chat-engine-0", "chat-engine-1"} {
		obs, ok := gang.Read(f.podGroup(name), f.svc("chat"))
		require.True(t, ok)
		assert.Equal(t, int32(3), obs.Spec.Gang.MinMember, name)
		assert.Empty(t, obs.Spec.Gang.MinTaskMember, "one group: minMember says it all")
	}

	s := f.svc("chat")
	one := int32(1)
	s.Spec.Engine.Replicas = &one
	_, err := f.berth.OmeV1beta1().InferenceServices("ns").Update(f.ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the fake's status writes carry the spec: sync only once the cache has it
		l, err := f.c.services.InferenceServices("ns").Get("chat")
		return err == nil && *l.Spec.Engine.Replicas == 1
	}, 5*time.Second, 10*time.Millisecond)
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 3 && f.podGroup("chat-engine-1") == nil })
	require.NotNil(t, f.podGroup("chat-engine-0"))

	rt.Spec.EngineConfig.SchedulerName = ""
	_, err = f.berth.OmeV1beta1().ClusterServingRuntimes().Update(f.ctx, rt, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		l, err := f.c.clusterRuntimes.Get("rt")
		return err == nil && l.Spec.EngineConfig.SchedulerName == ""
	}, 5*time.Second, 10*time.Millisecond)
	f.syncUntil("ns/chat", func() bool {
		return f.podGroup("chat-engine-0") == nil && meta.FindStatusCondition(f.svc("chat").Status.Conditions, ConditionGangScheduling) == nil
	})
}
