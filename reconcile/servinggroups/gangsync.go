package servinggroups

import (
	"context"
	"errors"
	"fmt"
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

// planned is one component's step before it is applied.
type planned struct {
	topo     merge.ComponentTopology
	revision string
	step     plan.Step
	observed []plan.Pod
}

// gangPlan is what gang scheduling adds to one sync: the marks on the
// pods the step creates, the PodGroup writes before and after the step,
// the PodGroups to delete, and the condition.
type gangPlan struct {
	backend   *gangBackend // nil: gang scheduling is off (or cannot be)
	pd        bool
	scheduler string // schedulerName for skeletons ("" keeps the composed one)
	before    []pgWrite
	after     []pgWrite
	stale     []*pgObserved
	cond      *metav1.Condition // nil: the service has no GangScheduling condition
}

// pgName is the PodGroup of a pod: <isvc> for a prefill/decode service,
// else the engine group's <isvc>-engine-<g> (merge.PodGroupName).
func (g *gangPlan) pgName(isvc *v1beta1.InferenceService, component string, group int32) string {
	return merge.PodGroupName(isvc.Name, component, int(group), g.pd)
}

// markFor is the mark that puts a pod of component's group in its
// PodGroup (merge.MarkPod writes it), or nil: no gang, or not a member.
func (g *gangPlan) markFor(isvc *v1beta1.InferenceService, component string, group int32) *merge.GangMark {
	if g == nil || g.backend == nil {
		return nil
	}
	return merge.NewGangMark(g.backend.scheduler, g.scheduler, isvc.Name, component, int(group), g.pd)
}

// marked reports whether a pod carries the mark of PodGroup name.
func (g *gangPlan) marked(p *corev1.Pod, name string) bool {
	if g.backend.scheduler == v1beta1.GangSchedulerVolcano {
		return p.Annotations[AnnotationVolcanoGroupName] == name
	}
	return p.Labels[LabelCoschedulingPodGroup] == name
}

// gangComponents are the components a gang covers: the engine, and the
// decoder of a prefill/decode service. The router is never ganged.
func gangComponents(ps []planned) []planned {
	return slices.DeleteFunc(slices.Clone(ps), func(p planned) bool {
		return p.topo.Component != v1beta1.ComponentEngine && p.topo.Component != v1beta1.ComponentDecoder
	})
}

// planGang decides gang scheduling for one sync: the backend from
// gangPolicy and the composed pods' schedulerName (plan.ChooseGang), then
// the PodGroups the step leaves.
func (c *Controller) planGang(ctx context.Context, isvc *v1beta1.InferenceService, dec *decision, ps []planned, pods []*corev1.Pod) (*gangPlan, error) {
	if c.gang == nil {
		return nil, nil
	}
	members := gangComponents(ps)
	g := &gangPlan{pd: len(members) > 1}
	roles, schedulers, err := composedRoles(isvc, dec, members)
	if err != nil {
		return nil, err
	}
	choice := plan.ChooseGang(isvc.Spec.GangPolicy, schedulers, c.opts.CoschedulingScheduler)
	switch {
	case choice.Problem != "":
		g.cond = gangCondition(isvc, metav1.ConditionFalse, ReasonSchedulerMismatch, choice.Problem)
		return g, c.staleGangs(isvc, g, nil)
	case choice.Backend == "":
		return g, c.staleGangs(isvc, g, nil)
	}
	b := c.gang.backend(choice.Backend)
	installed, subGroups, lister, synced := b.state()
	if !installed {
		g.cond = gangCondition(isvc, metav1.ConditionFalse, ReasonPodGroupCRDMissing, fmt.Sprintf(
			"gang scheduling with %s is on (%s) but the CustomResourceDefinition %s is not installed: no PodGroup is created and the pods are not grouped; install %s",
			choice.Backend, gangWhy(isvc, choice), b.crd, b.crd))
		return g, c.staleGangs(isvc, g, nil)
	}
	if !synced() && !waitSynced(ctx, synced) {
		return nil, fmt.Errorf("the informer on %s did not sync", b.gvr.String())
	}
	g.backend, g.scheduler = b, choice.SchedulerName
	want := g.desired(isvc, roles, ps, pods)
	for _, name := range slices.Sorted(mapKeys(want)) {
		obs, err := getPodGroup(lister, isvc, name)
		if err != nil {
			return nil, err
		}
		g.order(isvc, name, want[name], subGroups, obs)
	}
	g.cond = g.condition(isvc, want, ps, lister)
	return g, c.staleGangs(isvc, g, want)
}

func gangWhy(isvc *v1beta1.InferenceService, choice plan.GangChoice) string {
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

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// composedRoles composes each gang component's leader (or only pod) and
// worker as the pod webhook will: their requests for minResources, and
// the leader's schedulerName.
func composedRoles(isvc *v1beta1.InferenceService, dec *decision, members []planned) (map[string]plan.GangRole, map[string]string, error) {
	roles, schedulers := map[string]plan.GangRole{}, map[string]string{}
	for _, m := range members {
		t := m.topo
		var min int32
		if gp := isvc.Spec.GangPolicy; gp != nil {
			min = plan.MinRoleReplicas(gp.MinRoleReplicas, t.Component)
		}
		r := plan.GangRole{Name: t.Component, Replicas: t.Replicas, Workers: t.Workers, MinReplicas: min}
		ids := merge.CanonicalRoles(isvc, t)
		for i, id := range ids {
			in := dec.input(isvc, t.Component)
			in.Group = id
			pod := merge.SkeletonPod(isvc, t.Component, id)
			if err := merge.ComposePod(in, pod); err != nil {
				return nil, nil, &composeError{component: t.Component, err: err}
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

// pgWant is one PodGroup's desired spec.
type pgWant struct {
	gang  plan.Gang
	queue string // Volcano only
}

// desired is every PodGroup the step leaves, by name, from the marked
// pods that will exist after it (plan.GangFor): one <isvc> for a
// prefill/decode service, else one per engine group that has a pod.
func (g *gangPlan) desired(isvc *v1beta1.InferenceService, roles map[string]plan.GangRole, ps []planned, pods []*corev1.Pod) map[string]pgWant {
	queue := ""
	if g.backend.scheduler == v1beta1.GangSchedulerVolcano {
		queue = isvc.Annotations[AnnotationVolcanoQueueName]
		if queue == "" {
			queue = "default"
		}
	}
	out := map[string]pgWant{}
	if g.pd {
		live := map[string]plan.GangLive{}
		var rs []plan.GangRole
		for _, p := range gangComponents(ps) {
			live[p.topo.Component] = plan.GangLiveAfter(g.markedPods(isvc, p, pods, isvc.Name), p.step)
			rs = append(rs, roles[p.topo.Component])
		}
		out[isvc.Name] = pgWant{gang: plan.GangFor(rs, live), queue: queue}
		return out
	}
	engine := gangComponents(ps)[0]
	role := roles[v1beta1.ComponentEngine]
	role.Replicas, role.MinReplicas = 1, 0 // one group per PodGroup
	all := plan.GangLiveAfter(engine.observed, engine.step)
	for grp := range groupsOf(all, engine.observed) {
		name := g.pgName(isvc, v1beta1.ComponentEngine, grp)
		l := plan.GangLiveAfter(g.markedPods(isvc, engine, pods, name), engine.step)
		one := map[string]plan.GangLive{role.Name: {Leaders: map[int32]int32{0: l.Leaders[grp]}, Workers: map[int32]int32{0: l.Workers[grp]}}}
		gang := plan.GangFor([]plan.GangRole{role}, one)
		gang.MinTaskMember, gang.SubGroups = nil, nil // one group: minMember says it all
		out[name] = pgWant{gang: gang, queue: queue}
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

// markedPods are the component's observed pods that are in PodGroup name:
// pods made before gang scheduling was on are not, and a PodGroup never
// counts them.
func (g *gangPlan) markedPods(isvc *v1beta1.InferenceService, p planned, pods []*corev1.Pod, name string) []plan.Pod {
	in := map[string]bool{}
	for _, pod := range pods {
		if componentOf(pod) == p.topo.Component && g.marked(pod, name) {
			in[string(pod.UID)] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(p.observed), func(o plan.Pod) bool { return !in[o.UID] })
}

// staleGangs lists the service's PodGroups, of either backend, that are
// not wanted: all of them when gang scheduling is off.
func (c *Controller) staleGangs(isvc *v1beta1.InferenceService, g *gangPlan, want map[string]pgWant) error {
	var errs []error
	for _, b := range c.gang.backends {
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
			pg, ok := observedPodGroup(o, isvc)
			if !ok {
				continue
			}
			if _, keep := want[pg.name]; !keep || b != g.backend {
				pg.backend = b
				g.stale = append(g.stale, pg)
			}
		}
	}
	return errors.Join(errs...)
}

// gangSummary names the PodGroups for the condition's message.
func gangSummary(isvc *v1beta1.InferenceService, kind string, want map[string]pgWant) string {
	var parts []string
	for _, n := range slices.Sorted(mapKeys(want)) {
		parts = append(parts, fmt.Sprintf("%s/%s (minMember %d)", isvc.Namespace, n, want[n].gang.MinMember))
	}
	return kind + " " + strings.Join(parts, ", ")
}
