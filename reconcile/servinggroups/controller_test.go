package servinggroups

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// These tests drive Controller.sync against client-go's fake clientsets:
// they check the wiring (what is created, deleted, written) quickly. The
// behaviour against a real apiserver, scheduler and webhook is proven by
// the e2e suite.

func runtimeObj(name string, leaderWorker bool) *v1beta1.ClusterServingRuntime {
	rt := &v1beta1.ClusterServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name}}
	rt.Spec.EngineConfig = &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Name: "ome-container", Image: "engine:v1"}}
	if leaderWorker {
		size := int32(2)
		rt.Spec.EngineConfig.Runner = nil
		rt.Spec.EngineConfig.Leader = &v1beta1.LeaderSpec{Runner: &v1beta1.RunnerSpec{Image: "engine:v1"}}
		rt.Spec.EngineConfig.Worker = &v1beta1.WorkerSpec{Size: &size, Runner: &v1beta1.RunnerSpec{Image: "engine:v1"}}
	}
	return rt
}

func serviceObj(name, runtime string, replicas int32) *v1beta1.InferenceService {
	return &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 1,
			Annotations: map[string]string{v1beta1.AnnotationResolvedRuntime: "ClusterServingRuntime/" + runtime}},
		Spec: v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{Replicas: &replicas}}},
	}
}

type fixture struct {
	t     *testing.T
	kube  *kubefake.Clientset
	berth *berthfake.Clientset
	c     *Controller
	ctx   context.Context
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWith(t, Options{Now: time.Now}, objs...)
}

func newFixtureWith(t *testing.T, opts Options, objs ...runtime.Object) *fixture {
	t.Helper()
	bc := berthfake.NewSimpleClientset(objs...)
	kc := kubefake.NewSimpleClientset()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := New(kc, bc, opts)
	// Stand in for the pod webhook: stamp the revision of the pinned
	// inputs, as merge computes it, so pods count as up to date.
	kc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Annotations[v1beta1.AnnotationRestoredFrom] != "" {
			return false, nil, nil // restored from a record: kept as it is, as the webhook does
		}
		isvc, err := c.services.InferenceServices(pod.Namespace).Get(pod.Labels[v1beta1.LabelInferenceService])
		require.NoError(t, err)
		dec, unres := c.resolve(isvc)
		require.Nil(t, unres)
		rev, err := merge.Revision(dec.input(isvc, pod.Labels[v1beta1.LabelComponent]))
		require.NoError(t, err)
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[v1beta1.AnnotationRevision] = rev
		return false, nil, nil
	})
	c.kubeInformers.Start(ctx.Done())
	c.berthInformers.Start(ctx.Done())
	c.startGangs(ctx)
	for !c.Synced() {
		time.Sleep(5 * time.Millisecond)
	}
	return &fixture{t: t, kube: kc, berth: bc, c: c, ctx: ctx}
}

// syncUntil runs sync until cond holds on the informer cache.
func (f *fixture) syncUntil(key string, cond func() bool) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(f.ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		if _, err := f.c.sync(f.ctx, key); err != nil {
			return false, err
		}
		return cond(), nil
	})
	require.NoError(f.t, err)
}

func (f *fixture) pods(ns string) []*corev1.Pod {
	pods, err := f.c.pods.Pods(ns).List(labels.Everything())
	require.NoError(f.t, err)
	return pods
}

func TestSyncCreatesSkeletonGroups(t *testing.T) {
	f := newFixture(t, runtimeObj("rt", false), serviceObj("chat", "rt", 3))
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 3 })
	names := map[string]bool{}
	for _, p := range f.pods("ns") {
		names[p.Name] = true
		assert.Equal(t, "chat", p.Labels[v1beta1.LabelInferenceService])
		assert.Equal(t, v1beta1.ComponentEngine, p.Labels[v1beta1.LabelComponent])
		require.Len(t, p.OwnerReferences, 1)
		assert.True(t, *p.OwnerReferences[0].Controller)
		assert.Equal(t, types.UID("uid-chat"), p.OwnerReferences[0].UID)
		assert.Empty(t, p.Spec.Containers[0].Image, "the skeleton carries no image: the webhook completes it")
	}
	assert.Equal(t, map[string]bool{"chat-engine-0": true, "chat-engine-1": true, "chat-engine-2": true}, names)
	svc, err := f.kube.CoreV1().Services("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{v1beta1.LabelInferenceService: "chat", v1beta1.LabelComponent: v1beta1.ComponentEngine}, svc.Spec.Selector)
}

func TestSyncLeaderWorkerGroupsGetHeadlessServices(t *testing.T) {
	f := newFixture(t, runtimeObj("mn", true), serviceObj("big", "mn", 2))
	f.syncUntil("ns/big", func() bool { return len(f.pods("ns")) == 6 })
	leader, err := f.kube.CoreV1().Pods("ns").Get(f.ctx, "big-engine-1-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "big-engine-1", leader.Spec.Subdomain)
	assert.Equal(t, "big-engine-1-0", leader.Spec.Hostname)
	g, err := merge.GroupIdentityFromPod(leader)
	require.NoError(t, err)
	assert.Equal(t, merge.GroupIdentity{GroupIndex: 1, Role: merge.RoleLeader, GroupSize: 3, LeaderAddress: "big-engine-1-0.big-engine-1.ns"}, g)
	for _, name := range []string{"big-engine-0", "big-engine-1"} {
		h, err := f.kube.CoreV1().Services("ns").Get(f.ctx, name, metav1.GetOptions{})
		require.NoError(t, err, name)
		assert.Equal(t, corev1.ClusterIPNone, h.Spec.ClusterIP)
		assert.True(t, h.Spec.PublishNotReadyAddresses)
	}
	front, err := f.kube.CoreV1().Services("ns").Get(f.ctx, "big", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, merge.RoleLeader, front.Spec.Selector[v1beta1.LabelRole], "the front Service reaches leaders only")
}

func TestSteadyStateWritesNothing(t *testing.T) {
	f := newFixture(t, runtimeObj("rt", false), serviceObj("chat", "rt", 2))
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 2 })
	// Converge: status and services written once.
	for range 5 {
		_, err := f.c.sync(f.ctx, "ns/chat")
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond)
	}
	before := len(f.kube.Actions()) + len(f.berth.Actions())
	for range 10 {
		_, err := f.c.sync(f.ctx, "ns/chat")
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond) // let the informers catch up, as watch events would
	}
	var writes []string
	for _, a := range append(f.kube.Actions(), f.berth.Actions()...)[before:] {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			writes = append(writes, fmt.Sprintf("%s %s", a.GetVerb(), a.GetResource().Resource))
		}
	}
	assert.Empty(t, writes, "a steady state sends no writes")
}

func TestMissingPinnedRuntimeKeepsPodsAndDegrades(t *testing.T) {
	f := newFixture(t, runtimeObj("rt", false), serviceObj("chat", "rt", 2))
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 2 })
	require.NoError(t, f.berth.OmeV1beta1().ClusterServingRuntimes().Delete(f.ctx, "rt", metav1.DeleteOptions{}))
	f.syncUntil("ns/chat", func() bool {
		s, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
		require.NoError(t, err)
		for _, c := range s.Status.Conditions {
			if c.Type == v1beta1.ConditionDegraded && c.Status == metav1.ConditionTrue {
				assert.Equal(t, ReasonRuntimeDeleted, c.Reason)
				assert.Contains(t, c.Message, "ClusterServingRuntime/rt no longer exists")
				return true
			}
		}
		return false
	})
	assert.Len(t, f.pods("ns"), 2, "running pods are never torn down because a pin disappeared")
}

func TestReplicasOutsideBoundsAreClampedAndSaidOnce(t *testing.T) {
	svc := serviceObj("chat", "rt", 5)
	svc.Spec.Engine.MaxReplicas = ptr(int32(2))
	f := newFixture(t, runtimeObj("rt", false), svc)
	rec := record.NewFakeRecorder(100)
	f.c.recorder = rec
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 2 })
	for range 3 {
		_, err := f.c.sync(f.ctx, "ns/chat")
		require.NoError(t, err)
	}
	close(rec.Events)
	var clamps []string
	for e := range rec.Events {
		if strings.Contains(e, "ReplicasOutOfBounds") {
			clamps = append(clamps, e)
		}
	}
	assert.Equal(t, []string{"Warning ReplicasOutOfBounds engine: spec.engine.replicas 5 is outside [1, 2]; running 2 group(s). Change minReplicas/maxReplicas to allow it"}, clamps)
}

func ptr[T any](v T) *T { return &v }

// A Service the apiserver refuses (no ClusterIP left, a quota) is said on
// the InferenceService, not only logged.
func TestFailedServiceCreateIsAnEvent(t *testing.T) {
	f := newFixture(t, runtimeObj("rt", false), serviceObj("chat", "rt", 1))
	rec := record.NewFakeRecorder(100)
	f.c.recorder = rec
	f.kube.PrependReactor("create", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("failed to allocate a serviceIP: range is full")
	})
	_, err := f.c.sync(f.ctx, "ns/chat")
	require.Error(t, err)
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		if strings.Contains(e, "FailedCreateService") {
			got = append(got, e)
		}
	}
	assert.Equal(t, []string{"Warning FailedCreateService creating Service ns/chat: failed to allocate a serviceIP: range is full"}, got)
}
