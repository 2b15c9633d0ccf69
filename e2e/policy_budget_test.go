package e2e

// ServingPolicy's namespace GPU budget end to end: admission denies the
// service past the budget; a burst of concurrent creates that admission
// cannot serialise is held by the reconciler's ResourceQuota backstop, so
// Running pods never request more than the budget; and a policy created
// after its services reports their violations in its status and on each
// service. The subtests run one after another: they share the fleet's
// GPU nodes.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// PolicyWrapper builds a ServingPolicy for one test namespace (selected by
// its kubernetes.io/metadata.name label), so tests never meet.
type PolicyWrapper struct{ p policyv1alpha1.ServingPolicy }

// MakePolicy starts a policy named name for namespace ns with actions.
func MakePolicy(name, ns string, actions ...policyv1alpha1.ValidationAction) *PolicyWrapper {
	return &PolicyWrapper{p: policyv1alpha1.ServingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.ServingPolicySpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			ValidationActions: actions,
		},
	}}
}

// NamespaceBudget sets rules.maxAcceleratorsPerNamespace.
func (w *PolicyWrapper) NamespaceBudget(n int64) *PolicyWrapper {
	w.p.Spec.Rules.MaxAcceleratorsPerNamespace = &n
	return w
}

// MaxPerService sets rules.maxAcceleratorsPerService.
func (w *PolicyWrapper) MaxPerService(n int64) *PolicyWrapper {
	w.p.Spec.Rules.MaxAcceleratorsPerService = &n
	return w
}

// Obj returns the policy.
func (w *PolicyWrapper) Obj() *policyv1alpha1.ServingPolicy { return w.p.DeepCopy() }

// createPolicy creates a ServingPolicy and deletes it when the test ends.
func createPolicy(t *testing.T, sp *policyv1alpha1.ServingPolicy) *policyv1alpha1.ServingPolicy {
	t.Helper()
	bc := berthClient(t)
	ctx := ctxT(t, time.Minute)
	var got *policyv1alpha1.ServingPolicy
	err := retryWebhook(ctx, func() (err error) {
		got, err = bc.PolicyV1alpha1().ServingPolicies().Create(ctx, sp.DeepCopy(), metav1.CreateOptions{})
		return err
	})
	require.NoError(t, err, "create ServingPolicy %s", sp.Name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		_ = bc.PolicyV1alpha1().ServingPolicies().Delete(ctx, sp.Name, metav1.DeleteOptions{})
	})
	return got
}

// waitPolicy polls the policy until done answers true.
func waitPolicy(t *testing.T, name, ns, what string, done func(*policyv1alpha1.ServingPolicy) bool) *policyv1alpha1.ServingPolicy {
	t.Helper()
	bc := berthClient(t)
	var last *policyv1alpha1.ServingPolicy
	waitFor(t, ns, "ServingPolicy "+name+": "+what, func() bool {
		sp, err := bc.PolicyV1alpha1().ServingPolicies().Get(ctxT(t, apiTimeout), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = sp
		return done(sp)
	})
	return last
}

// policyInForce: the reconciler wrote the status of this generation with
// Ready=True.
func policyInForce(sp *policyv1alpha1.ServingPolicy) bool {
	return sp.Status.ObservedGeneration == sp.Generation && meta.IsStatusConditionTrue(sp.Status.Conditions, "Ready")
}

// waitQuota waits for the policy's ResourceQuota in ns to exist with its
// status computed by the controller-manager (until then the apiserver
// refuses every pod that asks for a quota'd resource).
func waitQuota(t *testing.T, ns, policy string) *corev1.ResourceQuota {
	t.Helper()
	var q *corev1.ResourceQuota
	waitFor(t, ns, "ResourceQuota berth-policy-"+policy+" with its status computed", func() bool {
		got, err := env.Kube.CoreV1().ResourceQuotas(ns).Get(ctxT(t, apiTimeout), "berth-policy-"+policy, metav1.GetOptions{})
		if err != nil || len(got.Status.Hard) == 0 {
			return false
		}
		q = got
		return true
	})
	return q
}

// runningGPUs sums the nvidia.com/gpu requests of the namespace's Running
// pods.
func runningGPUs(t *testing.T, ns string) (gpus int64, pods int) {
	t.Helper()
	list, err := env.Kube.CoreV1().Pods(ns).List(ctxT(t, apiTimeout), metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range list.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		pods++
		for _, c := range p.Spec.Containers {
			q := c.Resources.Requests["nvidia.com/gpu"]
			gpus += q.Value()
		}
	}
	return gpus, pods
}

func TestPolicyBudget(t *testing.T) {
	ensureLifecycleFixtures(t)
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-budget")).GPUs(8).Obj())
	t.Run("AdmissionDeniesPastTheBudget", func(t *testing.T) { testBudgetAdmission(t, rt.Name) })
	t.Run("BurstHeldByTheQuota", func(t *testing.T) { testBudgetBurst(t, rt.Name) })
	t.Run("PolicyAfterServicesReportsViolations", func(t *testing.T) { testPolicyAfterServices(t, rt.Name) })
}

// Namespace budget 16: two services of 8 GPUs are admitted and run, a
// third is denied naming what is in use, and the ResourceQuota backstop
// exists with the budget as its hard limit.
func testBudgetAdmission(t *testing.T, runtime string) {
	ns := lifecycleNamespace(t, "e2e-budget")
	name := uniqueName("budget")
	createPolicy(t, MakePolicy(name, ns, policyv1alpha1.Deny).NamespaceBudget(16).Obj())
	waitPolicy(t, name, ns, "Ready=True", policyInForce)
	q := waitQuota(t, ns, name)
	hard := q.Spec.Hard["requests.nvidia.com/gpu"]
	assert.EqualValues(t, 16, hard.Value(), "the quota's hard limit is the budget: %v", q.Spec.Hard)

	for _, svc := range []string{"one", "two"} {
		createService(t, MakeService(ns, svc).Runtime(runtime).Class("nvidia-h100-80gb").Obj())
	}
	for _, svc := range []string{"one", "two"} {
		waitService(t, ns, svc, "Ready=True", serviceReady)
	}
	_, err := berthClient(t).OmeV1beta1().InferenceServices(ns).Create(ctxT(t, apiTimeout),
		MakeService(ns, "three").Runtime(runtime).Class("nvidia-h100-80gb").Obj(), metav1.CreateOptions{})
	require.Error(t, err, "the third service of 8 GPUs is past the namespace budget of 16")
	assert.Contains(t, err.Error(), "16 of 16 nvidia.com/gpu in use")
	assert.Contains(t, err.Error(), "ServingPolicy/"+name)
	t.Logf("third service denied: %v", err)
}

// A burst of 10 concurrent creates of 8-GPU services in a fresh namespace
// with budget 16: admission checks each against the services it has seen
// and may let several through; the quota makes pod creation atomic, so
// Running pods never request more than 16 GPUs. Counted while it settles.
func testBudgetBurst(t *testing.T, runtime string) {
	ns := lifecycleNamespace(t, "e2e-burst")
	name := uniqueName("burst")
	createPolicy(t, MakePolicy(name, ns, policyv1alpha1.Deny).NamespaceBudget(16).Obj())
	waitPolicy(t, name, ns, "Ready=True", policyInForce)
	q := waitQuota(t, ns, name)
	hard := q.Spec.Hard["requests.nvidia.com/gpu"]
	require.EqualValues(t, 16, hard.Value(), "the quota's hard limit is the budget: %v", q.Spec.Hard)

	var (
		mu              sync.Mutex
		admitted        []string
		denied          []string
		maxGPUs, polls  int64
		wg              sync.WaitGroup
		stop            = make(chan struct{})
		pollerDone      = make(chan struct{})
		bc              = berthClient(t)
		start           = time.Now()
		createCtx       = ctxT(t, 2*time.Minute)
		unexpectedError error
	)
	// Count Running GPUs from before the burst until the end.
	go func() {
		defer close(pollerDone)
		for {
			gpus, _ := runningGPUs(t, ns)
			mu.Lock()
			polls++
			maxGPUs = max(maxGPUs, gpus)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := fmt.Sprintf("burst-%02d", i)
			err := retryWebhook(createCtx, func() error {
				_, err := bc.OmeV1beta1().InferenceServices(ns).Create(createCtx,
					MakeService(ns, svc).Runtime(runtime).Class("nvidia-a100-40gb").Obj(), metav1.CreateOptions{})
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted = append(admitted, svc)
			case strings.Contains(err.Error(), "ServingPolicy/"+name):
				denied = append(denied, svc)
			default:
				unexpectedError = err
			}
		}()
	}
	wg.Wait()
	burst := time.Since(start)
	require.NoError(t, unexpectedError)
	sort.Strings(admitted)
	sort.Strings(denied)
	t.Logf("burst of 10 creates took %s: %d admitted %v, %d denied by the webhook %v", burst.Round(time.Millisecond), len(admitted), admitted, len(denied), denied)
	require.NotEmpty(t, admitted)

	// Settle: every admitted service either runs or says a quota refused
	// its pods; and at least 20 s pass, so refused services retry.
	settled := func() bool {
		if time.Since(start) < 20*time.Second {
			return false
		}
		for _, svc := range admitted {
			isvc, err := bc.OmeV1beta1().InferenceServices(ns).Get(ctxT(t, apiTimeout), svc, metav1.GetOptions{})
			if err != nil {
				return false
			}
			if !serviceReady(isvc) && !meta.IsStatusConditionTrue(isvc.Status.Conditions, "QuotaExceeded") {
				return false
			}
		}
		return true
	}
	waitFor(t, ns, "every admitted service Ready or QuotaExceeded=True", settled)
	close(stop)
	<-pollerDone

	gpus, pods := runningGPUs(t, ns)
	var ready, blocked []string
	for _, svc := range admitted {
		isvc := getService(t, ns, svc)
		if serviceReady(isvc) {
			ready = append(ready, svc)
		}
		if c := meta.FindStatusCondition(isvc.Status.Conditions, "QuotaExceeded"); c != nil && c.Status == metav1.ConditionTrue {
			blocked = append(blocked, svc)
			assert.Equal(t, "ExceededQuota", c.Reason)
			assert.Contains(t, c.Message, "berth-policy-"+name, "the condition names the quota")
		}
	}
	// Retried with backoff, not hot: count the refused pod creations (the
	// reconciler's FailedCreate events, aggregated by the recorder).
	attempts := map[string]int32{}
	var most int32
	for _, svc := range blocked {
		for _, e := range serviceEvents(t, ns, svc) {
			if e.Reason == "FailedCreate" {
				attempts[svc] += max(e.Count, 1)
			}
		}
		most = max(most, attempts[svc])
	}
	t.Logf("refused pod creations per QuotaExceeded service in %s: %v", time.Since(start).Round(time.Second), attempts)
	assert.LessOrEqual(t, most, int32(10), "a refused service is retried on a backoff from --quota-retry-base (5s), not hot")
	q, err := env.Kube.CoreV1().ResourceQuotas(ns).Get(ctxT(t, apiTimeout), "berth-policy-"+name, metav1.GetOptions{})
	require.NoError(t, err)
	used := q.Status.Used["requests.nvidia.com/gpu"]
	mu.Lock()
	t.Logf("after %s: %d Running pods requesting %d GPUs (max %d over %d polls); %d services Ready %v, %d QuotaExceeded %v; quota used %s of %s",
		time.Since(start).Round(time.Second), pods, gpus, maxGPUs, polls, len(ready), ready, len(blocked), blocked, used.String(), hard.String())
	assert.LessOrEqual(t, maxGPUs, int64(16), "Running pods never requested more than the budget")
	mu.Unlock()
	assert.LessOrEqual(t, gpus, int64(16))
	assert.Equal(t, len(admitted), len(ready)+len(blocked), "every admitted service runs or says why not")
	assert.Equal(t, min(len(admitted), 2), len(ready), "the budget runs two services of 8")

	// The policy's audit agrees: the services the quota refused are the
	// ones past the budget.
	sp := waitPolicy(t, name, ns, fmt.Sprintf("the %d QuotaExceeded services as its violations", len(blocked)), func(sp *policyv1alpha1.ServingPolicy) bool {
		var names []string
		for _, v := range sp.Status.ViolatingServices {
			names = append(names, v.Name)
		}
		return int(sp.Status.Violations) == len(blocked) && fmt.Sprint(names) == fmt.Sprint(blocked)
	})
	t.Logf("policy status: %d violations %v", sp.Status.Violations, sp.Status.ViolatingServices)
}

// A policy created after its services exist reports their violations in
// its status (how many, and which) and on each service (PolicyCompliant),
// and deleting the policy clears the services' condition.
func testPolicyAfterServices(t *testing.T, runtime string) {
	ns := lifecycleNamespace(t, "e2e-audit")
	small := createRuntime(t, MakeRuntime(uniqueName("e2e-nogpu")).Obj())
	for _, svc := range []string{"big-a", "big-b"} {
		createService(t, MakeService(ns, svc).Runtime(runtime).Class("nvidia-h100-80gb").Obj())
	}
	createService(t, MakeService(ns, "tiny").Runtime(small.Name).Obj())
	for _, svc := range []string{"big-a", "big-b", "tiny"} {
		waitService(t, ns, svc, "pinned", func(isvc *v1beta1.InferenceService) bool {
			return isvc.Annotations[v1beta1.AnnotationResolvedRuntime] != "" && isvc.Status.ObservedGeneration == isvc.Generation
		})
	}

	name := uniqueName("max4")
	createPolicy(t, MakePolicy(name, ns, policyv1alpha1.Audit).MaxPerService(4).Obj())
	sp := waitPolicy(t, name, ns, "2 violations", func(sp *policyv1alpha1.ServingPolicy) bool {
		return policyInForce(sp) && sp.Status.Violations == 2
	})
	var names []string
	for _, v := range sp.Status.ViolatingServices {
		names = append(names, v.Namespace+"/"+v.Name)
		assert.Contains(t, v.Message, "above the maximum of 4 per service", "violation of %s", v.Name)
	}
	assert.Equal(t, []string{ns + "/big-a", ns + "/big-b"}, names)
	t.Logf("policy status: %d violations %v; Ready: %s", sp.Status.Violations, names, meta.FindStatusCondition(sp.Status.Conditions, "Ready").Message)

	for _, svc := range []string{"big-a", "big-b"} {
		isvc := waitService(t, ns, svc, "PolicyCompliant=False", func(isvc *v1beta1.InferenceService) bool {
			return meta.IsStatusConditionFalse(isvc.Status.Conditions, "PolicyCompliant")
		})
		c := meta.FindStatusCondition(isvc.Status.Conditions, "PolicyCompliant")
		assert.Equal(t, "ViolatesServingPolicy", c.Reason)
		assert.Contains(t, c.Message, "ServingPolicy/"+name)
	}
	waitService(t, ns, "tiny", "PolicyCompliant=True", func(isvc *v1beta1.InferenceService) bool {
		return meta.IsStatusConditionTrue(isvc.Status.Conditions, "PolicyCompliant")
	})

	err := berthClient(t).PolicyV1alpha1().ServingPolicies().Delete(ctxT(t, apiTimeout), name, metav1.DeleteOptions{})
	require.True(t, err == nil || apierrors.IsNotFound(err), "delete the policy: %v", err)
	for _, svc := range []string{"big-a", "big-b", "tiny"} {
		waitService(t, ns, svc, "no PolicyCompliant condition", func(isvc *v1beta1.InferenceService) bool {
			return meta.FindStatusCondition(isvc.Status.Conditions, "PolicyCompliant") == nil
		})
	}
}
