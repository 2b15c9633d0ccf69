package gang

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// Member is one component's step as the serving groups controller
// planned it.
type Member struct {
	Topology merge.ComponentTopology
	Step     plan.Step
	// Observed are the component's pods as the planner saw them.
	Observed []plan.Pod
}

// Input is what Plan reads of one sync.
type Input struct {
	Service *v1beta1.InferenceService
	// Components is every component's step; the gang covers the engine
	// and a decoder, never the router.
	Components []Member
	// Pods are the service's pods, as observed.
	Pods []*corev1.Pod
	// Compose composes a component's pod of identity id as the pod
	// webhook will (the controller's pinned decision). Its error is
	// returned by Plan as it is.
	Compose func(t merge.ComponentTopology, id merge.GroupIdentity) (*corev1.Pod, error)
}

// Plan is what gang scheduling adds to one sync: the marks on the pods
// the step creates, the PodGroup writes before and after the step, the
// PodGroups to delete, and the condition. A nil *Plan is gang scheduling
// off.
type Plan struct {
	backend   *backend // nil: gang scheduling is off (or cannot be)
	pd        bool
	scheduler string // schedulerName for skeletons ("" keeps the composed one)
	before    []write
	after     []write
	stale     []*PodGroup
	cond      *metav1.Condition // nil: the service has no GangScheduling condition
}

// pgName is the PodGroup of a pod: <isvc> for a prefill/decode service,
// else the engine group's <isvc>-engine-<g> (merge.PodGroupName).
func (p *Plan) pgName(isvc *v1beta1.InferenceService, component string, group int32) string {
	return merge.PodGroupName(isvc.Name, component, int(group), p.pd)
}

// MarkFor is the mark that puts a pod of component's group in its
// PodGroup (merge.MarkPod writes it), or nil: no gang, or not a member.
func (p *Plan) MarkFor(isvc *v1beta1.InferenceService, component string, group int32) *merge.GangMark {
	if p == nil || p.backend == nil {
		return nil
	}
	return merge.NewGangMark(p.backend.scheduler, p.scheduler, isvc.Name, component, int(group), p.pd)
}

// Condition is the service's GangScheduling condition; nil when it has
// none (gang scheduling off).
func (p *Plan) Condition() *metav1.Condition {
	if p == nil {
		return nil
	}
	return p.cond
}

// marked reports whether a pod carries the mark of PodGroup name.
func (p *Plan) marked(pod *corev1.Pod, name string) bool {
	if p.backend.scheduler == v1beta1.GangSchedulerVolcano {
		return pod.Annotations[AnnotationVolcanoGroupName] == name
	}
	return pod.Labels[LabelCoschedulingPodGroup] == name
}

// members are the components a gang covers: the engine, and the decoder
// of a prefill/decode service. The router is never ganged.
func members(ms []Member) []Member {
	return slices.DeleteFunc(slices.Clone(ms), func(m Member) bool {
		return m.Topology.Component != v1beta1.ComponentEngine && m.Topology.Component != v1beta1.ComponentDecoder
	})
}

// Plan decides gang scheduling for one sync: the backend from gangPolicy
// and the composed pods' schedulerName (plan.ChooseGang), then the
// PodGroups the step leaves. nil when g is (gang scheduling off).
func (g *Gangs) Plan(ctx context.Context, in Input) (*Plan, error) {
	if g == nil {
		return nil, nil
	}
	isvc := in.Service
	ms := members(in.Components)
	p := &Plan{pd: len(ms) > 1}
	roles, schedulers, err := composedRoles(isvc, ms, in.Compose)
	if err != nil {
		return nil, err
	}
	choice := plan.ChooseGang(isvc.Spec.GangPolicy, schedulers, g.cfg.CoschedulingScheduler)
	switch {
	case choice.Problem != "":
		p.cond = condition(isvc, metav1.ConditionFalse, ReasonSchedulerMismatch, choice.Problem)
		return p, g.staleGangs(isvc, p, nil)
	case choice.Backend == "":
		return p, g.staleGangs(isvc, p, nil)
	}
	b := find(g.backends, choice.Backend)
	installed, subGroups, lister, synced := b.state()
	if !installed {
		p.cond = condition(isvc, metav1.ConditionFalse, ReasonPodGroupCRDMissing, fmt.Sprintf(
			"gang scheduling with %s is on (%s) but the CustomResourceDefinition %s is not installed: no PodGroup is created and the pods are not grouped; install %s",
			choice.Backend, gangWhy(isvc), b.crd, b.crd))
		return p, g.staleGangs(isvc, p, nil)
	}
	if !synced() && !waitSynced(ctx, synced) {
		return nil, fmt.Errorf("the informer on %s did not sync", b.gvr.String())
	}
	p.backend, p.scheduler = b, choice.SchedulerName
	want := p.desired(isvc, roles, in.Components, in.Pods)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		obs, err := getPodGroup(lister, isvc, name)
		if err != nil {
			return nil, err
		}
		p.order(name, want[name], subGroups, obs)
	}
	p.cond = p.condition(isvc, want, in.Components, lister)
	return p, g.staleGangs(isvc, p, want)
}

func gangWhy(isvc *v1beta1.InferenceService) string {
	if isvc.Spec.GangPolicy != nil {
		return "spec.gangPolicy"
	}
	return "the pods' schedulerName"
}

// waitSynced waits a little for a PodGroup informer just started (its
// CRD appeared).
func waitSynced(ctx context.Context, synced cache.InformerSynced) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return cache.WaitForCacheSync(ctx.Done(), synced)
}

// composedRoles composes each gang component's leader (or only pod) and
// worker as the pod webhook will: their requests for minResources, and
// the leader's schedulerName.
func composedRoles(isvc *v1beta1.InferenceService, ms []Member,
	compose func(merge.ComponentTopology, merge.GroupIdentity) (*corev1.Pod, error)) (map[string]plan.GangRole, map[string]string, error) {
	roles, schedulers := map[string]plan.GangRole{}, map[string]string{}
	for _, m := range ms {
		t := m.Topology
		var min int32
		if gp := isvc.Spec.GangPolicy; gp != nil {
			min = plan.MinRoleReplicas(gp.MinRoleReplicas, t.Component)
		}
		r := plan.GangRole{Name: t.Component, Replicas: t.Replicas, Workers: t.Workers, MinReplicas: min}
		for i, id := range merge.CanonicalRoles(isvc, t) {
			pod, err := compose(t, id)
			if err != nil {
				return nil, nil, err
			}
			if i == 0 {
				r.LeaderRequests, schedulers[t.Component] = plan.Requests(&pod.Spec), pod.Spec.SchedulerName
			} else {
				r.WorkerRequests = plan.Requests(&pod.Spec)
			}
		}
		roles[t.Component] = r
	}
	return roles, schedulers, nil
}

// Spec is what a PodGroup asks: the gang (minMember, minTaskMember,
// minResources, subGroupPolicy) and Volcano's queue.
type Spec struct {
	Gang  plan.Gang
	Queue string // Volcano only
}

// desired is every PodGroup the step leaves, by name, from the marked
// pods that will exist after it (plan.GangFor): one <isvc> for a
// prefill/decode service, else one per engine group that has a pod.
func (p *Plan) desired(isvc *v1beta1.InferenceService, roles map[string]plan.GangRole, ms []Member, pods []*corev1.Pod) map[string]Spec {
	queue := ""
	if p.backend.scheduler == v1beta1.GangSchedulerVolcano {
		queue = isvc.Annotations[AnnotationVolcanoQueueName]
		if queue == "" {
			queue = "default"
		}
	}
	out := map[string]Spec{}
	if p.pd {
		live := map[string]plan.GangLive{}
		var rs []plan.GangRole
		for _, m := range members(ms) {
			live[m.Topology.Component] = plan.GangLiveAfter(p.markedPods(m, pods, isvc.Name), m.Step)
			rs = append(rs, roles[m.Topology.Component])
		}
		out[isvc.Name] = Spec{Gang: plan.GangFor(rs, live), Queue: queue}
		return out
	}
	engine := members(ms)[0]
	role := roles[v1beta1.ComponentEngine]
	role.Replicas, role.MinReplicas = 1, 0 // one group per PodGroup
	all := plan.GangLiveAfter(engine.Observed, engine.Step)
	for grp := range groupsOf(all, engine.Observed) {
		name := p.pgName(isvc, v1beta1.ComponentEngine, grp)
		l := plan.GangLiveAfter(p.markedPods(engine, pods, name), engine.Step)
		one := map[string]plan.GangLive{role.Name: {Leaders: map[int32]int32{0: l.Leaders[grp]}, Workers: map[int32]int32{0: l.Workers[grp]}}}
		gang := plan.GangFor([]plan.GangRole{role}, one)
		gang.MinTaskMember, gang.SubGroups = nil, nil // one group: minMember says it all
		out[name] = Spec{Gang: gang, Queue: queue}
	}
	return out
}

// groupsOf is every engine group with a pod now or after the step.
func groupsOf(after plan.GangLive, observed []plan.Pod) map[int32]bool {
	out := map[int32]bool{}
	for grp, n := range after.Leaders {
		out[grp] = out[grp] || n > 0
	}
	for grp, n := range after.Workers {
		out[grp] = out[grp] || n > 0
	}
	for _, p := range observed {
		if p.Group >= 0 {
			out[p.Group] = true
		}
	}
	for grp, ok := range out {
		if !ok {
			delete(out, grp)
		}
	}
	return out
}

// markedPods are the member's observed pods that are in PodGroup name:
// pods made before gang scheduling was on are not, and a PodGroup never
// counts them.
func (p *Plan) markedPods(m Member, pods []*corev1.Pod, name string) []plan.Pod {
	in := map[string]bool{}
	for _, pod := range pods {
		if componentOf(pod) == m.Topology.Component && p.marked(pod, name) {
			in[string(pod.UID)] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(m.Observed), func(o plan.Pod) bool { return !in[o.UID] })
}

// componentOf is a pod's component label; engine when it has none (as
// the controller reads it).
func componentOf(p *corev1.Pod) string {
	if c := p.Labels[v1beta1.LabelComponent]; c != "" {
		return c
	}
	return v1beta1.ComponentEngine
}

// staleGangs lists the service's PodGroups, of either backend, that are
// not wanted: all of them when gang scheduling is off.
func (g *Gangs) staleGangs(isvc *v1beta1.InferenceService, p *Plan, want map[string]Spec) error {
	var errs []error
	for _, b := range g.backends {
		_, _, lister, synced := b.state()
		if lister == nil || !synced() {
			continue
		}
		objs, err := lister.ByNamespace(isvc.Namespace).List(labels.SelectorFromSet(labels.Set{v1beta1.LabelInferenceService: isvc.Name}))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, o := range objs {
			pg, ok := Read(o, isvc)
			if !ok {
				continue
			}
			if _, keep := want[pg.Name]; !keep || b != p.backend {
				pg.backend = b
				p.stale = append(p.stale, pg)
			}
		}
	}
	return errors.Join(errs...)
}

// summary names the PodGroups for the condition's message.
func summary(isvc *v1beta1.InferenceService, kind string, want map[string]Spec) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		parts = append(parts, fmt.Sprintf("%s/%s (minMember %d)", isvc.Namespace, n, want[n].Gang.MinMember))
	}
	return kind + " " + strings.Join(parts, ", ")
}
