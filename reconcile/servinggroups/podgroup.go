package servinggroups

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	kptr "k8s.io/utils/ptr"
	cosched "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcano "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/reconcile/plan"
)

// pgObserved is a PodGroup as the informer has it, read through its
// backend's Go types (volcano.sh/apis, scheduler-plugins' apis) into plan
// terms.
type pgObserved struct {
	name, uid string
	backend   *gangBackend
	obj       *unstructured.Unstructured
	want      pgWant // what it asks now (gang, queue)
	phase     string // status.phase, as the scheduler wrote it
	// unschedulable is a Volcano PodGroup's first Unschedulable=True
	// condition (a Coscheduling PodGroup has none).
	unschedulable *volcano.PodGroupCondition
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
// it does not: it is never touched). Its API group says its backend; one
// that does not read as its backend's type asks for nothing (berth
// rewrites the fields it owns).
func observedPodGroup(o runtime.Object, isvc *v1beta1.InferenceService) (*pgObserved, bool) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok || !metav1.IsControlledBy(u, isvc) {
		return nil, false
	}
	pg := &pgObserved{name: u.GetName(), uid: string(u.GetUID()), obj: u}
	switch u.GroupVersionKind().GroupVersion() {
	case volcano.SchemeGroupVersion:
		pg.readVolcano(u)
	case cosched.SchemeGroupVersion:
		pg.readCoscheduling(u)
	}
	return pg, true
}

func (pg *pgObserved) readVolcano(u *unstructured.Unstructured) {
	var typed volcano.PodGroup
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &typed) != nil {
		return
	}
	s := typed.Spec
	pg.want.gang.MinMember, pg.want.queue = s.MinMember, s.Queue
	pg.want.gang.MinTaskMember = maps.Clone(s.MinTaskMember)
	if s.MinResources != nil {
		pg.want.gang.MinResources = s.MinResources.DeepCopy()
	}
	for _, sg := range s.SubGroupPolicy {
		pg.want.gang.SubGroups = append(pg.want.gang.SubGroups, plan.SubGroup{Name: sg.Name,
			SubGroupSize: kptr.Deref(sg.SubGroupSize, 0), MinSubGroups: kptr.Deref(sg.MinSubGroups, 0)})
	}
	pg.phase = string(typed.Status.Phase)
	for _, c := range typed.Status.Conditions {
		if c.Type == volcano.PodGroupUnschedulableType && c.Status == corev1.ConditionTrue {
			pg.unschedulable = &c
			break
		}
	}
}

func (pg *pgObserved) readCoscheduling(u *unstructured.Unstructured) {
	var typed cosched.PodGroup
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &typed) != nil {
		return
	}
	pg.want.gang.MinMember = typed.Spec.MinMember
	pg.want.gang.MinResources = typed.Spec.MinResources.DeepCopy()
	pg.phase = string(typed.Status.Phase)
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
			obj, err := g.podGroup(isvc, w.name, w.want, nil)
			if err == nil {
				c.m.write("create", "podgroups")
				_, err = res.Create(ctx, obj, metav1.CreateOptions{})
			}
			if err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("create PodGroup %s/%s: %w", isvc.Namespace, w.name, err))
			}
			continue
		}
		obj, err := g.podGroup(isvc, w.name, w.want, w.obs.obj)
		var upd *unstructured.Unstructured
		if err == nil {
			c.m.write("update", "podgroups")
			upd, err = res.Update(ctx, obj, metav1.UpdateOptions{})
		}
		if apierrors.IsNotFound(err) {
			// The cache still had it (its CRD was deleted and installed
			// again, say): create it.
			if obj, err = g.podGroup(isvc, w.name, w.want, nil); err == nil {
				c.m.write("create", "podgroups")
				upd, err = res.Create(ctx, obj, metav1.CreateOptions{})
			}
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

// podGroup is PodGroup name as berth writes it, built as its backend's Go
// type: base (nil for a new one: the service's label and controller owner
// reference) with the spec fields berth owns set; the others (set by a
// person or the scheduler) are kept.
func (g *gangPlan) podGroup(isvc *v1beta1.InferenceService, name string, want pgWant, base *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var typed runtime.Object
	switch g.backend.scheduler {
	case v1beta1.GangSchedulerVolcano:
		pg := &volcano.PodGroup{}
		if err := fromBase(base, pg); err != nil {
			return nil, err
		}
		setVolcanoSpec(&pg.Spec, isvc, want)
		typed = pg
	default:
		pg := &cosched.PodGroup{}
		if err := fromBase(base, pg); err != nil {
			return nil, err
		}
		pg.Spec.MinMember = want.gang.MinMember
		pg.Spec.MinResources = minResources(want.gang.MinResources)
		typed = pg
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(g.backend.apiVersion())
	u.SetKind(g.backend.kind)
	if base == nil {
		delete(u.Object, "status") // the scheduler's
		u.SetName(name)
		u.SetNamespace(isvc.Namespace)
		u.SetLabels(map[string]string{v1beta1.LabelInferenceService: isvc.Name})
		yes := true
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "InferenceService",
			Name: isvc.Name, UID: isvc.UID, Controller: &yes, BlockOwnerDeletion: &yes}})
	}
	return u, nil
}

// fromBase reads an existing PodGroup into its Go type (nothing for a new
// one).
func fromBase(base *unstructured.Unstructured, into any) error {
	if base == nil {
		return nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(base.Object, into); err != nil {
		return fmt.Errorf("read the PodGroup as %s: %w", base.GetAPIVersion(), err)
	}
	return nil
}

// setVolcanoSpec writes the fields berth owns into a Volcano PodGroup's
// spec: minMember, minResources, queue, minTaskMember, and subGroupPolicy
// (each role's subgroup selects the role's pods, one subgroup per serving
// group: matchLabelKeys on the group index).
func setVolcanoSpec(s *volcano.PodGroupSpec, isvc *v1beta1.InferenceService, want pgWant) {
	s.MinMember, s.Queue = want.gang.MinMember, want.queue
	res := minResources(want.gang.MinResources)
	s.MinResources = &res
	s.MinTaskMember = maps.Clone(want.gang.MinTaskMember)
	s.SubGroupPolicy = nil
	for _, sg := range want.gang.SubGroups {
		s.SubGroupPolicy = append(s.SubGroupPolicy, volcano.SubGroupPolicySpec{Name: sg.Name,
			SubGroupSize: kptr.To(sg.SubGroupSize), MinSubGroups: kptr.To(sg.MinSubGroups),
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				v1beta1.LabelInferenceService: isvc.Name, v1beta1.LabelComponent: sg.Name}},
			MatchLabelKeys: []string{v1beta1.LabelGroupIndex}})
	}
}

// minResources is the gang's minResources, never nil: the PodGroup always
// says it.
func minResources(l corev1.ResourceList) corev1.ResourceList {
	if l == nil {
		return corev1.ResourceList{}
	}
	return l.DeepCopy()
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
		if c := obs.unschedulable; c != nil {
			return gangCondition(isvc, metav1.ConditionFalse, ReasonGangUnschedulable,
				fmt.Sprintf("PodGroup %s/%s (minMember %d): %s: %s", isvc.Namespace, n, want[n].gang.MinMember, c.Reason, c.Message))
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
		if obs, _ := getPodGroup(lister, isvc, n); obs != nil && obs.phase != "" {
			out = append(out, n+" phase "+obs.phase)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, ", ")
}
