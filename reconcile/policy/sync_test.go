package policy

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// These drive the policy controller against client-go's fake clientsets,
// with a fake serving groups controller (queued); the e2e suite
// (policy_budget_test.go) proves it against a real apiserver and quota
// admission, with the serving groups controller writing the conditions.

func runtimeObj(name string) *v1beta1.ClusterServingRuntime {
	rt := &v1beta1.ClusterServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name}}
	rt.Spec.EngineConfig = &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Name: "ome-container", Image: "engine:v1"}}
	return rt
}

func serviceObj(name, runtime string, replicas int32) *v1beta1.InferenceService {
	return &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 1,
			Annotations: map[string]string{v1beta1.AnnotationResolvedRuntime: "ClusterServingRuntime/" + runtime}},
		Spec: v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{Replicas: &replicas}}},
	}
}

// queued is a fake serving groups controller: the services queued.
type queued struct {
	mu   sync.Mutex
	keys []string
}

func (q *queued) Enqueue(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.keys = append(q.keys, key)
}

// take returns and forgets the keys queued so far, sorted, each once (as
// a workqueue holds them).
func (q *queued) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := slices.Compact(slices.Sorted(slices.Values(q.keys)))
	q.keys = nil
	return out
}

type fixture struct {
	t     *testing.T
	kube  *kubefake.Clientset
	berth *berthfake.Clientset
	c     *Controller
	svcs  *queued
	ctx   context.Context
}

// newFixture is the controller on fake clientsets holding objs and the
// namespaces, its caches synced.
func newFixture(t *testing.T, namespaces []*corev1.Namespace, objs ...runtime.Object) *fixture {
	t.Helper()
	bc := berthfake.NewSimpleClientset(objs...)
	var kobjs []runtime.Object
	for _, ns := range namespaces {
		kobjs = append(kobjs, ns)
	}
	kc := kubefake.NewSimpleClientset(kobjs...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	q := &queued{}
	c := New(kc, bc, Options{Services: q, Namespace: "berth-system"})
	c.kubeInformers.Start(ctx.Done())
	c.berthInformers.Start(ctx.Done())
	f := &fixture{t: t, kube: kc, berth: bc, c: c, svcs: q, ctx: ctx}
	f.eventually("caches synced", c.Synced)
	return f
}

func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(f.ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	require.NoError(f.t, err, what)
}

// quotaWrites counts the create, update and delete calls on quotas.
func (f *fixture) quotaWrites() int {
	n := 0
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource == "resourcequotas" && (a.GetVerb() == "create" || a.GetVerb() == "update" || a.GetVerb() == "delete") {
			n++
		}
	}
	return n
}

func (f *fixture) policy(name string) *policyv1alpha1.ServingPolicy {
	sp, err := f.berth.PolicyV1alpha1().ServingPolicies().Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return sp
}

func TestPolicySyncKeepsQuotasAndStatus(t *testing.T) {
	svc := serviceObj("chat", "rt", 1)
	svc.Namespace = "team-a"
	f := newFixture(t, []*corev1.Namespace{MakeNamespace("team-a").Label("tier", "gpu").Obj(), MakeNamespace("web").Obj(), MakeNamespace("berth-system").Label("tier", "gpu").Obj()},
		runtimeObj("rt"), svc, MakePolicy("budget").Namespaces(map[string]string{"tier": "gpu"}).Budget(16).Obj())

	require.NoError(t, f.c.sync(f.ctx, "budget"))
	q, err := f.kube.CoreV1().ResourceQuotas("team-a").Get(f.ctx, "berth-policy-budget", metav1.GetOptions{})
	require.NoError(t, err)
	want := wantQuota("budget", "team-a", 16, gpuResources...)
	assert.Equal(t, want.Spec, q.Spec)
	assert.Equal(t, want.Labels, q.Labels)
	assert.Equal(t, want.OwnerReferences, q.OwnerReferences)
	st := f.policy("budget").Status
	assert.EqualValues(t, 1, st.ObservedGeneration)
	ready := meta.FindStatusCondition(st.Conditions, "Ready")
	require.NotNil(t, ready)
	assert.Equal(t, "in force: selects 1 InferenceService(s), 0 violate it; ResourceQuota berth-policy-budget keeps the namespace budget in 1 namespace(s)", ready.Message)

	// Once the caches have seen it all, another sync writes nothing.
	f.eventually("quota and status in the caches", func() bool {
		_, qerr := f.c.quotas.ResourceQuotas("team-a").Get("berth-policy-budget")
		sp, perr := f.c.policies.Get("budget")
		return qerr == nil && perr == nil && sp.Status.ObservedGeneration == 1
	})
	writes, statusWrites := f.quotaWrites(), len(f.berth.Actions())
	require.NoError(t, f.c.sync(f.ctx, "budget"))
	assert.Equal(t, writes, f.quotaWrites(), "a steady state writes no quota")
	assert.Equal(t, statusWrites, len(f.berth.Actions()), "nor status")

	// The namespace leaves the selector: its quota goes.
	ns, err := f.kube.CoreV1().Namespaces().Get(f.ctx, "team-a", metav1.GetOptions{})
	require.NoError(t, err)
	delete(ns.Labels, "tier")
	_, err = f.kube.CoreV1().Namespaces().Update(f.ctx, ns, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.eventually("namespace relabelled in the cache", func() bool {
		n, err := f.c.namespaces.Get("team-a")
		return err == nil && n.Labels["tier"] == ""
	})
	require.NoError(t, f.c.sync(f.ctx, "budget"))
	quotas, err := f.kube.CoreV1().ResourceQuotas("").List(f.ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, quotas.Items, "no namespace selected, no quota")
}

func TestPolicyVerdictsReachTheServices(t *testing.T) {
	rt := runtimeObj("rt")
	rt.Spec.EngineConfig.Runner.Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": *resourceQty(8)}
	rt.Spec.EngineConfig.Runner.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": *resourceQty(8)}
	unpinned := serviceObj("draft", "rt", 1)
	unpinned.Annotations = nil
	gone := serviceObj("orphan", "no-such-runtime", 1)
	noModel := serviceObj("nomodel", "rt", 1)
	noModel.Spec.Model = &v1beta1.ModelRef{Name: "gone"}
	f := newFixture(t, []*corev1.Namespace{MakeNamespace("ns").Obj()}, rt, serviceObj("chat", "rt", 1), unpinned, gone, noModel,
		MakePolicy("small").MaxPerService(4).Obj())
	_, known := f.c.Compliance("ns/chat", 1)
	assert.False(t, known, "until every policy was evaluated once, the condition is left as it is")
	f.c.prime(f.ctx)

	assert.Equal(t, []string{"ns/chat"}, f.svcs.take(), "the service whose verdict changed is queued; unpinned and unresolvable ones are not checked")
	c, known := f.c.Compliance("ns/chat", 1)
	require.True(t, known)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, ReasonViolatesServingPolicy, c.Reason)
	assert.Equal(t, "violates ServingPolicy/small: ServingPolicy/small: InferenceService ns/chat would use 8 nvidia.com/gpu, above the maximum of 4 per service", c.Message)
	for _, key := range []string{"ns/draft", "ns/orphan", "ns/nomodel"} {
		c, known := f.c.Compliance(key, 1)
		assert.True(t, known)
		assert.Nil(t, c, key)
	}
	st := f.policy("small").Status
	assert.EqualValues(t, 1, st.Violations)
	assert.Equal(t, []policyv1alpha1.PolicyViolation{{Namespace: "ns", Name: "chat", Message: "ServingPolicy/small: InferenceService ns/chat would use 8 nvidia.com/gpu, above the maximum of 4 per service"}}, st.ViolatingServices)

	// An unchanged verdict queues nothing.
	require.NoError(t, f.c.sync(f.ctx, "small"))
	assert.Empty(t, f.svcs.take())

	// The policy goes: so does the verdict, and the service is queued.
	require.NoError(t, f.berth.PolicyV1alpha1().ServingPolicies().Delete(f.ctx, "small", metav1.DeleteOptions{}))
	f.eventually("policy gone from the cache", func() bool { _, err := f.c.policies.Get("small"); return err != nil })
	require.NoError(t, f.c.sync(f.ctx, "small"))
	assert.Equal(t, []string{"ns/chat"}, f.svcs.take())
	c, known = f.c.Compliance("ns/chat", 1)
	assert.True(t, known)
	assert.Nil(t, c, "no policy selects it: no condition")
}

func TestPrimeQueuesStaleConditions(t *testing.T) {
	stale := serviceObj("chat", "rt", 1)
	stale.Status.Conditions = []metav1.Condition{{Type: ConditionPolicyCompliant, Status: metav1.ConditionTrue, Reason: ReasonCompliant}}
	f := newFixture(t, []*corev1.Namespace{MakeNamespace("ns").Obj()}, runtimeObj("rt"), stale, serviceObj("plain", "rt", 1))
	f.c.prime(f.ctx)
	assert.Equal(t, []string{"ns/chat"}, f.svcs.take(), "a condition no policy backs any more is queued once; the rest are not")
}

var everythingSel = labels.Everything()

func resourceQty(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
