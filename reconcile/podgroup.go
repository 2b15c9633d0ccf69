package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/reconcile/plan"
)

// pgObserved is a PodGroup as the informer has it, read into plan terms.
type pgObserved struct {
	name, uid string
	backend   *gangBackend
	obj       *unstructured.Unstructured
	want      pgWant // what it asks now (gang, queue)
}

// pgWrite is one create or update of a PodGroup.
type pgWrite struct {
	name string
	want pgWant
	obs  *pgObserved // nil: create
}

// getPodGroup reads PodGroup name of the service from the lister; nil
// when it does not exist or another owner has it.
func getPodGroup(lister cache.GenericLister, isvc *v1beta1.InferenceService, name string) (*pgObserved, error) {
	o, err := lister.ByNamespace(isvc.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pg, _ := observedPodGroup(o, isvc)
	return pg, nil
}

// observedPodGroup reads a PodGroup the service controls (false for one
// it does not: it is never touched).
func observedPodGroup(o runtime.Object, isvc *v1beta1.InferenceService) (*pgObserved, bool) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok || !metav1.IsControlledBy(u, isvc) {
		return nil, false
	}
	pg := &pgObserved{name: u.GetName(), uid: string(u.GetUID()), obj: u}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	pg.want.gang.MinMember = int32(asInt(spec["minMember"]))
	pg.want.queue, _ = spec["queue"].(string)
	if tm, ok := spec["minTaskMember"].(map[string]any); ok {
		pg.want.gang.MinTaskMember = map[string]int32{}
		for k, v := range tm {
			pg.want.gang.MinTaskMember[k] = int32(asInt(v))
		}
	}
	if mr, ok := spec["minResources"].(map[string]any); ok {
		pg.want.gang.MinResources = corev1.ResourceList{}
		for k, v := range mr {
			if s, ok := v.(string); ok {
				if q, err := resource.ParseQuantity(s); err == nil {
					pg.want.gang.MinResources[corev1.ResourceName(k)] = q
				}
			}
		}
	}
	sgs, _ := spec["subGroupPolicy"].([]any)
	for _, s := range sgs {
		m, _ := s.(map[string]any)
		name, _ := m["name"].(string)
		pg.want.gang.SubGroups = append(pg.want.gang.SubGroups, plan.SubGroup{Name: name,
			SubGroupSize: int32(asInt(m["subGroupSize"])), MinSubGroups: int32(asInt(m["minSubGroups"]))})
	}
	return pg, true
}

func asInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 0
}

// order places the writes of PodGroup name around the step: a new one is
// created before the pods; an existing one is lowered before and raised
// after (plan.GangWrites). The queue changes with the first write.
func (g *gangPlan) order(isvc *v1beta1.InferenceService, name string, want pgWant, subGroups bool, obs *pgObserved) {
	if !subGroups || !g.pd {
		want.gang.SubGroups = nil
	}
	if g.backend.scheduler != v1beta1.GangSchedulerVolcano {
		want.gang.MinTaskMember, want.gang.SubGroups = nil, nil
	}
	if obs == nil {
		g.before = append(g.before, pgWrite{name: name, want: want})
		return
	}
	before, after := plan.GangWrites(obs.want.gang, want.gang)
	if before == nil && after == nil && obs.want.queue != want.queue {
		before = &want.gang
	}
	if before != nil {
		g.before = append(g.before, pgWrite{name: name, want: pgWant{gang: *before, queue: want.queue}, obs: obs})
	}
	if after != nil {
		g.after = append(g.after, pgWrite{name: name, want: pgWant{gang: *after, queue: want.queue}, obs: obs})
	}
}

// writeGangs sends PodGroup writes: creates (AlreadyExists is success:
// the cache lagged) and updates of the fields berth owns.
func (c *Controller) writeGangs(ctx context.Context, isvc *v1beta1.InferenceService, g *gangPlan, writes []pgWrite) error {
	if g == nil || g.backend == nil {
		return nil
	}
	var errs []error
	res := c.gang.dyn.Resource(g.backend.gvr).Namespace(isvc.Namespace)
	for _, w := range writes {
		if w.obs == nil {
			obj := g.newPodGroup(isvc, w.name, w.want)
			c.m.write("create", "podgroups")
			_, err := res.Create(ctx, obj, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("create PodGroup %s/%s: %w", isvc.Namespace, w.name, err))
			}
			continue
		}
		obj := w.obs.obj.DeepCopy()
		g.setSpec(isvc, obj, w.want)
		c.m.write("update", "podgroups")
		upd, err := res.Update(ctx, obj, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			// The cache still had it (its CRD was deleted and installed
			// again, say): create it.
			c.m.write("create", "podgroups")
			upd, err = res.Create(ctx, g.newPodGroup(isvc, w.name, w.want), metav1.CreateOptions{})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("update PodGroup %s/%s: %w", isvc.Namespace, w.name, err))
			continue
		}
		w.obs.obj = upd // a later write of the same PodGroup (after the step) goes on top
	}
	return errors.Join(errs...)
}

// deleteGangs deletes the PodGroups no longer wanted (UID precondition).
func (c *Controller) deleteGangs(ctx context.Context, isvc *v1beta1.InferenceService, g *gangPlan) error {
	if g == nil {
		return nil
	}
	var errs []error
	for _, pg := range g.stale {
		uid := k8stypes.UID(pg.uid)
		c.m.write("delete", "podgroups")
		err := c.gang.dyn.Resource(pg.backend.gvr).Namespace(isvc.Namespace).Delete(ctx, pg.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete PodGroup %s/%s: %w", isvc.Namespace, pg.name, err))
		}
	}
	return errors.Join(errs...)
}

// newPodGroup builds PodGroup name: the service's label and controller
// owner reference, and the spec.
func (g *gangPlan) newPodGroup(isvc *v1beta1.InferenceService, name string, want pgWant) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(g.backend.apiVersion())
	u.SetKind(g.backend.kind)
	u.SetName(name)
	u.SetNamespace(isvc.Namespace)
	u.SetLabels(map[string]string{v1beta1.LabelInferenceService: isvc.Name})
	yes := true
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "InferenceService",
		Name: isvc.Name, UID: isvc.UID, Controller: &yes, BlockOwnerDeletion: &yes}})
	g.setSpec(isvc, u, want)
	return u
}

// setSpec writes the spec berth owns, with the subgroups' selectors.
func (g *gangPlan) setSpec(isvc *v1beta1.InferenceService, u *unstructured.Unstructured, want pgWant) {
	setGangSpec(u, want, g.backend.scheduler == v1beta1.GangSchedulerVolcano)
	if len(want.gang.SubGroups) > 0 {
		setSubGroupSelectors(u, isvc)
	}
}

// setGangSpec writes the fields berth owns into a PodGroup's spec; others
// (set by a person or the scheduler) are kept.
func setGangSpec(u *unstructured.Unstructured, want pgWant, volcano bool) {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	spec["minMember"] = int64(want.gang.MinMember)
	res := map[string]any{}
	for _, k := range slices.Sorted(mapKeys(resourceNames(want.gang.MinResources))) {
		q := want.gang.MinResources[corev1.ResourceName(k)]
		res[k] = q.String()
	}
	spec["minResources"] = res
	if volcano {
		spec["queue"] = want.queue
		tm := map[string]any{}
		for k, v := range want.gang.MinTaskMember {
			tm[k] = int64(v)
		}
		spec["minTaskMember"] = tm
		delete(spec, "subGroupPolicy")
		if len(want.gang.SubGroups) > 0 {
			var sgs []any
			for _, s := range want.gang.SubGroups {
				sgs = append(sgs, map[string]any{"name": s.Name, "subGroupSize": int64(s.SubGroupSize), "minSubGroups": int64(s.MinSubGroups)})
			}
			spec["subGroupPolicy"] = sgs
		}
	}
	_ = unstructured.SetNestedMap(u.Object, spec, "spec")
}

// setSubGroupSelectors: each role's subgroup selects the role's pods, one
// subgroup per serving group (matchLabelKeys on the group index).
func setSubGroupSelectors(u *unstructured.Unstructured, isvc *v1beta1.InferenceService) {
	sgs, _, _ := unstructured.NestedSlice(u.Object, "spec", "subGroupPolicy")
	for i, s := range sgs {
		m := s.(map[string]any)
		m["labelSelector"] = map[string]any{"matchLabels": map[string]any{
			v1beta1.LabelInferenceService: isvc.Name, v1beta1.LabelComponent: m["name"]}}
		m["matchLabelKeys"] = []any{v1beta1.LabelGroupIndex}
		sgs[i] = m
	}
	_ = unstructured.SetNestedSlice(u.Object, sgs, "spec", "subGroupPolicy")
}

func resourceNames(l corev1.ResourceList) map[string]bool {
	out := map[string]bool{}
	for k := range l {
		out[string(k)] = true
	}
	return out
}

// gangCondition is a GangScheduling condition at the service's generation.
func gangCondition(isvc *v1beta1.InferenceService, status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
	return &metav1.Condition{Type: ConditionGangScheduling, Status: status, Reason: reason, Message: msg, ObservedGeneration: isvc.Generation}
}

// condition reflects the PodGroups' state: Unschedulable with the
// scheduler's word (a Volcano PodGroup's Unschedulable condition, else
// the first unschedulable message of a gang pod), else PodGroupsSynced.
func (g *gangPlan) condition(isvc *v1beta1.InferenceService, want map[string]pgWant, ps []planned, lister cache.GenericLister) *metav1.Condition {
	kind := g.backend.kind + " (" + g.backend.gvr.Group + ")"
	for _, n := range slices.Sorted(mapKeys(want)) {
		obs, _ := getPodGroup(lister, isvc, n)
		if obs == nil {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(obs.obj.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Unschedulable" && m["status"] == "True" {
				return gangCondition(isvc, metav1.ConditionFalse, ReasonGangUnschedulable,
					fmt.Sprintf("PodGroup %s/%s (minMember %d): %v: %v", isvc.Namespace, n, want[n].gang.MinMember, m["reason"], m["message"]))
			}
		}
	}
	for _, p := range gangComponents(ps) {
		if s := p.step.Status; s.Unschedulable > 0 {
			return gangCondition(isvc, metav1.ConditionFalse, ReasonGangUnschedulable,
				fmt.Sprintf("%s%s: %s pods cannot be placed: %s", gangSummary(isvc, kind, want), phases(isvc, want, lister), p.topo.Component, s.UnschedulableMessage))
		}
	}
	return gangCondition(isvc, metav1.ConditionTrue, ReasonPodGroupsSynced, gangSummary(isvc, kind, want))
}

// setGangCondition puts the gang condition on a status, or removes a
// stale one when gang scheduling is off.
func setGangCondition(st *v1beta1.InferenceServiceStatus, g *gangPlan) {
	if g == nil || g.cond == nil {
		meta.RemoveStatusCondition(&st.Conditions, ConditionGangScheduling)
		return
	}
	meta.SetStatusCondition(&st.Conditions, *g.cond)
}

// phases is the PodGroups' status.phase as the scheduler wrote it, e.g.
// "; phase Pending".
func phases(isvc *v1beta1.InferenceService, want map[string]pgWant, lister cache.GenericLister) string {
	var out []string
	for _, n := range slices.Sorted(mapKeys(want)) {
		if obs, _ := getPodGroup(lister, isvc, n); obs != nil {
			if ph, _, _ := unstructured.NestedString(obs.obj.Object, "status", "phase"); ph != "" {
				out = append(out, n+" phase "+ph)
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, ", ")
}
