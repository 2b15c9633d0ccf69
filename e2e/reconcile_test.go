package e2e

// The reconciler end to end: serving groups of every shape, the Services
// that make them reachable, what a user sees when a service cannot run,
// garbage collection, and the lifecycle fields admission refuses. Each
// test has its own namespace and its own test-only runtimes (never
// auto-selected), so tests run in parallel without meeting.

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// assertOwned: obj is controlled by the service.
func assertOwned(t *testing.T, isvc *v1beta1.InferenceService, obj metav1.Object, what string) {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	if assert.NotNil(t, ref, "%s %s has no controller owner reference", what, obj.GetName()) {
		assert.Equal(t, "InferenceService", ref.Kind, "%s %s", what, obj.GetName())
		assert.Equal(t, isvc.Name, ref.Name, "%s %s", what, obj.GetName())
		assert.Equal(t, isvc.UID, ref.UID, "%s %s", what, obj.GetName())
	}
}

func selects(svc *corev1.Service, p *corev1.Pod) bool {
	return len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.Labels))
}

// nvidiaGPUs is the container's nvidia.com/gpu limit: a runtime asking for
// NVIDIA GPUs that opts into no other vendor's class keeps that resource.
func nvidiaGPUs(c corev1.Container) int64 {
	q := c.Resources.Limits["nvidia.com/gpu"]
	return q.Value()
}

// gpusOf counts the accelerators a container asks for, under whichever
// vendor's resource name the chosen class translated them to.
func gpusOf(c corev1.Container) int64 {
	var n int64
	for name, q := range c.Resources.Limits {
		if strings.Contains(string(name), "gpu") || strings.Contains(string(name), "i915") {
			n += q.Value()
		}
	}
	return n
}

// A multi-node runtime (a leader and two workers per group, one GPU each)
// gets pods <isvc>-engine-0-0 (leader), -0-1 and -0-2 with the group env
// LeaderWorkerSet launchers read, hostname and subdomain, a headless
// Service <isvc>-engine-0, and an EndpointSlice the real controller-manager
// makes for it in which the leader's hostname is its pod name: what makes
// <isvc>-engine-0-0.<isvc>-engine-0.<ns> resolve under kube-dns.
func TestMultiNodeGroupGetsLeaderWorkersAndDNS(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-multinode")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-mn")).MultiNode(2).GPUs(1).Obj())
	createService(t, MakeService(ns, "mn").Runtime(rt.Name).Obj())

	isvc := waitService(t, ns, "mn", "Ready=True", serviceReady)
	names := []string{"mn-engine-0-0", "mn-engine-0-1", "mn-engine-0-2"}
	pods := waitPods(t, ns, "mn", "a leader and two workers Running and Ready", podsNamed(names...))
	engine := isvc.Status.Components[v1beta1.ComponentEngine]
	assert.EqualValues(t, 2, engine.Workers, "status.components.engine.workers")
	require.NotEmpty(t, engine.Revision, "status.components.engine.revision")

	leaderAddr := "mn-engine-0-0.mn-engine-0." + ns
	for w, name := range names {
		p := podByName(pods, name)
		assertOwned(t, isvc, p, "pod")
		role := "worker"
		if w == 0 {
			role = "leader"
		}
		assert.Equal(t, role, p.Labels[v1beta1.LabelRole], "pod %s role", name)
		assert.Equal(t, strconv.Itoa(w), p.Labels[v1beta1.LabelWorkerIndex], "pod %s worker index", name)
		assert.Equal(t, "0", p.Labels[v1beta1.LabelGroupIndex], "pod %s group index", name)
		assert.Equal(t, name, p.Spec.Hostname, "pod %s hostname", name)
		assert.Equal(t, "mn-engine-0", p.Spec.Subdomain, "pod %s subdomain", name)
		assert.Equal(t, engine.Revision, p.Annotations[v1beta1.AnnotationRevision], "pod %s is at the service's revision", name)
		c := p.Spec.Containers[0]
		assert.Equal(t, e2eImage, c.Image, "pod %s was completed by the webhook", name)
		assert.EqualValues(t, 1, nvidiaGPUs(c), "pod %s nvidia.com/gpu: %v", name, c.Resources.Limits)
		e := envOf(c)
		for _, prefix := range []string{"BERTH_", "LWS_"} {
			assert.Equal(t, leaderAddr, e[prefix+"LEADER_ADDRESS"], "pod %s %sLEADER_ADDRESS", name, prefix)
			assert.Equal(t, "3", e[prefix+"GROUP_SIZE"], "pod %s %sGROUP_SIZE", name, prefix)
			assert.Equal(t, strconv.Itoa(w), e[prefix+"WORKER_INDEX"], "pod %s %sWORKER_INDEX", name, prefix)
		}
	}

	ctx := ctxT(t, settleTimeout)
	headless, err := env.Kube.CoreV1().Services(ns).Get(ctx, "mn-engine-0", metav1.GetOptions{})
	require.NoError(t, err, "the group's headless Service")
	assert.Equal(t, corev1.ClusterIPNone, headless.Spec.ClusterIP, "the group Service is headless")
	assertOwned(t, isvc, headless, "Service")
	for _, name := range names {
		assert.True(t, selects(headless, podByName(pods, name)), "the headless Service selects %s", name)
	}
	front, err := env.Kube.CoreV1().Services(ns).Get(ctx, "mn", metav1.GetOptions{})
	require.NoError(t, err, "the service's ClusterIP Service")
	assert.True(t, selects(front, podByName(pods, names[0])), "the front Service selects the leader")
	assert.False(t, selects(front, podByName(pods, names[1])), "the front Service does not select workers")

	// The EndpointSlice is the controller-manager's: berth only made the
	// Service and set hostname/subdomain on the pods.
	var slices []discoveryv1.EndpointSlice
	waitFor(t, ns, "an EndpointSlice of mn-engine-0 with the leader's hostname", func() bool {
		list, err := env.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=mn-engine-0"})
		if err != nil {
			return false
		}
		slices = list.Items
		return len(hostnames(slices)) == 3
	})
	hosts := hostnames(slices)
	for _, name := range names {
		assert.Equal(t, name, hosts[name], "endpoint of pod %s has hostname %s", name, name)
	}
}

// hostnames maps the target pod of each endpoint to its hostname.
func hostnames(slices []discoveryv1.EndpointSlice) map[string]string {
	out := map[string]string{}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && e.Hostname != nil {
				out[e.TargetRef.Name] = *e.Hostname
			}
		}
	}
	return out
}

// A prefill/decode runtime out of the box (srt-llama-3-2-1b-instruct-pd-rt,
// named by the service) gets an engine, a decoder and a router pod; the
// engine is told BERTH_PD_ROLE=prefill and the decoder decode, the router
// neither and no GPU; the service's URL and front Service reach the router.
func TestPrefillDecodeServiceGetsEngineDecoderAndRouter(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-pd")
	createService(t, MakeService(ns, "pd").Runtime("srt-llama-3-2-1b-instruct-pd-rt").Obj())

	isvc := waitService(t, ns, "pd", "Ready=True", serviceReady)
	pods := waitPods(t, ns, "pd", "engine, decoder and router Running and Ready", podsNamed("pd-engine-0", "pd-decoder-0", "pd-router-0"))
	assert.Equal(t, "3/3", isvc.Status.Ready, "status.ready counts the groups of every component")
	for comp, want := range map[string]string{"pd-engine-0": "prefill", "pd-decoder-0": "decode", "pd-router-0": ""} {
		p := podByName(pods, comp)
		assertOwned(t, isvc, p, "pod")
		e := envOf(p.Spec.Containers[0])
		assert.Equal(t, want, e["BERTH_PD_ROLE"], "pod %s BERTH_PD_ROLE", p.Name)
		component := p.Labels[v1beta1.LabelComponent]
		if st, ok := isvc.Status.Components[component]; assert.True(t, ok, "status.components.%s", component) {
			assert.Equal(t, st.Revision, p.Annotations[v1beta1.AnnotationRevision], "pod %s revision", p.Name)
		}
	}
	assert.Contains(t, podByName(pods, "pd-engine-0").Spec.Containers[0].Image, "sglang")
	for _, n := range []string{"pd-engine-0", "pd-decoder-0"} {
		c := podByName(pods, n).Spec.Containers[0]
		assert.EqualValues(t, 1, nvidiaGPUs(c), "pod %s nvidia.com/gpu: %v", n, c.Resources.Limits)
	}
	router := podByName(pods, "pd-router-0")
	assert.Contains(t, router.Spec.Containers[0].Image, "sglang-router")
	assert.Zero(t, gpusOf(router.Spec.Containers[0]), "the router asks for no GPU")

	assert.NotEmpty(t, isvc.Status.URL, "status.url")
	front, err := env.Kube.CoreV1().Services(ns).Get(ctxT(t, apiTimeout), "pd", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1beta1.ComponentRouter, front.Spec.Selector[v1beta1.LabelComponent], "the front Service selects the router: %v", front.Spec.Selector)
	for _, p := range pods {
		assert.Equal(t, p.Name == "pd-router-0", selects(front, &p), "front Service selects pod %s", p.Name)
	}
}

// A service asking for 9 GPUs per pod on the H100 class, whose nodes have
// 8, is not Ready, and says why with the scheduler's words: in the Ready
// condition, in kubectl get (Status column) and describe, and in an Event.
func TestUnschedulableServiceSaysWhy(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-unsched")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-unsched")).GPUs(1).Obj())
	createService(t, MakeService(ns, "big").Runtime(rt.Name).Class("nvidia-h100-80gb").EngineGPUs(9).Obj())

	const why = "Insufficient nvidia.com/gpu"
	isvc := waitService(t, ns, "big", "Ready=False naming "+why, func(s *v1beta1.InferenceService) bool {
		c := condition(s, v1beta1.ConditionReady)
		return conditionIs(s, v1beta1.ConditionReady, metav1.ConditionFalse) && strings.Contains(c.Message, why)
	})
	assert.Equal(t, "nvidia-h100-80gb", isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass], "the named class is pinned")
	ready := condition(isvc, v1beta1.ConditionReady)
	assert.Equal(t, "Unschedulable", ready.Reason, "Ready reason")
	pods := servicePods(t, ns, "big")
	require.Len(t, pods, 1)
	assert.Equal(t, "big-engine-0", pods[0].Name)
	assert.EqualValues(t, 9, nvidiaGPUs(pods[0].Spec.Containers[0]), "the user's 9 GPUs are what the pod asks for")
	assert.Empty(t, pods[0].Spec.NodeName, "no node fits")

	out, err := kubectl(t, "", "get", "isvc", "big", "-n", ns)
	require.NoError(t, err, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Contains(t, lines[0], "STATUS", out)
	assert.Contains(t, lines[1], ready.Reason, "kubectl get shows the Ready reason:\n%s", out)
	assert.Contains(t, lines[1], "0/1", "kubectl get shows no group ready:\n%s", out)

	out, err = kubectl(t, "", "describe", "isvc", "big", "-n", ns)
	require.NoError(t, err, out)
	assert.Contains(t, out, why, "kubectl describe shows the scheduler's reason")

	evs := waitEvents(t, ns, "big", "a Warning event naming "+why, func(evs []corev1.Event) bool {
		for _, e := range evs {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, why) {
				return true
			}
		}
		return false
	})
	assert.NotEmpty(t, evs)
}

// Deleting a service removes every pod, Service and HPA it owned: the
// real controller-manager's garbage collector follows the owner
// references the reconciler set.
func TestDeletingServiceCollectsEverything(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-gc")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-gc")).MultiNode(1).Obj())
	createService(t, MakeService(ns, "gc").Runtime(rt.Name).Autoscale(v1beta1.ScaleMetricCPU, 1, 3).Obj())
	isvc := waitService(t, ns, "gc", "Ready=True", serviceReady)
	pods := waitPods(t, ns, "gc", "leader and worker serving", podsNamed("gc-engine-0-0", "gc-engine-0-1"))

	ctx := ctxT(t, settleTimeout)
	sel := metav1.ListOptions{LabelSelector: v1beta1.LabelInferenceService + "=gc"}
	owned := func() (names []string) {
		ps, err := env.Kube.CoreV1().Pods(ns).List(ctx, sel)
		require.NoError(t, err)
		for i := range ps.Items {
			names = append(names, "pod/"+ps.Items[i].Name)
		}
		ss, err := env.Kube.CoreV1().Services(ns).List(ctx, sel)
		require.NoError(t, err)
		for i := range ss.Items {
			assertOwned(t, isvc, &ss.Items[i], "Service")
			names = append(names, "service/"+ss.Items[i].Name)
		}
		hs, err := env.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for i := range hs.Items {
			assertOwned(t, isvc, &hs.Items[i], "HPA")
			names = append(names, "hpa/"+hs.Items[i].Name)
		}
		crs, err := env.Kube.AppsV1().ControllerRevisions(ns).List(ctx, sel)
		require.NoError(t, err)
		for i := range crs.Items {
			assertOwned(t, isvc, &crs.Items[i], "ControllerRevision")
			names = append(names, "controllerrevision/"+crs.Items[i].Name)
		}
		return names
	}
	var before []string
	waitFor(t, ns, "pods, the front and group Services, the HPA and the recorded revision", func() bool {
		before = owned()
		return len(before) == 6
	})
	rev := "controllerrevision/gc-engine-" + isvc.Status.Components[v1beta1.ComponentEngine].Revision
	assert.ElementsMatch(t, []string{"pod/gc-engine-0-0", "pod/gc-engine-0-1", "service/gc", "service/gc-engine-0", "hpa/gc", rev}, before)
	for i := range pods {
		assertOwned(t, isvc, &pods[i], "pod")
	}

	require.NoError(t, berthClient(t).OmeV1beta1().InferenceServices(ns).Delete(ctx, "gc", metav1.DeleteOptions{}))
	var left []string
	waitFor(t, ns, "everything the service owned garbage-collected", func() bool {
		left = owned()
		return len(left) == 0
	})
	_, err := berthClient(t).OmeV1beta1().InferenceServices(ns).Get(ctx, "gc", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the service is gone: %v", err)
}

// A service whose pinned runtime is deleted keeps its running pods: it is
// Resolved=False and Degraded=True with the reason, nothing is deleted.
// When the runtime comes back unchanged, the service is Ready again with
// the very same pods.
func TestDeletedPinnedRuntimeKeepsPods(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-orphan")
	rtObj := MakeRuntime(uniqueName("e2e-orphan")).Obj()
	rt := createRuntime(t, rtObj.DeepCopy())
	createService(t, MakeService(ns, "keep").Runtime(rt.Name).Replicas(2).Obj())
	waitService(t, ns, "keep", "Ready=True", serviceReady)
	before := waitPods(t, ns, "keep", "two groups serving", podsNamed("keep-engine-0", "keep-engine-1"))
	w := startPodWatch(t, ns)

	require.NoError(t, berthClient(t).OmeV1beta1().ClusterServingRuntimes().Delete(ctxT(t, apiTimeout), rt.Name, metav1.DeleteOptions{}))
	isvc := waitService(t, ns, "keep", "Resolved=False and Degraded=True", func(s *v1beta1.InferenceService) bool {
		return conditionIs(s, v1beta1.ConditionResolved, metav1.ConditionFalse) && conditionIs(s, v1beta1.ConditionDegraded, metav1.ConditionTrue)
	})
	for _, typ := range []string{v1beta1.ConditionResolved, v1beta1.ConditionDegraded} {
		c := condition(isvc, typ)
		assert.NotEmpty(t, c.Reason, "%s reason", typ)
		assert.Contains(t, c.Message, rt.Name, "%s message names the runtime", typ)
	}
	assertSamePods(t, before, servicePods(t, ns, "keep"))
	_, events, err := w.snapshot()
	require.NoError(t, err)
	for _, ev := range events {
		assert.False(t, ev.Type == watch.Deleted || ev.Pod.DeletionTimestamp != nil, "pod %s was deleted (%s) after its runtime was", ev.Pod.Name, ev.Type)
	}
	for _, name := range []string{"keep"} {
		_, err := env.Kube.CoreV1().Services(ns).Get(ctxT(t, apiTimeout), name, metav1.GetOptions{})
		assert.NoError(t, err, "Service %s is kept", name)
	}

	// The same runtime again: the pin resolves, the revision is the same,
	// and nothing rolls.
	createRuntime(t, rtObj.DeepCopy())
	waitService(t, ns, "keep", "Resolved=True, Ready=True and Degraded=False again", func(s *v1beta1.InferenceService) bool {
		return conditionIs(s, v1beta1.ConditionResolved, metav1.ConditionTrue) && serviceReady(s) &&
			conditionIs(s, v1beta1.ConditionDegraded, metav1.ConditionFalse)
	})
	assertSamePods(t, before, servicePods(t, ns, "keep"))
}

// assertSamePods: the same pods (names and UIDs), none terminating.
func assertSamePods(t *testing.T, want, got []corev1.Pod) {
	t.Helper()
	uids := func(ps []corev1.Pod) map[string]string {
		out := map[string]string{}
		for _, p := range ps {
			out[p.Name] = string(p.UID)
		}
		return out
	}
	assert.Equal(t, uids(want), uids(got), "pods (name: UID)")
	for _, p := range got {
		assert.Nil(t, p.DeletionTimestamp, "pod %s is terminating", p.Name)
	}
}

// Lifecycle fields that can never work are denied by kubectl apply, each
// with the field named; a valid control row is accepted, so a denial
// cannot come from something else.
func TestLifecycleFieldsDeniedAtAdmission(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-admit")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-admit")).Obj())
	long := "svc-" + strings.Repeat("x", 56)
	require.Len(t, long, 60)
	base := func(name string) *ServiceWrapper {
		return MakeService(ns, name).Runtime(rt.Name).MinMax(2, 2).Replicas(2)
	}
	tests := []struct {
		name string
		svc  *ServiceWrapper
		// want are substrings of kubectl's output; none: accepted.
		want []string
	}{
		{"valid control", base("valid").Partition(intstr.FromInt32(2)).MaxUnavailable(intstr.FromInt32(1)).Recovery(v1beta1.ServingGroupRecreate), nil},
		{"60-character name", base(long), []string{"metadata.name", long}},
		{"partition above the group count", base("partition").Partition(intstr.FromInt32(3)), []string{"spec.rolloutStrategy.rollingUpdateConfiguration.partition"}},
		{"maxUnavailable 0", base("zero").MaxUnavailable(intstr.FromInt32(0)), []string{"spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable"}},
		{"maxUnavailable 0%", base("zero-pct").MaxUnavailable(intstr.FromString("0%")), []string{"spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable"}},
		{"unknown recovery policy", base("policy").Recovery("RestartEverything"), []string{"spec.recoveryPolicy", "RestartEverything"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := kubectl(t, tc.svc.JSON(t), "apply", "--server-side", "--dry-run=server", "-f", "-")
			if tc.want == nil {
				require.NoError(t, err, out)
				return
			}
			require.Error(t, err, "kubectl apply accepted it:\n%s", out)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
		})
	}
}
