package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// GangRole is one role of a gang (see doc.go, "Gang scheduling"): the
// engine or the decoder of a prefill/decode service, or, for a service
// without a decoder, one engine serving group.
type GangRole struct {
	// Name is the role's component (engine, decoder): minTaskMember keys
	// and subgroups are named <Name>-<group>.
	Name string
	// Replicas is the role's desired serving groups; MinReplicas its
	// gangPolicy.minRoleReplicas (0: all of them).
	Replicas, MinReplicas int32
	// Workers is the number of worker pods per group: a group is 1+Workers
	// pods.
	Workers int32
	// LeaderRequests and WorkerRequests are the composed pods' requests
	// (summed over containers): the leader's, or the single pod's, and a
	// worker's.
	LeaderRequests, WorkerRequests corev1.ResourceList
}

// Groups is how many of the role's groups the gang needs: Kthena's
// min(minRoleReplicas, replicas), all replicas when MinReplicas is 0.
func (r GangRole) Groups() int32 {
	if r.MinReplicas > 0 {
		return min(r.MinReplicas, r.Replicas)
	}
	return r.Replicas
}

// Size is the pods of one group of the role.
func (r GangRole) Size() int32 { return 1 + r.Workers }

// GangLive is what exists of one role after a step: the live pods
// (not terminating, not terminal) by group ordinal, counting the pods the
// step creates and not the ones it deletes.
type GangLive struct {
	// Leaders and Workers count by group: leaders (or single pods) and
	// worker pods.
	Leaders, Workers map[int32]int32
}

// Pods is the live pods of the role.
func (l GangLive) Pods() int32 {
	var n int32
	for _, v := range l.Leaders {
		n += v
	}
	for _, v := range l.Workers {
		n += v
	}
	return n
}

// SubGroup is one entry of a Volcano PodGroup's subGroupPolicy: the
// groups of one role, each its own subgroup of SubGroupSize pods, of which
// MinSubGroups must be placeable.
type SubGroup struct {
	Name                       string
	SubGroupSize, MinSubGroups int32
}

// Gang is a PodGroup's desired spec, whichever the backend.
type Gang struct {
	MinMember int32
	// MinTaskMember is Volcano's per task count, keyed <role>-<group>
	// (Kthena's ModelServing): the first Groups() groups of each role, each its size.
	MinTaskMember map[string]int32
	MinResources  corev1.ResourceList
	SubGroups     []SubGroup
}

// GangFormula is Kthena ModelServing's PodGroup for the roles, as if every pod
// existed: minMember = Σ_roles Groups() × (1 + workers); minTaskMember
// <role>-<i> = 1 + workers for i < Groups(); minResources the requests of
// those pods; one subgroup per role.
func GangFormula(roles []GangRole) Gang {
	return GangFor(roles, nil)
}

// GangFor is the PodGroup for the roles given what will exist after the
// step (live, by role name; nil: as if every pod existed). Each count is
// the formula's, lowered to what exists, so a step never leaves a
// PodGroup its existing pods cannot satisfy: per role, min(needed leaders,
// live leaders) + min(needed workers, live workers); per task and
// subgroup likewise. While no pod of the gang is live, nothing can be
// held back by it, and the formula stands.
func GangFor(roles []GangRole, live map[string]GangLive) Gang {
	if total(live) == 0 {
		live = nil
	}
	g := Gang{MinTaskMember: map[string]int32{}, MinResources: corev1.ResourceList{}}
	for _, r := range roles {
		need := r.Groups()
		leaders, workers := need, need*r.Workers
		if live != nil {
			l := live[r.Name]
			leaders, workers = min(leaders, sum(l.Leaders)), min(workers, sum(l.Workers))
		}
		g.MinMember += leaders + workers
		addScaled(g.MinResources, r.LeaderRequests, leaders)
		addScaled(g.MinResources, r.WorkerRequests, workers)
		complete := int32(0)
		for i := range need {
			n := r.Size()
			if live != nil {
				n = min(n, live[r.Name].Leaders[i]+live[r.Name].Workers[i])
			}
			if n > 0 {
				g.MinTaskMember[TaskName(r.Name, i)] = n
			}
			if n == r.Size() {
				complete++
			}
		}
		g.SubGroups = append(g.SubGroups, SubGroup{Name: r.Name, SubGroupSize: r.Size(), MinSubGroups: complete})
	}
	return g
}

// TaskName is a group's Volcano task name (volcano.sh/task-spec), seed
// 003's role-id: <role>-<group>.
func TaskName(role string, group int32) string { return fmt.Sprintf("%s-%d", role, group) }

func total(live map[string]GangLive) int32 {
	var n int32
	for _, l := range live {
		n += l.Pods()
	}
	return n
}

func sum(m map[int32]int32) int32 {
	var n int32
	for _, v := range m {
		n += v
	}
	return n
}

func addScaled(dst, req corev1.ResourceList, n int32) {
	if n == 0 {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(req)) {
		q := req[name].DeepCopy()
		q.Mul(int64(n))
		if have, ok := dst[name]; ok {
			q.Add(have)
		}
		dst[name] = q
	}
}

// GangLiveAfter counts what exists of one component after step: its
// observed live pods (not terminating, not Failed or Succeeded) minus the
// step's deletes, plus its creates.
func GangLiveAfter(pods []Pod, step Step) GangLive {
	l := GangLive{Leaders: map[int32]int32{}, Workers: map[int32]int32{}}
	deleted := map[string]bool{}
	for _, d := range step.Delete {
		deleted[d.UID] = true
	}
	count := func(group int32, role string) {
		if role == RoleWorker {
			l.Workers[group]++
		} else {
			l.Leaders[group]++
		}
	}
	for _, p := range pods {
		if p.Terminating || p.Foreign || deleted[p.UID] || p.Group < 0 || p.Phase == corev1.PodFailed || p.Phase == corev1.PodSucceeded {
			continue
		}
		count(p.Group, p.Role)
	}
	for _, c := range step.Create {
		count(c.Group, c.Role)
	}
	return l
}

// Requests sums the requests of a pod's containers: what a PodGroup's
// minResources counts for it (init containers and overhead are not, as
// Kthena's).
func Requests(spec *corev1.PodSpec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := q.DeepCopy()
			if have, ok := out[name]; ok {
				sum.Add(have)
			}
			out[name] = sum
		}
	}
	return out
}

// GangWrites orders a PodGroup's update around a step's pod writes:
// before the step, the parts that ask less (lower before deleting); after
// it, the parts that ask more (raise after creating). before is the
// element-wise minimum of cur and want; either is nil when there is
// nothing to write then. So no PodGroup ever asks for more pods than
// exist.
func GangWrites(cur, want Gang) (before, after *Gang) {
	m := meet(cur, want)
	if !m.Equal(cur) {
		before = &m
	}
	if !want.Equal(m) {
		after = &want
	}
	return before, after
}

// meet is the element-wise minimum of two gangs.
func meet(a, b Gang) Gang {
	m := Gang{MinMember: min(a.MinMember, b.MinMember), MinTaskMember: map[string]int32{}, MinResources: corev1.ResourceList{}}
	for k, v := range a.MinTaskMember {
		if w := min(v, b.MinTaskMember[k]); w > 0 {
			m.MinTaskMember[k] = w
		}
	}
	for k, v := range a.MinResources {
		if w, ok := b.MinResources[k]; ok {
			if w.Cmp(v) < 0 {
				v = w
			}
			m.MinResources[k] = v.DeepCopy()
		}
	}
	for _, s := range b.SubGroups {
		i := slices.IndexFunc(a.SubGroups, func(o SubGroup) bool { return o.Name == s.Name })
		if i >= 0 {
			s.MinSubGroups = min(s.MinSubGroups, a.SubGroups[i].MinSubGroups)
			m.SubGroups = append(m.SubGroups, s)
		}
	}
	return m
}

// quantityEqual compares resource lists by value.
func quantityEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether two gangs ask the same; the caller writes a
// PodGroup only when they differ.
func (g Gang) Equal(o Gang) bool {
	if g.MinMember != o.MinMember || !quantityEqual(g.MinResources, o.MinResources) || len(g.MinTaskMember) != len(o.MinTaskMember) {
		return false
	}
	for k, v := range g.MinTaskMember {
		if o.MinTaskMember[k] != v {
			return false
		}
	}
	return slices.Equal(g.SubGroups, o.SubGroups)
}

// MinRoleReplicas is gangPolicy.minRoleReplicas for a role, by its
// component name or Kthena's alias (prefill for engine, decode for
// decoder); 0 when neither is set.
func MinRoleReplicas(m map[string]int32, component string) int32 {
	if v, ok := m[component]; ok {
		return v
	}
	for alias, c := range map[string]string{v1beta1.GangRolePrefill: v1beta1.ComponentEngine, v1beta1.GangRoleDecode: v1beta1.ComponentDecoder} {
		if c == component {
			return m[alias]
		}
	}
	return 0
}

// VolcanoSchedulerName is the schedulerName of pods Volcano schedules.
const VolcanoSchedulerName = "volcano"

// DefaultCoschedulingScheduler is the schedulerName of scheduler-plugins'
// scheduler (its Coscheduling profile) unless the reconciler is told
// another (--coscheduling-scheduler-name).
const DefaultCoschedulingScheduler = "scheduler-plugins-scheduler"

// GangChoice is how a service's pods are gang-scheduled.
type GangChoice struct {
	// Backend is Volcano or Coscheduling; "" when gang scheduling is off.
	Backend v1beta1.GangScheduler
	// SchedulerName is set on the pods the reconciler creates whose
	// composed schedulerName is empty (gangPolicy alone turned it on).
	SchedulerName string
	// Problem says why a gang cannot be formed (SchedulerMismatch); the
	// Backend is then "".
	Problem string
}

// ChooseGang decides gang scheduling for a service from its gangPolicy
// and the schedulerName its composed pods carry, by component (the gang's
// components: the engine, and the decoder of a prefill/decode service).
// A pod naming volcano, or coscheduling (the coscheduling scheduler's
// name), turns it on with that backend. gangPolicy turns it on with its
// scheduler, else the one the pods name, else Volcano; pods without a
// schedulerName then get the backend's. Components naming different
// schedulers, or one gangPolicy.scheduler does not name, cannot be ganged.
func ChooseGang(policy *v1beta1.GangPolicy, schedulers map[string]string, coscheduling string) GangChoice {
	names := map[v1beta1.GangScheduler]string{v1beta1.GangSchedulerVolcano: VolcanoSchedulerName, v1beta1.GangSchedulerCoscheduling: coscheduling}
	backendOf := func(s string) v1beta1.GangScheduler {
		for b, n := range names {
			if s == n {
				return b
			}
		}
		return ""
	}
	comps := slices.Sorted(maps.Keys(schedulers))
	var want v1beta1.GangScheduler
	if policy != nil {
		want = policy.Scheduler
	}
	for _, c := range comps {
		if b := backendOf(schedulers[c]); b != "" && want == "" {
			want = b
		}
	}
	if want == "" && policy == nil {
		return GangChoice{}
	}
	if want == "" {
		want = v1beta1.GangSchedulerVolcano
	}
	choice := GangChoice{Backend: want}
	for _, c := range comps {
		switch s := schedulers[c]; {
		case s == "" && policy != nil:
			choice.SchedulerName = names[want]
		case s != names[want]:
			return GangChoice{Problem: mismatch(comps, schedulers, want, names[want], policy != nil)}
		}
	}
	return choice
}

func mismatch(comps []string, schedulers map[string]string, want v1beta1.GangScheduler, name string, policy bool) string {
	var parts []string
	for _, c := range comps {
		s := schedulers[c]
		if s == "" {
			s = "the default scheduler"
		}
		parts = append(parts, fmt.Sprintf("%s pods use %s", c, s))
	}
	why := fmt.Sprintf("a %s gang needs every pod of the gang to use schedulerName %q", want, name)
	if policy {
		why += " (spec.gangPolicy)"
	}
	return strings.Join(parts, ", ") + ": " + why + "; set the same schedulerName on the runtime's or service's engine and decoder, or change spec.gangPolicy.scheduler"
}
