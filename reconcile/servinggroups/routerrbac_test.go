package servinggroups

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// These tests name objects and labels by their literal values ("chat-router",
// "component"), as a router's flags and OME's runtimes do.

// pdRouterRuntimeObj is a prefill/decode runtime with a router.
func pdRouterRuntimeObj() *v1beta1.ClusterServingRuntime {
	rt := pdRuntimeObj()
	rt.Spec.RouterConfig = &v1beta1.RouterSpec{Runner: &v1beta1.RunnerSpec{Name: "router", Image: "router:v1",
		Args: []string{"--service-discovery", "--prefill-selector", "component=engine"}}}
	return rt
}

func pdRouterServiceObj() *v1beta1.InferenceService {
	isvc := serviceObj("chat", "pd-rt", 1)
	isvc.Spec.Decoder = &v1beta1.DecoderSpec{}
	return isvc
}

func podsByComponent(pods []*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		out[p.Labels[v1beta1.LabelComponent]] = append(out[p.Labels[v1beta1.LabelComponent]], p)
	}
	return out
}

func (f *fixture) routerRBAC(ns, name string) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	f.t.Helper()
	sa, err := f.kube.CoreV1().ServiceAccounts(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		sa = nil
	}
	role, err := f.kube.RbacV1().Roles(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		role = nil
	}
	rb, err := f.kube.RbacV1().RoleBindings(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		rb = nil
	}
	return sa, role, rb
}

func writesOf(actions []k8stesting.Action, resources ...string) []string {
	var out []string
	for _, a := range actions {
		for _, r := range resources {
			if a.GetResource().Resource == r && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
				out = append(out, a.GetVerb()+" "+r)
			}
		}
	}
	return out
}

// A service with a router gets <isvc>-router: a ServiceAccount, a Role
// reading pods and nothing more, and a RoleBinding, each controlled by the
// service and labelled; only its router pods run under it; a second sync
// writes nothing.
func TestRouterRBACCreated(t *testing.T) {
	f := newFixture(t, pdRouterRuntimeObj(), pdRouterServiceObj())
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 3 })

	sa, role, rb := f.routerRBAC("ns", "chat-router")
	require.NotNil(t, sa)
	require.NotNil(t, role)
	require.NotNil(t, rb)
	isvc, err := f.c.services.InferenceServices("ns").Get("chat")
	require.NoError(t, err)
	for _, o := range []metav1.Object{sa, role, rb} {
		assert.True(t, metav1.IsControlledBy(o, isvc), "%s is controlled by the service (garbage-collected with it)", o.GetName())
		assert.Equal(t, "chat", o.GetLabels()[v1beta1.LabelInferenceService])
		assert.Equal(t, "router", o.GetLabels()[v1beta1.LabelComponent])
	}
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}, role.Rules)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "chat-router"}, rb.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "chat-router", Namespace: "ns"}}, rb.Subjects)

	byComp := podsByComponent(f.pods("ns"))
	require.Len(t, byComp["router"], 1)
	assert.Equal(t, "chat-router", byComp["router"][0].Spec.ServiceAccountName)
	for _, comp := range []string{"engine", "decoder"} {
		require.Len(t, byComp[comp], 1)
		assert.Empty(t, byComp[comp][0].Spec.ServiceAccountName, "%s pods keep the namespace's default account", comp)
	}

	f.kube.ClearActions()
	_, err = f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err)
	assert.Empty(t, writesOf(f.kube.Actions(), "serviceaccounts", "roles", "rolebindings", "pods"), "a steady state writes nothing")
}

// A service without a router gets no RBAC objects.
func TestRouterRBACOnlyWithRouter(t *testing.T) {
	f := newFixture(t, runtimeObj("rt", false), serviceObj("chat", "rt", 1))
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 1 })
	assert.Empty(t, writesOf(f.kube.Actions(), "serviceaccounts", "roles", "rolebindings"))
}

// An object named <isvc>-router that the service does not control is never
// adopted or changed; the service is Degraded naming it, and the router
// runs without the account.
func TestRouterRBACConflict(t *testing.T) {
	other := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other", Controller: ptrTo(true)}}
	cases := []struct {
		name, kind string
		obj        runtime.Object
	}{
		{"ServiceAccount without owner", "ServiceAccount",
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "chat-router", Namespace: "ns"}}},
		{"Role of another controller", "Role",
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "chat-router", Namespace: "ns", OwnerReferences: other},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}},
		{"RoleBinding labelled as berth's but not controlled", "RoleBinding",
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "chat-router", Namespace: "ns",
				Labels: map[string]string{v1beta1.LabelInferenceService: "chat"}},
				RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "admin"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, pdRouterRuntimeObj(), pdRouterServiceObj())
			require.NoError(t, f.kube.Tracker().Add(tc.obj))
			before := tc.obj.DeepCopyObject()
			f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 3 })

			byComp := podsByComponent(f.pods("ns"))
			require.Len(t, byComp["router"], 1)
			assert.Empty(t, byComp["router"][0].Spec.ServiceAccountName, "never run under an account berth does not control")
			res := resourceOf(tc.kind)
			for _, a := range f.kube.Actions() {
				if a.GetResource() != res {
					continue
				}
				switch a := a.(type) {
				case k8stesting.UpdateAction:
					if a.GetVerb() != "create" { // a create is refused: AlreadyExists
						t.Errorf("%s %s: %s must not be touched", a.GetVerb(), res.Resource, tc.kind)
					}
				case k8stesting.PatchAction, k8stesting.DeleteAction:
					t.Errorf("%s %s: %s must not be touched", a.GetVerb(), res.Resource, tc.kind)
				}
			}
			m, _ := meta.Accessor(before)
			after, err := f.kube.Tracker().Get(resourceOf(tc.kind), "ns", m.GetName())
			require.NoError(t, err)
			assert.Equal(t, before, after, "left as it was")

			isvc, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
			require.NoError(t, err)
			deg := meta.FindStatusCondition(isvc.Status.Conditions, v1beta1.ConditionDegraded)
			require.NotNil(t, deg)
			assert.Equal(t, metav1.ConditionTrue, deg.Status)
			assert.Equal(t, ReasonRouterRBACConflict, deg.Reason)
			assert.Contains(t, deg.Message, tc.kind+" ns/chat-router exists and is not controlled by InferenceService chat")
			assert.Contains(t, deg.Message, "Delete or rename")
		})
	}
}

func resourceOf(kind string) schema.GroupVersionResource {
	switch kind {
	case "ServiceAccount":
		return schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	case "Role":
		return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	}
	return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
}

// An owned Role someone widened is narrowed back to reading pods.
func TestRouterRoleNarrowedBack(t *testing.T) {
	f := newFixture(t, pdRouterRuntimeObj(), pdRouterServiceObj())
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 3 })
	_, role, _ := f.routerRBAC("ns", "chat-router")
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	_, err := f.kube.RbacV1().Roles("ns").Update(f.ctx, role, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.syncUntil("ns/chat", func() bool {
		_, r, _ := f.routerRBAC("ns", "chat-router")
		return len(r.Rules) == 1
	})
	_, role, _ = f.routerRBAC("ns", "chat-router")
	assert.Equal(t, []string{"pods"}, role.Rules[0].Resources)
}

// Pods carry the labels OME's runtimes select on next to berth's: every
// pod component=<component>, multi-node pods the LeaderWorkerSet worker
// index (OME's multi-node PD routers select worker-index=0).
func TestPodsCarryOMELabels(t *testing.T) {
	cases := []struct {
		name    string
		rt      *v1beta1.ClusterServingRuntime
		isvc    *v1beta1.InferenceService
		pods    int
		workers bool
	}{
		{"prefill/decode with a router", pdRouterRuntimeObj(), pdRouterServiceObj(), 3, false},
		{"multi-node engine", runtimeObj("lw", true), serviceObj("chat", "lw", 1), 3, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.rt, tc.isvc)
			f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == tc.pods })
			for _, p := range f.pods("ns") {
				assert.Equal(t, p.Labels[v1beta1.LabelComponent], p.Labels["component"], "pod %s", p.Name)
				if tc.workers {
					assert.Equal(t, p.Labels[v1beta1.LabelWorkerIndex], p.Labels["leaderworkerset.sigs.k8s.io/worker-index"], "pod %s", p.Name)
				} else {
					assert.NotContains(t, p.Labels, "leaderworkerset.sigs.k8s.io/worker-index", "pod %s", p.Name)
				}
			}
		})
	}
}

// Pods made before berth set the OME labels get them by a patch of their
// labels: nothing is deleted or recreated, and their revision stays.
func TestRunningPodsLabelledWithoutRoll(t *testing.T) {
	f := newFixture(t, pdRouterRuntimeObj(), pdRouterServiceObj())
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 3 })
	uids := map[string]string{}
	revs := map[string]string{}
	for _, p := range f.pods("ns") {
		old := p.DeepCopy()
		delete(old.Labels, "component")
		_, err := f.kube.CoreV1().Pods("ns").Update(f.ctx, old, metav1.UpdateOptions{})
		require.NoError(t, err)
		uids[p.Name], revs[p.Name] = string(p.UID), p.Annotations[v1beta1.AnnotationRevision]
	}
	require.Eventually(t, func() bool { // the cache shows the pods as an earlier berth made them
		for _, p := range f.pods("ns") {
			if p.Labels["component"] != "" {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond)
	f.kube.ClearActions()
	f.syncUntil("ns/chat", func() bool {
		for _, p := range f.pods("ns") {
			if p.Labels["component"] == "" {
				return false
			}
		}
		return true
	})
	writes := writesOf(f.kube.Actions(), "pods")
	assert.NotEmpty(t, writes)
	for _, w := range writes {
		assert.Equal(t, "patch pods", w, "labelled in place: nothing deleted or created")
	}
	f.kube.ClearActions()
	f.syncUntil("ns/chat", func() bool { return true })
	assert.Empty(t, writesOf(f.kube.Actions(), "pods"), "labelled once, then nothing")
	for _, p := range f.pods("ns") {
		assert.Equal(t, uids[p.Name], string(p.UID), "pod %s kept", p.Name)
		assert.Equal(t, revs[p.Name], p.Annotations[v1beta1.AnnotationRevision])
		assert.Equal(t, p.Labels[v1beta1.LabelComponent], p.Labels["component"])
	}
}

// A router pod made before its ServiceAccount existed (by an earlier berth)
// runs under the default account, which serviceAccountName cannot change:
// it is rolled, and only it. One made after the account is never rolled for
// its account, whatever runs it (no endless roll), nor one whose runtime
// names its own account.
func TestRouterPodsPredatingTheAccountRolled(t *testing.T) {
	cases := []struct {
		name      string
		podAge    time.Duration // router pod's creation relative to the account's
		podSA     string
		runtimeSA string
		rolled    bool
	}{
		{"made before the account, default", -time.Hour, "", "", true},
		{"made before the account, named default", -time.Hour, "default", "", true},
		{"made in the account's second (timestamps have whole seconds)", 0, "", "", true},
		{"made after the account, rewritten by someone", time.Minute, "other", "", false},
		{"the runtime names its own account", -time.Hour, "", "mine", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := pdRouterRuntimeObj()
			rt.Spec.RouterConfig.ServiceAccountName = tc.runtimeSA
			f := newFixture(t, rt, pdRouterServiceObj())
			f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 3 })
			sa, _, _ := f.routerRBAC("ns", "chat-router")
			require.NotNil(t, sa)
			now := time.Now()
			sa.CreationTimestamp = metav1.NewTime(now)
			_, err := f.kube.CoreV1().ServiceAccounts("ns").Update(f.ctx, sa, metav1.UpdateOptions{})
			require.NoError(t, err)
			for _, p := range f.pods("ns") {
				if p.Name != "chat-router-0" {
					continue
				}
				old := p.DeepCopy()
				old.CreationTimestamp = metav1.NewTime(now.Add(tc.podAge))
				old.Spec.ServiceAccountName = tc.podSA
				_, err := f.kube.CoreV1().Pods("ns").Update(f.ctx, old, metav1.UpdateOptions{})
				require.NoError(t, err)
			}
			f.kube.ClearActions()
			f.syncUntil("ns/chat", func() bool { // both edits reached the cache
				s, err := f.c.serviceAccounts.ServiceAccounts("ns").Get("chat-router")
				p, perr := f.c.pods.Pods("ns").Get("chat-router-0")
				return err == nil && perr == nil && s.CreationTimestamp.Equal(&sa.CreationTimestamp) &&
					(tc.rolled || p.CreationTimestamp.Equal(&metav1.Time{Time: now.Add(tc.podAge)}))
			})
			deleted := func() []string {
				var out []string
				for _, a := range f.kube.Actions() {
					if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
						out = append(out, d.GetName())
					}
				}
				return out
			}
			if tc.rolled {
				f.syncUntil("ns/chat", func() bool {
					p := podsByComponent(f.pods("ns"))["router"]
					return len(deleted()) > 0 && len(p) == 1 && p[0].Spec.ServiceAccountName == "chat-router"
				})
				assert.Equal(t, []string{"chat-router-0"}, deleted(), "only the router is rolled")
				return
			}
			for range 5 {
				_, err := f.c.sync(f.ctx, "ns/chat")
				require.NoError(t, err)
				time.Sleep(20 * time.Millisecond)
			}
			assert.Empty(t, deleted())
		})
	}
}

// While the account is in conflict the service looks again (the other
// object's deletion reaches no informer); otherwise the planner's requeue
// stands.
func TestRouterRequeue(t *testing.T) {
	conflict := routerAccess{conflict: "ServiceAccount ns/chat-router exists"}
	cases := []struct {
		name    string
		requeue time.Duration
		access  routerAccess
		want    time.Duration
	}{
		{"no conflict, nothing asked", 0, routerAccess{serviceAccount: "chat-router"}, 0},
		{"no conflict keeps the planner's", 5 * time.Second, routerAccess{}, 5 * time.Second},
		{"conflict, nothing asked", 0, conflict, routerConflictRecheck},
		{"conflict caps a long requeue", time.Hour, conflict, routerConflictRecheck},
		{"conflict keeps a shorter one", time.Second, conflict, time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, routerRequeue(tc.requeue, tc.access))
		})
	}
}
