package gang

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

// PodGroup is a PodGroup the service controls, read through its
// backend's Go types (volcano.sh/apis, scheduler-plugins' apis) into plan
// terms.
type PodGroup struct {
	Name, UID string
	// Spec is what it asks now (gang, queue).
	Spec Spec
	// Phase is status.phase, as the scheduler wrote it.
	Phase string
	// Unschedulable is a Volcano PodGroup's first Unschedulable=True
	// condition (a Coscheduling PodGroup has none).
	Unschedulable *volcano.PodGroupCondition

	backend *backend
	obj     *unstructured.Unstructured
}

// write is one create or update of a PodGroup.
type write struct {
	name string
	want Spec
	obs  *PodGroup // nil: create
}

// getPodGroup reads PodGroup name of the service from the lister; nil
// when it does not exist or another owner has it.
func getPodGroup(lister cache.GenericLister, isvc *v1beta1.InferenceService, name string) (*PodGroup, error) {
	o, err := lister.ByNamespace(isvc.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pg, _ := Read(o, isvc)
	return pg, nil
}

// Read reads a PodGroup the service controls (false for one it does not:
// it is never touched). Its API group says its backend; one that does not
// read as its backend's type asks for nothing (berth rewrites the fields
// it owns).
func Read(o runtime.Object, isvc *v1beta1.InferenceService) (*PodGroup, bool) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok || !metav1.IsControlledBy(u, isvc) {
		return nil, false
	}
	pg := &PodGroup{Name: u.GetName(), UID: string(u.GetUID()), obj: u}
	switch u.GroupVersionKind().GroupVersion() {
	case volcano.SchemeGroupVersion:
		pg.readVolcano(u)
	case cosched.SchemeGroupVersion:
		pg.readCoscheduling(u)
	}
	return pg, true
}

func (pg *PodGroup) readVolcano(u *unstructured.Unstructured) {
	var typed volcano.PodGroup
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &typed) != nil {
		return
	}
	s := typed.Spec
	pg.Spec.Gang.MinMember, pg.Spec.Queue = s.MinMember, s.Queue
	pg.Spec.Gang.MinTaskMember = maps.Clone(s.MinTaskMember)
	if s.MinResources != nil {
		pg.Spec.Gang.MinResources = s.MinResources.DeepCopy()
	}
	for _, sg := range s.SubGroupPolicy {
		pg.Spec.Gang.SubGroups = append(pg.Spec.Gang.SubGroups, plan.SubGroup{Name: sg.Name,
			SubGroupSize: kptr.Deref(sg.SubGroupSize, 0), MinSubGroups: kptr.Deref(sg.MinSubGroups, 0)})
	}
	pg.Phase = string(typed.Status.Phase)
	for _, c := range typed.Status.Conditions {
		if c.Type == volcano.PodGroupUnschedulableType && c.Status == corev1.ConditionTrue {
			pg.Unschedulable = &c
			break
		}
	}
}

func (pg *PodGroup) readCoscheduling(u *unstructured.Unstructured) {
	var typed cosched.PodGroup
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &typed) != nil {
		return
	}
	pg.Spec.Gang.MinMember = typed.Spec.MinMember
	pg.Spec.Gang.MinResources = typed.Spec.MinResources.DeepCopy()
	pg.Phase = string(typed.Status.Phase)
}

// order places the writes of PodGroup name around the step: a new one is
// created before the pods; an existing one is lowered before and raised
// after (plan.GangWrites). The queue changes with the first write.
func (p *Plan) order(name string, want Spec, subGroups bool, obs *PodGroup) {
	if !subGroups || !p.pd {
		want.Gang.SubGroups = nil
	}
	if p.backend.scheduler != v1beta1.GangSchedulerVolcano {
		want.Gang.MinTaskMember, want.Gang.SubGroups = nil, nil
	}
	if obs == nil {
		p.before = append(p.before, write{name: name, want: want})
		return
	}
	before, after := plan.GangWrites(obs.Spec.Gang, want.Gang)
	if before == nil && after == nil && obs.Spec.Queue != want.Queue {
		before = &want.Gang
	}
	if before != nil {
		p.before = append(p.before, write{name: name, want: Spec{Gang: *before, Queue: want.Queue}, obs: obs})
	}
	if after != nil {
		p.after = append(p.after, write{name: name, want: Spec{Gang: *after, Queue: want.Queue}, obs: obs})
	}
}

// When is a side of the step's pod writes.
type When int

const (
	// BeforePods: new PodGroups and those that ask less, before the
	// step's pod deletes.
	BeforePods When = iota
	// AfterPods: PodGroups that ask more, after the step's pod creates.
	AfterPods
)

// Write sends the plan's PodGroup writes of one side of the step: creates
// (AlreadyExists is success: the cache lagged) and updates of the fields
// berth owns.
func (g *Gangs) Write(ctx context.Context, isvc *v1beta1.InferenceService, p *Plan, when When) error {
	if g == nil || p == nil || p.backend == nil {
		return nil
	}
	writes := p.before
	if when == AfterPods {
		writes = p.after
	}
	var errs []error
	for _, w := range writes {
		if err := g.write(ctx, isvc, p, w); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (g *Gangs) write(ctx context.Context, isvc *v1beta1.InferenceService, p *Plan, w write) error {
	res := g.dyn.Resource(p.backend.gvr).Namespace(isvc.Namespace)
	if w.obs == nil {
		obj, err := p.podGroup(isvc, w.name, w.want, nil)
		if err == nil {
			g.cfg.CountWrite("create", "podgroups")
			_, err = res.Create(ctx, obj, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create PodGroup %s/%s: %w", isvc.Namespace, w.name, err)
		}
		return nil
	}
	obj, err := p.podGroup(isvc, w.name, w.want, w.obs.obj)
	var upd *unstructured.Unstructured
	if err == nil {
		g.cfg.CountWrite("update", "podgroups")
		upd, err = res.Update(ctx, obj, metav1.UpdateOptions{})
	}
	if apierrors.IsNotFound(err) {
		// The cache still had it (its CRD was deleted and installed
		// again, say): create it.
		if obj, err = p.podGroup(isvc, w.name, w.want, nil); err == nil {
			g.cfg.CountWrite("create", "podgroups")
			upd, err = res.Create(ctx, obj, metav1.CreateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("update PodGroup %s/%s: %w", isvc.Namespace, w.name, err)
	}
	w.obs.obj = upd // a later write of the same PodGroup (after the step) goes on top
	return nil
}

// DeleteStale deletes the PodGroups no longer wanted (UID precondition).
func (g *Gangs) DeleteStale(ctx context.Context, isvc *v1beta1.InferenceService, p *Plan) error {
	if g == nil || p == nil {
		return nil
	}
	var errs []error
	for _, pg := range p.stale {
		uid := k8stypes.UID(pg.UID)
		g.cfg.CountWrite("delete", "podgroups")
		err := g.dyn.Resource(pg.backend.gvr).Namespace(isvc.Namespace).Delete(ctx, pg.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete PodGroup %s/%s: %w", isvc.Namespace, pg.Name, err))
		}
	}
	return errors.Join(errs...)
}

// podGroup is PodGroup name as berth writes it, built as its backend's Go
// type: base (nil for a new one: the service's label and controller owner
// reference) with the spec fields berth owns set; the others (set by a
// person or the scheduler) are kept.
func (p *Plan) podGroup(isvc *v1beta1.InferenceService, name string, want Spec, base *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var typed runtime.Object
	switch p.backend.scheduler {
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
		pg.Spec.MinMember = want.Gang.MinMember
		pg.Spec.MinResources = minResources(want.Gang.MinResources)
		typed = pg
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(p.backend.apiVersion())
	u.SetKind(p.backend.kind)
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
func setVolcanoSpec(s *volcano.PodGroupSpec, isvc *v1beta1.InferenceService, want Spec) {
	s.MinMember, s.Queue = want.Gang.MinMember, want.Queue
	res := minResources(want.Gang.MinResources)
	s.MinResources = &res
	s.MinTaskMember = maps.Clone(want.Gang.MinTaskMember)
	s.SubGroupPolicy = nil
	for _, sg := range want.Gang.SubGroups {
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

// condition is a GangScheduling condition at the service's generation.
func condition(isvc *v1beta1.InferenceService, status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
	return &metav1.Condition{Type: ConditionGangScheduling, Status: status, Reason: reason, Message: msg, ObservedGeneration: isvc.Generation}
}

// condition reflects the PodGroups' state: Unschedulable with the
// scheduler's word (a Volcano PodGroup's Unschedulable condition, else
// the first unschedulable message of a gang pod), else PodGroupsSynced.
func (p *Plan) condition(isvc *v1beta1.InferenceService, want map[string]Spec, ms []Member, lister cache.GenericLister) *metav1.Condition {
	kind := p.backend.kind + " (" + p.backend.gvr.Group + ")"
	for _, n := range slices.Sorted(maps.Keys(want)) {
		obs, _ := getPodGroup(lister, isvc, n)
		if obs == nil {
			continue
		}
		if c := obs.Unschedulable; c != nil {
			return condition(isvc, metav1.ConditionFalse, ReasonGangUnschedulable,
				fmt.Sprintf("PodGroup %s/%s (minMember %d): %s: %s", isvc.Namespace, n, want[n].Gang.MinMember, c.Reason, c.Message))
		}
	}
	for _, m := range members(ms) {
		if s := m.Step.Status; s.Unschedulable > 0 {
			return condition(isvc, metav1.ConditionFalse, ReasonGangUnschedulable,
				fmt.Sprintf("%s%s: %s pods cannot be placed: %s", summary(isvc, kind, want), phases(isvc, want, lister), m.Topology.Component, s.UnschedulableMessage))
		}
	}
	return condition(isvc, metav1.ConditionTrue, ReasonPodGroupsSynced, summary(isvc, kind, want))
}

// SetCondition puts the plan's GangScheduling condition on a status, or
// removes a stale one when gang scheduling is off.
func SetCondition(st *v1beta1.InferenceServiceStatus, p *Plan) {
	if c := p.Condition(); c != nil {
		meta.SetStatusCondition(&st.Conditions, *c)
		return
	}
	meta.RemoveStatusCondition(&st.Conditions, ConditionGangScheduling)
}

// phases is the PodGroups' status.phase as the scheduler wrote it, e.g.
// "; phase Pending".
func phases(isvc *v1beta1.InferenceService, want map[string]Spec, lister cache.GenericLister) string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		if obs, _ := getPodGroup(lister, isvc, n); obs != nil && obs.Phase != "" {
			out = append(out, n+" phase "+obs.Phase)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, ", ")
}
