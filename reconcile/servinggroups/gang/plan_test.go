package gang

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/wrappers"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// gangHarness is a Gangs on a fake dynamic client, started, with what
// its hooks saw.
type gangHarness struct {
	t      *testing.T
	ctx    context.Context
	dyn    *dynamicfake.FakeDynamicClient
	g      *Gangs
	writes map[string]int // verb → PodGroup writes counted
}

func newHarness(t *testing.T, crds ...runtime.Object) *gangHarness {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		crdResource: "CustomResourceDefinitionList",
		{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}: "PodGroupList",
		{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}:  "PodGroupList",
	}, crds...)
	h := &gangHarness{t: t, dyn: dyn, writes: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.ctx = ctx
	h.g = New(dyn, 0)
	h.g.Wire(Config{CountWrite: func(verb, resource string) {
		if resource == "podgroups" {
			h.writes[verb]++
		}
	}})
	h.g.Start(ctx)
	require.Eventually(t, func() bool {
		for _, s := range h.g.Synced() {
			if !s() {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond)
	return h
}

// pdService is a prefill/decode service under gangPolicy volcano.
func pdSvc() *v1beta1.InferenceService {
	return &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: "ns", UID: "isvc-uid", Generation: 4},
		Spec:       v1beta1.InferenceServiceSpec{GangPolicy: &v1beta1.GangPolicy{Scheduler: v1beta1.GangSchedulerVolcano}},
	}
}

// composeOne composes a pod asking one GPU, with no schedulerName.
func composeOne(t merge.ComponentTopology, id merge.GroupIdentity) (*corev1.Pod, error) {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}}}, nil
}

// pdState is a prefill/decode sync: engine and decoder replicas, the
// groups of each that run now (marked for PodGroup "pd") and the step.
type pdState struct {
	engine, decoder       int32
	engineRun, decoderRun []int32
	step                  map[string]plan.Step
}

func (s pdState) input(isvc *v1beta1.InferenceService) Input {
	var pods []*corev1.Pod
	observed := map[string][]plan.Pod{}
	for comp, groups := range map[string][]int32{v1beta1.ComponentEngine: s.engineRun, v1beta1.ComponentDecoder: s.decoderRun} {
		for _, grp := range groups {
			name := fmt.Sprintf("pd-%s-%d", comp, grp)
			pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-x-" + k8stypes.UID(name),
				Labels:      map[string]string{v1beta1.LabelComponent: comp},
				Annotations: map[string]string{AnnotationVolcanoGroupName: "pd"}}})
			observed[comp] = append(observed[comp], plan.Pod{Name: name, UID: string(pods[len(pods)-1].UID), Group: grp, Phase: corev1.PodRunning})
		}
	}
	ms := []Member{
		{Topology: merge.ComponentTopology{Component: v1beta1.ComponentEngine, Replicas: s.engine}, Step: s.step[v1beta1.ComponentEngine], Observed: observed[v1beta1.ComponentEngine]},
		{Topology: merge.ComponentTopology{Component: v1beta1.ComponentDecoder, Replicas: s.decoder}, Step: s.step[v1beta1.ComponentDecoder], Observed: observed[v1beta1.ComponentDecoder]},
		{Topology: merge.ComponentTopology{Component: v1beta1.ComponentRouter, Replicas: 1}},
	}
	return Input{Service: isvc, Components: ms, Pods: pods, Compose: composeOne}
}

func (h *gangHarness) minMember(name string) int64 {
	h.t.Helper()
	u, err := h.dyn.Resource(find(h.g.backends, v1beta1.GangSchedulerVolcano).gvr).Namespace("ns").Get(h.ctx, name, metav1.GetOptions{})
	require.NoError(h.t, err)
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "minMember")
	return n
}

// waitCached waits until the PodGroup informer has PodGroup name asking
// minMember (-1: gone).
func (h *gangHarness) waitCached(name string, minMember int32) {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		_, _, lister, synced := find(h.g.backends, v1beta1.GangSchedulerVolcano).state()
		if lister == nil || !synced() {
			return false
		}
		pg, err := getPodGroup(lister, pdSvc(), name)
		if minMember < 0 {
			return err == nil && pg == nil
		}
		return err == nil && pg != nil && pg.Spec.Gang.MinMember == minMember
	}, 5*time.Second, 5*time.Millisecond)
}

// The PodGroup of a prefill/decode service follows its roles: created
// before the pods, lowered before a scale-down's deletes, raised after a
// scale-up's creates, and deleted when gang scheduling is off.
func TestPlanOrdersWritesAroundTheStep(t *testing.T) {
	h := newHarness(t, wrappers.VolcanoPodGroupCRD(false))
	isvc := pdSvc()
	create := func(groups ...int32) plan.Step {
		var s plan.Step
		for _, g := range groups {
			s.Create = append(s.Create, plan.PodID{Group: g})
		}
		return s
	}

	// A new service: the PodGroup is created before the pods.
	p, err := h.g.Plan(h.ctx, pdState{engine: 2, decoder: 1,
		step: map[string]plan.Step{v1beta1.ComponentEngine: create(0, 1), v1beta1.ComponentDecoder: create(0)}}.input(isvc))
	require.NoError(t, err)
	assert.Equal(t, &merge.GangMark{Backend: v1beta1.GangSchedulerVolcano, PodGroup: "pd", Task: "engine-1", SchedulerName: "volcano"},
		p.MarkFor(isvc, v1beta1.ComponentEngine, 1))
	assert.Nil(t, p.MarkFor(isvc, v1beta1.ComponentRouter, 0), "the router is in no gang")
	require.NoError(t, h.g.Write(h.ctx, isvc, p, AfterPods))
	assert.Zero(t, h.writes["create"], "a new PodGroup is not written after the pods")
	require.NoError(t, h.g.Write(h.ctx, isvc, p, BeforePods))
	assert.Equal(t, 1, h.writes["create"])
	assert.Equal(t, int64(3), h.minMember("pd"))
	c := p.Condition()
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, ReasonPodGroupsSynced, c.Reason)
	assert.Equal(t, int64(4), c.ObservedGeneration)
	h.waitCached("pd", 3)

	// A steady state writes nothing.
	p, err = h.g.Plan(h.ctx, pdState{engine: 2, decoder: 1, engineRun: []int32{0, 1}, decoderRun: []int32{0}}.input(isvc))
	require.NoError(t, err)
	require.NoError(t, h.g.Write(h.ctx, isvc, p, BeforePods))
	require.NoError(t, h.g.Write(h.ctx, isvc, p, AfterPods))
	require.NoError(t, h.g.DeleteStale(h.ctx, isvc, p))
	assert.Equal(t, map[string]int{"create": 1}, h.writes)

	// Scale-down: lowered before the pod's delete, nothing after.
	p, err = h.g.Plan(h.ctx, pdState{engine: 1, decoder: 1, engineRun: []int32{0, 1}, decoderRun: []int32{0},
		step: map[string]plan.Step{v1beta1.ComponentEngine: {Delete: []plan.PodRef{{Name: "pd-engine-1", UID: "uid-x-pd-engine-1"}}}}}.input(isvc))
	require.NoError(t, err)
	require.NoError(t, h.g.Write(h.ctx, isvc, p, AfterPods))
	assert.Equal(t, int64(3), h.minMember("pd"), "not lowered after the step")
	require.NoError(t, h.g.Write(h.ctx, isvc, p, BeforePods))
	assert.Equal(t, int64(2), h.minMember("pd"), "lowered before the step")
	h.waitCached("pd", 2)

	// Scale-up: raised after the pods' creates, not before.
	p, err = h.g.Plan(h.ctx, pdState{engine: 3, decoder: 1, engineRun: []int32{0}, decoderRun: []int32{0},
		step: map[string]plan.Step{v1beta1.ComponentEngine: create(1, 2)}}.input(isvc))
	require.NoError(t, err)
	require.NoError(t, h.g.Write(h.ctx, isvc, p, BeforePods))
	assert.Equal(t, int64(2), h.minMember("pd"), "not raised before the pods exist")
	require.NoError(t, h.g.Write(h.ctx, isvc, p, AfterPods))
	assert.Equal(t, int64(4), h.minMember("pd"), "raised after the step")
	h.waitCached("pd", 4)

	// Gang scheduling off: no mark, no condition, the PodGroup deleted.
	isvc.Spec.GangPolicy = nil
	p, err = h.g.Plan(h.ctx, pdState{engine: 3, decoder: 1, engineRun: []int32{0, 1, 2}, decoderRun: []int32{0}}.input(isvc))
	require.NoError(t, err)
	assert.Nil(t, p.MarkFor(isvc, v1beta1.ComponentEngine, 0))
	assert.Nil(t, p.Condition())
	require.NoError(t, h.g.DeleteStale(h.ctx, isvc, p))
	assert.Equal(t, 1, h.writes["delete"])
	h.waitCached("pd", -1)
	st := &v1beta1.InferenceServiceStatus{Conditions: []metav1.Condition{{Type: ConditionGangScheduling, Status: metav1.ConditionTrue}}}
	SetCondition(st, p)
	assert.Empty(t, st.Conditions, "a stale condition goes")
}

// Without the CRD nothing is marked or written, and the condition names
// the CRD to install. A nil *Gangs is gang scheduling off.
func TestPlanWithoutCRD(t *testing.T) {
	h := newHarness(t)
	isvc := pdSvc()
	p, err := h.g.Plan(h.ctx, pdState{engine: 2, decoder: 1}.input(isvc))
	require.NoError(t, err)
	assert.Nil(t, p.MarkFor(isvc, v1beta1.ComponentEngine, 0))
	c := p.Condition()
	require.NotNil(t, c)
	assert.Equal(t, ReasonPodGroupCRDMissing, c.Reason)
	assert.Contains(t, c.Message, "podgroups.scheduling.volcano.sh")
	assert.Contains(t, c.Message, "spec.gangPolicy")
	require.NoError(t, h.g.Write(h.ctx, isvc, p, BeforePods))
	require.NoError(t, h.g.DeleteStale(h.ctx, isvc, p))
	assert.Empty(t, h.writes)

	var off *Gangs
	p, err = off.Plan(h.ctx, pdState{engine: 2, decoder: 1}.input(isvc))
	require.NoError(t, err)
	assert.Nil(t, p)
	assert.Nil(t, p.MarkFor(isvc, v1beta1.ComponentEngine, 0))
	assert.NoError(t, off.Write(h.ctx, isvc, p, BeforePods))
	assert.NoError(t, off.DeleteStale(h.ctx, isvc, p))
	assert.Nil(t, New(nil, 0), "no dynamic client: off")
}
