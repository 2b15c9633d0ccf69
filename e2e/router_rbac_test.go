package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// canI is `kubectl auth can-i <verb> <resource> --as=<user> -n <ns>`,
// asked as a SubjectAccessReview: the apiserver's RBAC authorizer answers.
func canI(t *testing.T, user, verb, resource, ns string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource},
	}}
	got, err := env.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctxT(t, apiTimeout), sar, metav1.CreateOptions{})
	require.NoError(t, err)
	return got.Status.Allowed
}

// A prefill/decode service's router discovers its workers through the API:
// it runs under its own ServiceAccount <isvc>-router, which may read pods
// in the namespace and nothing more (the namespace's default account may
// not); the engine and decoder pods carry the labels OME's routers select
// on; an account of that name someone else made is left alone and the
// service says so; deleting the service removes the account, Role and
// RoleBinding (the garbage collector, through their owner references).
func TestRouterRBAC(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-rbac")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-rbac")).PD().Obj())
	isvc := createService(t, MakeService(ns, "pd").Runtime(rt.Name).Replicas(1).Obj())
	pods := waitPods(t, ns, "pd", "engine, decoder and router", podsNamed("pd-engine-0", "pd-decoder-0", "pd-router-0"))

	kube := env.Kube
	var sa *corev1.ServiceAccount
	waitFor(t, ns, "ServiceAccount pd-router", func() bool {
		var err error
		sa, err = kube.CoreV1().ServiceAccounts(ns).Get(ctxT(t, apiTimeout), "pd-router", metav1.GetOptions{})
		return err == nil
	})
	role, err := kube.RbacV1().Roles(ns).Get(ctxT(t, apiTimeout), "pd-router", metav1.GetOptions{})
	require.NoError(t, err)
	rb, err := kube.RbacV1().RoleBindings(ns).Get(ctxT(t, apiTimeout), "pd-router", metav1.GetOptions{})
	require.NoError(t, err)
	for _, o := range []metav1.Object{sa, role, rb} {
		owner := metav1.GetControllerOf(o)
		require.NotNil(t, owner, "%s has a controller", o.GetName())
		assert.Equal(t, isvc.UID, owner.UID, "%s is controlled by the service", o.GetName())
		assert.Equal(t, "pd", o.GetLabels()[v1beta1.LabelInferenceService])
	}

	t.Run("the router may read pods, and nothing else; default may not", func(t *testing.T) {
		router := "system:serviceaccount:" + ns + ":pd-router"
		for _, verb := range []string{"get", "list", "watch"} {
			assert.True(t, canI(t, router, verb, "pods", ns), "%s pods as pd-router", verb)
		}
		assert.False(t, canI(t, router, "delete", "pods", ns))
		assert.False(t, canI(t, router, "get", "secrets", ns))
		assert.False(t, canI(t, router, "list", "pods", "default"), "only its own namespace")
		assert.False(t, canI(t, "system:serviceaccount:"+ns+":default", "list", "pods", ns))
	})

	t.Run("pods", func(t *testing.T) {
		assert.Equal(t, "pd-router", podByName(pods, "pd-router-0").Spec.ServiceAccountName)
		for name, comp := range map[string]string{"pd-engine-0": "engine", "pd-decoder-0": "decoder", "pd-router-0": "router"} {
			p := podByName(pods, name)
			assert.Equal(t, comp, p.Labels["component"], "pod %s carries OME's component label", name)
			assert.Equal(t, comp, p.Labels[v1beta1.LabelComponent])
			if comp != "router" {
				assert.NotEqual(t, "pd-router", p.Spec.ServiceAccountName, "only the router runs under the router's account")
			}
		}
	})

	t.Run("a ServiceAccount of the name that berth does not control", func(t *testing.T) {
		theirs, err := kube.CoreV1().ServiceAccounts(ns).Create(ctxT(t, apiTimeout), &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Name: "cf-router", Labels: map[string]string{"team": "a"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		createService(t, MakeService(ns, "cf").Runtime(rt.Name).Replicas(1).Obj())
		got := waitService(t, ns, "cf", "Degraded=True RouterRBACConflict", func(s *v1beta1.InferenceService) bool {
			c := condition(s, v1beta1.ConditionDegraded)
			return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "RouterRBACConflict"
		})
		assert.Contains(t, condition(got, v1beta1.ConditionDegraded).Message, "ServiceAccount "+ns+"/cf-router exists and is not controlled by InferenceService cf")
		cf := waitPods(t, ns, "cf", "the router, without the account", podsNamed("cf-engine-0", "cf-decoder-0", "cf-router-0"))
		assert.NotEqual(t, "cf-router", podByName(cf, "cf-router-0").Spec.ServiceAccountName)
		now, err := kube.CoreV1().ServiceAccounts(ns).Get(ctxT(t, apiTimeout), "cf-router", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, theirs.ResourceVersion, now.ResourceVersion, "not adopted, not changed")
		assert.Empty(t, now.OwnerReferences)
		_, err = kube.RbacV1().Roles(ns).Get(ctxT(t, apiTimeout), "cf-router", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no Role for an account berth does not control: %v", err)

		// Once theirs is gone, berth makes its own, and the router pod that
		// predates it (serviceAccountName is immutable) is rolled, alone.
		require.NoError(t, kube.CoreV1().ServiceAccounts(ns).Delete(ctxT(t, apiTimeout), "cf-router", metav1.DeleteOptions{}))
		after := waitPods(t, ns, "cf", "the router recreated under cf-router", func(ps []corev1.Pod) bool {
			r := podByName(ps, "cf-router-0")
			return r != nil && r.Spec.ServiceAccountName == "cf-router" && r.DeletionTimestamp == nil
		})
		for _, name := range []string{"cf-engine-0", "cf-decoder-0"} {
			assert.Equal(t, podByName(cf, name).UID, podByName(after, name).UID, "%s is not rolled", name)
		}
		waitService(t, ns, "cf", "Degraded no longer RouterRBACConflict", func(s *v1beta1.InferenceService) bool {
			c := condition(s, v1beta1.ConditionDegraded)
			return c != nil && c.Reason != "RouterRBACConflict"
		})
	})

	t.Run("deleting the service removes them", func(t *testing.T) {
		require.NoError(t, berthClient(t).OmeV1beta1().InferenceServices(ns).Delete(ctxT(t, apiTimeout), "pd", metav1.DeleteOptions{}))
		waitFor(t, ns, "the garbage collector to delete pd-router's ServiceAccount, Role and RoleBinding", func() bool {
			_, e1 := kube.CoreV1().ServiceAccounts(ns).Get(ctxT(t, apiTimeout), "pd-router", metav1.GetOptions{})
			_, e2 := kube.RbacV1().Roles(ns).Get(ctxT(t, apiTimeout), "pd-router", metav1.GetOptions{})
			_, e3 := kube.RbacV1().RoleBindings(ns).Get(ctxT(t, apiTimeout), "pd-router", metav1.GetOptions{})
			return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2) && apierrors.IsNotFound(e3)
		})
	})
}

// OME's PD runtimes, applied unchanged, select workers with
// component=engine|decoder ome.io/inferenceservice=<isvc> (the multi-node
// one adds leaderworkerset.sigs.k8s.io/worker-index=0): listed through the
// API as their routers list them, each selector finds exactly its pods.
func TestOMESelectorsFindBerthPods(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-omesel")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-omesel")).PD().MultiNode(1).Obj())
	createService(t, MakeService(ns, "mn").Runtime(rt.Name).Replicas(1).Obj())
	waitPods(t, ns, "mn", "a multi-node engine group, a decoder and a router",
		podsNamed("mn-engine-0-0", "mn-engine-0-1", "mn-decoder-0", "mn-router-0"))
	cases := []struct {
		selector string
		want     []string
	}{
		{"component=engine,ome.io/inferenceservice=mn", []string{"mn-engine-0-0", "mn-engine-0-1"}},
		{"component=engine,leaderworkerset.sigs.k8s.io/worker-index=0,ome.io/inferenceservice=mn", []string{"mn-engine-0-0"}},
		{"component=decoder,ome.io/inferenceservice=mn", []string{"mn-decoder-0"}},
		{"component=router,ome.io/inferenceservice=mn", []string{"mn-router-0"}},
	}
	for _, tc := range cases {
		list, err := env.Kube.CoreV1().Pods(ns).List(ctxT(t, apiTimeout), metav1.ListOptions{LabelSelector: tc.selector})
		require.NoError(t, err)
		assert.ElementsMatch(t, tc.want, podNames(list.Items), "pods selected by %s", tc.selector)
	}
}
