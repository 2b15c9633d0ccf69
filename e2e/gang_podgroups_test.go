package e2e

// Gang scheduling of serving groups (issue 13): the reconciler keeps one
// PodGroup per engine group, or one per prefill/decode service, and puts
// the pods it creates in it; admission checks spec.gangPolicy. The
// coscheduling scheduler (internal/devenv/gang) then places a multi-node
// group all or nothing.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/gang"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/reconcile/servinggroups"
)

const (
	volcanoCRD = "podgroups.scheduling.volcano.sh"
)

func pgDynamic(t *testing.T) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(env.Cluster.RESTConfig())
	require.NoError(t, err)
	return d
}

// getPodGroup reads a PodGroup; nil when it does not exist.
func getPodGroup(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := pgDynamic(t).Resource(gvr).Namespace(ns).Get(ctxT(t, apiTimeout), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return u
}

func waitPodGroup(t *testing.T, gvr schema.GroupVersionResource, ns, name, what string, done func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var pg *unstructured.Unstructured
	waitFor(t, ns, fmt.Sprintf("PodGroup %s/%s: %s", ns, name, what), func() bool {
		pg = getPodGroup(t, gvr, ns, name)
		return pg != nil && done(pg)
	})
	return pg
}

func gangCondition(isvc *v1beta1.InferenceService) *metav1.Condition {
	return condition(isvc, servinggroups.ConditionGangScheduling)
}

func gangReason(reason string) func(*v1beta1.InferenceService) bool {
	return func(s *v1beta1.InferenceService) bool {
		c := gangCondition(s)
		return c != nil && c.Reason == reason && c.ObservedGeneration == s.Generation
	}
}

// requestsOf sums a pod's container requests, as a PodGroup counts it.
func requestsOf(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for k, q := range c.Resources.Requests {
			s := q.DeepCopy()
			if have, ok := out[k]; ok {
				s.Add(have)
			}
			out[k] = s
		}
	}
	return out
}

func addRequests(dst, src corev1.ResourceList) {
	for k, q := range src {
		s := q.DeepCopy()
		if have, ok := dst[k]; ok {
			s.Add(have)
		}
		dst[k] = s
	}
}

// minResourcesOf reads spec.minResources.
func minResourcesOf(t *testing.T, pg *unstructured.Unstructured) corev1.ResourceList {
	t.Helper()
	m, _, err := unstructured.NestedStringMap(pg.Object, "spec", "minResources")
	require.NoError(t, err)
	out := corev1.ResourceList{}
	for k, v := range m {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

func assertSameResources(t *testing.T, want, got corev1.ResourceList, what string) {
	t.Helper()
	assert.Len(t, got, len(want), "%s: want %v, got %v", what, want, got)
	for k, q := range want {
		g := got[k]
		assert.Zero(t, q.Cmp(g), "%s[%s]: want %s, got %s", what, k, q.String(), g.String())
	}
}

// pdGangService is a prefill/decode service of 3 engine and 2 decoder
// groups under Volcano, needing 2 prefill and 1 decode group (seed 003's
// names), in Volcano queue gang-q.
func pdGangService(ns, name, runtime string) *v1beta1.InferenceService {
	s := MakeService(ns, name).Runtime(runtime).Replicas(3).DecoderReplicas(2).Obj()
	s.Annotations = map[string]string{servinggroups.AnnotationVolcanoQueueName: "gang-q"}
	s.Spec.GangPolicy = &v1beta1.GangPolicy{Scheduler: v1beta1.GangSchedulerVolcano,
		MinRoleReplicas: map[string]int32{"prefill": 2, "decode": 1}}
	return s
}

// A prefill/decode service with gangPolicy gets one Volcano PodGroup <isvc>
// whose minMember, minTaskMember, queue and minResources are seed 003's
// formula over the composed pods; its engine and decoder pods (not its
// router) are in it; a deleted PodGroup comes back. Without the CRD the
// service says PodGroupCRDMissing; once a CRD whose schema has
// subGroupPolicy is installed, the PodGroup comes back with subgroups.
func TestGangPodGroupsPrefillDecode(t *testing.T) {
	ns := lifecycleNamespace(t, "e2e-gang-pd")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-gang-pd")).PD().GPUs(2).Obj())
	createService(t, pdGangService(ns, "pd", rt.Name))
	volcano := gang.VolcanoPodGroupGVR

	pg := waitPodGroup(t, volcano, ns, "pd", "seed 003's minMember", func(u *unstructured.Unstructured) bool {
		mm, _, _ := unstructured.NestedInt64(u.Object, "spec", "minMember")
		return mm == 3
	})
	tasks, _, err := unstructured.NestedMap(pg.Object, "spec", "minTaskMember")
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"engine-0": int64(1), "engine-1": int64(1), "decoder-0": int64(1)}, tasks, "minTaskMember")
	queue, _, _ := unstructured.NestedString(pg.Object, "spec", "queue")
	assert.Equal(t, "gang-q", queue)
	_, hasSub, _ := unstructured.NestedSlice(pg.Object, "spec", "subGroupPolicy")
	assert.False(t, hasSub, "Volcano v1.12.1's CRD has no subGroupPolicy")
	isvc := getService(t, ns, "pd")
	assertOwned(t, isvc, pg, "PodGroup")

	pods := waitPods(t, ns, "pd", "engine and decoder pods composed", func(ps []corev1.Pod) bool {
		n := 0
		for _, p := range ps {
			if p.Annotations[v1beta1.AnnotationRevision] != "" && p.Labels[v1beta1.LabelComponent] != v1beta1.ComponentRouter {
				n++
			}
		}
		return n == 5
	})
	want := corev1.ResourceList{}
	for _, p := range pods {
		comp, grp := p.Labels[v1beta1.LabelComponent], p.Labels[v1beta1.LabelGroupIndex]
		if comp == v1beta1.ComponentRouter {
			assert.Empty(t, p.Annotations[servinggroups.AnnotationVolcanoGroupName], "router pod %s is in no PodGroup", p.Name)
			continue
		}
		assert.Equal(t, "pd", p.Annotations[servinggroups.AnnotationVolcanoGroupName], "pod %s group", p.Name)
		assert.Equal(t, comp+"-"+grp, p.Annotations[servinggroups.AnnotationVolcanoTaskSpec], "pod %s task", p.Name)
		assert.Equal(t, "volcano", p.Spec.SchedulerName, "pod %s schedulerName (from gangPolicy)", p.Name)
		if comp == v1beta1.ComponentEngine && grp != "2" || comp == v1beta1.ComponentDecoder && grp == "0" {
			addRequests(want, requestsOf(&p))
		}
	}
	assertSameResources(t, want, minResourcesOf(t, pg), "minResources = requests of engine-0, engine-1 and decoder-0 as the webhook composed them")
	waitService(t, ns, "pd", "GangScheduling=True", gangReason(servinggroups.ReasonPodGroupsSynced))

	// Deleted by someone else: recreated.
	require.NoError(t, pgDynamic(t).Resource(volcano).Namespace(ns).Delete(ctxT(t, apiTimeout), "pd", metav1.DeleteOptions{}))
	waitPodGroup(t, volcano, ns, "pd", "recreated", func(u *unstructured.Unstructured) bool {
		mm, _, _ := unstructured.NestedInt64(u.Object, "spec", "minMember")
		return u.GetUID() != pg.GetUID() && mm == 3
	})

	t.Run("CRD missing, then installed with subGroupPolicy", func(t *testing.T) {
		crdMissingThenSubGroups(t, ns, "pd")
	})
}

// crdMissingThenSubGroups deletes Volcano's PodGroup CRD: the service says
// PodGroupCRDMissing, naming it. Then a variant of v1.12.1's CRD whose
// spec has subGroupPolicy (as Volcano >= 1.14) is installed: the
// reconciler notices, and the PodGroup comes back with one subgroup per
// role. The original CRD is put back at the end.
func crdMissingThenSubGroups(t *testing.T, ns, name string) {
	crd := volcanoCRDObject(t)
	exts := pgDynamic(t).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = exts.Delete(ctx, volcanoCRD, metav1.DeleteOptions{})
		waitCRDGone(ctx, exts)
		_, err := env.Applier.InstallCRDs(ctx, []install.Object{crd}, time.Minute)
		assert.NoError(t, err, "put Volcano's CRD back")
	})
	require.NoError(t, exts.Delete(ctxT(t, apiTimeout), volcanoCRD, metav1.DeleteOptions{}))
	waitCRDGone(ctxT(t, 2*time.Minute), exts)
	isvc := waitService(t, ns, name, "GangScheduling=False PodGroupCRDMissing", gangReason(servinggroups.ReasonPodGroupCRDMissing))
	assert.Equal(t, metav1.ConditionFalse, gangCondition(isvc).Status)
	assert.Contains(t, gangCondition(isvc).Message, volcanoCRD)

	variant := install.Object{Source: crd.Source + " + subGroupPolicy", Unstructured: crd.DeepCopy()}
	addSubGroupPolicy(t, variant.Unstructured)
	_, err := env.Applier.InstallCRDs(ctxT(t, 2*time.Minute), []install.Object{variant}, time.Minute)
	require.NoError(t, err)
	pg := waitPodGroup(t, gang.VolcanoPodGroupGVR, ns, name, "subGroupPolicy", func(u *unstructured.Unstructured) bool {
		_, ok, _ := unstructured.NestedSlice(u.Object, "spec", "subGroupPolicy")
		return ok
	})
	sgs, _, _ := unstructured.NestedSlice(pg.Object, "spec", "subGroupPolicy")
	want := []any{
		map[string]any{"name": "engine", "subGroupSize": int64(1), "minSubGroups": int64(2), "matchLabelKeys": []any{v1beta1.LabelGroupIndex},
			"labelSelector": map[string]any{"matchLabels": map[string]any{v1beta1.LabelInferenceService: name, v1beta1.LabelComponent: "engine"}}},
		map[string]any{"name": "decoder", "subGroupSize": int64(1), "minSubGroups": int64(1), "matchLabelKeys": []any{v1beta1.LabelGroupIndex},
			"labelSelector": map[string]any{"matchLabels": map[string]any{v1beta1.LabelInferenceService: name, v1beta1.LabelComponent: "decoder"}}},
	}
	assert.Equal(t, want, sgs)
	waitService(t, ns, name, "GangScheduling=True again", gangReason(servinggroups.ReasonPodGroupsSynced))
}

func volcanoCRDObject(t *testing.T) install.Object {
	t.Helper()
	objs, err := gang.CRDs()
	require.NoError(t, err)
	i := slices.IndexFunc(objs, func(o install.Object) bool { return o.GetName() == volcanoCRD })
	require.GreaterOrEqual(t, i, 0, "internal/devenv/gang has %s", volcanoCRD)
	return objs[i]
}

func waitCRDGone(ctx context.Context, exts dynamic.NamespaceableResourceInterface) {
	for ctx.Err() == nil {
		if _, err := exts.Get(ctx, volcanoCRD, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// addSubGroupPolicy adds Volcano 1.14's spec.subGroupPolicy to the CRD's
// v1beta1 schema (the fields berth writes).
func addSubGroupPolicy(t *testing.T, crd *unstructured.Unstructured) {
	t.Helper()
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	require.NoError(t, err)
	for i, v := range versions {
		m := v.(map[string]any)
		if m["name"] != "v1beta1" {
			continue
		}
		props, _, err := unstructured.NestedMap(m, "schema", "openAPIV3Schema", "properties", "spec", "properties")
		require.NoError(t, err)
		props["subGroupPolicy"] = map[string]any{"type": "array", "items": map[string]any{"type": "object",
			"x-kubernetes-preserve-unknown-fields": true,
			"properties": map[string]any{
				"name": map[string]any{"type": "string"}, "subGroupSize": map[string]any{"type": "integer", "format": "int32"},
				"minSubGroups": map[string]any{"type": "integer", "format": "int32"}}}}
		require.NoError(t, unstructured.SetNestedMap(m, props, "schema", "openAPIV3Schema", "properties", "spec", "properties"))
		versions[i] = m
	}
	require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
}

// The webhook denies a minRoleReplicas naming a role the service does not
// have or above the role's replicas, and the CRD's transition rule denies
// removing gangPolicy, each naming the field.
func TestGangPolicyAdmission(t *testing.T) {
	ns := lifecycleNamespace(t, "e2e-gang-adm")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-gang-adm")).PD().Obj())
	bc := berthClient(t)
	deny := func(name string, mrr map[string]int32, want ...string) {
		s := pdGangService(ns, name, rt.Name)
		s.Spec.GangPolicy.MinRoleReplicas = mrr
		_, err := bc.OmeV1beta1().InferenceServices(ns).Create(ctxT(t, apiTimeout), s, metav1.CreateOptions{})
		if assert.Error(t, err, "%v admitted", mrr) {
			for _, w := range want {
				assert.Contains(t, err.Error(), w)
			}
		}
	}
	deny("above", map[string]int32{"decode": 5}, "spec.gangPolicy.minRoleReplicas[decode]", "is above the 2 serving group(s) of the decoder")
	deny("zero", map[string]int32{"prefill": 0}, "spec.gangPolicy.minRoleReplicas[prefill]", "must be at least 1")
	deny("router", map[string]int32{"router": 1}, "spec.gangPolicy.minRoleReplicas[router]", "supported values")

	noDecoder := MakeService(ns, "single").Runtime(MakeRuntimeName(t)).Obj()
	noDecoder.Spec.GangPolicy = &v1beta1.GangPolicy{MinRoleReplicas: map[string]int32{"decode": 1}}
	_, err := bc.OmeV1beta1().InferenceServices(ns).Create(ctxT(t, apiTimeout), noDecoder, metav1.CreateOptions{})
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "spec.gangPolicy.minRoleReplicas[decode]")
		assert.Contains(t, err.Error(), "the service has no decoder")
	}

	createService(t, pdGangService(ns, "kept", rt.Name))
	s := getService(t, ns, "kept")
	s.Spec.GangPolicy = nil
	_, err = bc.OmeV1beta1().InferenceServices(ns).Update(ctxT(t, apiTimeout), s, metav1.UpdateOptions{})
	if assert.Error(t, err, "removing gangPolicy was admitted") {
		assert.Contains(t, err.Error(), "spec.gangPolicy cannot be removed once set")
	}
}

// MakeRuntimeName creates a single-engine runtime and returns its name.
func MakeRuntimeName(t *testing.T) string {
	t.Helper()
	return createRuntime(t, MakeRuntime(uniqueName("e2e-gang-one")).Obj()).Name
}

// multiNodeOnSet is a service of one group, a leader and 3 workers of 8
// GPUs each (H100), on node set set, with the given schedulerName.
func multiNodeOnSet(t *testing.T, ns, name, set, scheduler string) *v1beta1.InferenceService {
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-gang-mn")).MultiNode(3).GPUs(8).Obj())
	s := MakeService(ns, name).Runtime(rt.Name).Replicas(1).Obj()
	s.Annotations = map[string]string{v1beta1.AnnotationAcceleratorClass: "nvidia-h100-80gb"}
	s.Spec.Engine.SchedulerName = scheduler
	s.Spec.Engine.NodeSelector = map[string]string{gangNodeLabel: set}
	s.Spec.Engine.Tolerations = []corev1.Toleration{{Key: gangNodeTaint, Operator: corev1.TolerationOpEqual, Value: set, Effect: corev1.TaintEffectNoSchedule}}
	return s
}

// bound counts the service's engine pods with a node, of those that exist.
func bound(t *testing.T, ns, name string) (n, pods int) {
	for _, p := range servicePods(t, ns, name) {
		if p.DeletionTimestamp == nil {
			pods++
			if p.Spec.NodeName != "" {
				n++
			}
		}
	}
	return n, pods
}

// The headline: a group of 4 pods (a leader and 3 workers) of 8 GPUs each
// under the coscheduling scheduler, where only 3 such nodes are free: no
// pod binds, all 4 stay Pending, and the scheduler's reason reaches the
// service (GangScheduling=False Unschedulable). A fourth node: all 4 bind
// within 60 s. The control, the same under the default scheduler, binds 3.
func TestGangCoschedulingAllOrNothing(t *testing.T) {
	ns := lifecycleNamespace(t, "e2e-gang-cos")
	set := rand.String(5)
	createGangNodes(t, 3, set)
	createService(t, multiNodeOnSet(t, ns, "mn", set, gang.SchedulerName))

	pg := waitPodGroup(t, gang.CoschedulingPodGroupGVR, ns, "mn-engine-0", "minMember 4", func(u *unstructured.Unstructured) bool {
		mm, _, _ := unstructured.NestedInt64(u.Object, "spec", "minMember")
		return mm == 4
	})
	assertSameResources(t, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("32")},
		corev1.ResourceList{"nvidia.com/gpu": minResourcesOf(t, pg)["nvidia.com/gpu"]}, "minResources nvidia.com/gpu")
	isvc := waitService(t, ns, "mn", "GangScheduling=False Unschedulable", gangReason(servinggroups.ReasonGangUnschedulable))
	t.Logf("GangScheduling: %s", gangCondition(isvc).Message)
	assert.Contains(t, gangCondition(isvc).Message, "mn-engine-0 (minMember 4)")
	for _, p := range servicePods(t, ns, "mn") {
		assert.Equal(t, "mn-engine-0", p.Labels[servinggroups.LabelCoschedulingPodGroup], "pod %s in the PodGroup", p.Name)
	}
	deadline := time.Now().Add(gangHold)
	for time.Now().Before(deadline) {
		n, pods := bound(t, ns, "mn")
		require.Zero(t, n, "a pod of the gang bound with only 3 nodes free")
		require.Equal(t, 4, pods)
		time.Sleep(500 * time.Millisecond)
	}
	for _, p := range servicePods(t, ns, "mn") {
		assert.Equal(t, corev1.PodPending, p.Status.Phase, "pod %s", p.Name)
	}

	start := time.Now()
	createGangNodes(t, 1, set)
	for {
		n, _ := bound(t, ns, "mn")
		if n == 4 {
			break
		}
		require.Less(t, time.Since(start), 60*time.Second, "only %d of 4 bound 60 s after the fourth node", n)
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("all 4 bound %s after the fourth node", time.Since(start).Round(100*time.Millisecond))

	t.Run("control: the default scheduler binds 3", func(t *testing.T) {
		set := rand.String(5)
		createGangNodes(t, 3, set)
		createService(t, multiNodeOnSet(t, ns, "ctl", set, ""))
		waitFor(t, ns, "3 of 4 pods bound under the default scheduler", func() bool {
			n, pods := bound(t, ns, "ctl")
			return n == 3 && pods == 4
		})
		assert.Nil(t, getPodGroup(t, gang.CoschedulingPodGroupGVR, ns, "ctl-engine-0"), "no PodGroup without gang scheduling")
		assert.Nil(t, gangCondition(getService(t, ns, "ctl")), "no GangScheduling condition")
	})
}

// gangHold is how long nothing of a gang that cannot fit may bind: longer
// than the coscheduling Permit wait, so members that fit were held and
// rejected at least once.
const gangHold = time.Duration(gang.PermitWaitingTimeSeconds+5) * time.Second
