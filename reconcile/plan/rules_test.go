package plan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

type ruleCase struct {
	name string
	spec Spec
	pods []Pod
	// memory is the backoff memory passed in (nil: none)
	memory Backoff
	want   actions
}

func runRuleCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(tc.spec, tc.pods, tc.memory, t0)
			assert.Equal(t, tc.want, actionsOf(got))
		})
	}
}

func TestRule1Groups(t *testing.T) {
	extraWorker := worker(0, 3, "new")
	oldExtra := worker(0, 3, "old")
	orphan := single(0, "new", func(p *Pod) { p.Group = -1; p.Name, p.UID = "e-x", "uid-e-x" })
	odd := single(1, "new", func(p *Pod) { p.Role = "prefill" })
	dup := single(1, "new", named("e-1-copy", "uid-copy"))
	runRuleCases(t, []ruleCase{
		{name: "a worker beyond Workers at the current revision is deleted",
			spec: mkSpec(1, multi(2)), pods: append(mnGroup(0, 2, "new"), extraWorker),
			want: actions{Delete: []PodRef{del(extraWorker, ReasonExtraPod)}}},
		{name: "workers shrink: an old group keeps its shape, is Ready and rolls whole",
			spec: mkSpec(1, multi(1)), pods: mnGroup(0, 2, "old"),
			want: actions{Delete: dels(mnGroup(0, 2, "old"), ReasonRollingGroup)}},
		{name: "workers grow: old groups are Ready, not incomplete, and roll one at a time",
			spec: mkSpec(2, multi(2)), pods: cat(mnGroup(0, 1, "old"), mnGroup(1, 1, "old")),
			want: actions{Delete: dels(mnGroup(1, 1, "old"), ReasonRollingGroup)}},
		{name: "single-pod to multi-node: old groups roll one at a time",
			spec: mkSpec(2, multi(1)), pods: singles(2, "old"),
			want: actions{Delete: []PodRef{del(single(1, "old"), ReasonRollingGroup)}}},
		{name: "without GroupSize an old group's shape is its highest worker index",
			spec: mkSpec(2, multi(2)), pods: []Pod{leader(0, "old"), worker(0, 1, "old"), leader(1, "old"), worker(1, 1, "old")},
			want: actions{Delete: []PodRef{del(leader(1, "old"), ReasonRollingGroup), del(worker(1, 1, "old"), ReasonRollingGroup)}}},
		{name: "the leader's GroupSize decides, not a stray's",
			spec: mkSpec(1, multi(1), partition(intstr.FromInt32(1))),
			pods: append(mnGroup(0, 1, "old"), mkPod(0, RoleLeader, 3, "old", func(p *Pod) { p.GroupSize = 5 })),
			want: actions{Delete: []PodRef{del(mkPod(0, RoleLeader, 3, "old"), ReasonExtraPod)}}},
		{name: "a worker beyond the size an old group was made with is extra",
			spec: mkSpec(1, multi(2), partition(intstr.FromInt32(1))), pods: append(mnGroup(0, 2, "old"), oldExtra),
			want: actions{Delete: []PodRef{del(oldExtra, ReasonExtraPod)}}},
		{name: "a pod without a group index and a pod with an unknown role are deleted",
			spec: mkSpec(2), pods: []Pod{single(0, "new"), orphan, odd},
			want: actions{Delete: []PodRef{del(orphan, ReasonExtraPod), del(odd, ReasonExtraPod)}, Requeue: WaitRequeue}},
		{name: "a second live pod of one identity is deleted, the first by name stays",
			spec: mkSpec(2), pods: []Pod{dup, single(0, "new"), single(1, "new")},
			want: actions{Delete: []PodRef{del(dup, ReasonExtraPod)}}},
		{name: "of two live pods of one identity a Ready one stays",
			spec: mkSpec(2), pods: []Pod{single(0, "new", notReady), single(0, "new", named("e-0-copy", "uid-copy")), single(1, "new")},
			want: actions{Delete: []PodRef{del(single(0, "new", notReady), ReasonExtraPod)}}},
		{name: "a terminating extra is not deleted again",
			spec: mkSpec(1, multi(2)), pods: append(mnGroup(0, 2, "new"), worker(0, 3, "new", terminating)),
			want: actions{}},
		{name: "single pods under a multi-node spec are extra; their group waits for them to go",
			spec: mkSpec(1, multi(1)), pods: []Pod{single(0, "new")},
			want: actions{Delete: []PodRef{del(single(0, "new"), ReasonExtraPod)}, Requeue: WaitRequeue}},
	})
}

func TestRule2ScaleUp(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "an empty component gets all its groups at once",
			spec: mkSpec(3), want: actions{Create: groupCreates(mkSpec(3), 0, 0, 1, 2)}},
		{name: "multi-node groups are created whole",
			spec: mkSpec(2, multi(2)), pods: mnGroup(0, 2, "new"),
			want: actions{Create: groupCreates(mkSpec(2, multi(2)), 0, 1)}},
		{name: "a lone leader is a group",
			spec: mkSpec(1, multi(0)), want: actions{Create: []PodID{cr(0, RoleLeader, 0)}}},
		{name: "a surviving high ordinal counts: holes are filled lowest first up to Replicas",
			spec: mkSpec(3), pods: []Pod{single(0, "new"), single(5, "new")},
			want: actions{Create: []PodID{cr(1, "", 0)}}},
		{name: "an ordinal still terminating is waited for, not skipped",
			spec: mkSpec(3), pods: []Pod{single(0, "new"), single(1, "new", terminating), single(2, "new")},
			want: actions{Requeue: WaitRequeue}},
		{name: "a group with one pod still terminating is waited for whole",
			spec: mkSpec(1, multi(2)), pods: []Pod{worker(0, 2, "new", terminating)},
			want: actions{Requeue: WaitRequeue}},
		{name: "nothing to do at Replicas",
			spec: mkSpec(2), pods: singles(2, "new"), want: actions{}},
	})
}

func TestRule3MissingPods(t *testing.T) {
	g0 := mnGroup(0, 2, "old")
	cur := mnGroup(0, 2, "new")
	runRuleCases(t, []ruleCase{
		{name: "ServingGroupRecreate: a deleted worker recreates the whole group (rule 6)",
			spec: mkSpec(1, multi(2), policy(v1beta1.ServingGroupRecreate)), pods: cur[:2],
			want: actions{Delete: dels(cur[:2], ReasonRecreatingGroup)}},
		{name: "ServingGroupRecreate: a deleted leader recreates the whole group (rule 6)",
			spec: mkSpec(1, multi(2), policy(v1beta1.ServingGroupRecreate)), pods: cur[1:],
			want: actions{Delete: dels(cur[1:], ReasonRecreatingGroup)}},
		{name: "ServingGroupRecreate: while the group's backoff runs it stays incomplete",
			spec: mkSpec(1, multi(2), policy(v1beta1.ServingGroupRecreate)), pods: cur[:2], memory: Backoff{0: {Count: 1, Last: t0}},
			want: actions{Requeue: DefaultBackoffBase}},
		{name: "ServingGroupRecreate: a single-pod group is simply created again",
			spec: mkSpec(2, policy(v1beta1.ServingGroupRecreate)), pods: singles(1, "new"),
			want: actions{Create: []PodID{cr(1, "", 0)}}},
	})
	for _, pol := range []v1beta1.RecoveryPolicy{v1beta1.RoleRecreate, v1beta1.RecoveryNone} {
		runRuleCases(t, []ruleCase{
			{name: string(pol) + ": a deleted worker is created again",
				spec: mkSpec(1, multi(2), policy(pol)), pods: mnGroup(0, 2, "new")[:2],
				want: actions{Create: []PodID{cr(0, RoleWorker, 2)}}},
			{name: string(pol) + ": a deleted leader is created again",
				spec: mkSpec(1, multi(2), policy(pol)), pods: mnGroup(0, 2, "new")[1:],
				want: actions{Create: []PodID{cr(0, RoleLeader, 0)}}},
		})
	}
	runRuleCases(t, []ruleCase{
		{name: "a terminating worker is waited for",
			spec: mkSpec(1, multi(2)), pods: append(mnGroup(0, 2, "new")[:2], worker(0, 2, "new", terminating)),
			want: actions{Requeue: WaitRequeue}},
		{name: "a protected group at an old revision that lost a pod is replaced whole",
			spec: mkSpec(2, multi(2), partition(intstr.FromInt32(1))), pods: append(g0[:2:2], mnGroup(1, 2, "new")...),
			want: actions{Delete: dels(g0[:2], ReasonReplacingGroup)}},
		{name: "an outdated group above the partition that lost a pod is rolled, first",
			spec: mkSpec(2, multi(2)), pods: append(g0[:2:2], mnGroup(1, 2, "old")...),
			want: actions{Delete: dels(g0[:2], ReasonRollingGroup)}},
	})
}

func TestRule4ScaleDown(t *testing.T) {
	four := singles(4, "new")
	one := single(1, "new", notReady)
	runRuleCases(t, []ruleCase{
		{name: "4 to 2 deletes the highest ordinals",
			spec: mkSpec(2), pods: four,
			want: actions{Delete: []PodRef{del(four[2], ReasonScalingDown), del(four[3], ReasonScalingDown)}}},
		{name: "a group that is not Ready goes first",
			spec: mkSpec(3), pods: []Pod{four[0], one, four[2], four[3]},
			want: actions{Delete: []PodRef{del(one, ReasonScalingDown)}}},
		{name: "multi-node groups go whole",
			spec: mkSpec(1, multi(1)), pods: cat(mnGroup(0, 1, "new"), mnGroup(1, 1, "new")),
			want: actions{Delete: dels(mnGroup(1, 1, "new"), ReasonScalingDown)}},
		{name: "partition-protected groups go last, even when not Ready",
			spec: mkSpec(1, partition(intstr.FromInt32(2))), pods: []Pod{single(0, "new", notReady), one, four[2]},
			want: actions{Delete: []PodRef{del(one, ReasonScalingDown), del(four[2], ReasonScalingDown)}}},
		{name: "without allowance a Ready group waits and the next that is not Ready goes",
			spec: mkSpec(2, partition(intstr.FromInt32(2))), pods: []Pod{single(0, "new", notReady), one, four[2]},
			want: actions{Delete: []PodRef{del(one, ReasonScalingDown)}}},
		{name: "to zero",
			spec: mkSpec(0), pods: four[:2], want: actions{Delete: dels(four[:2], ReasonScalingDown)}},
		{name: "terminating groups do not count",
			spec: mkSpec(2), pods: []Pod{four[0], four[1], single(2, "new", terminating)}, want: actions{}},
	})
}

func TestRule5RollingUpdate(t *testing.T) {
	old := singles(4, "old")
	sick := single(1, "old", notReady)
	fresh := single(3, "new", notReady)
	runRuleCases(t, []ruleCase{
		{name: "the highest outdated group goes first",
			spec: mkSpec(4), pods: old, want: actions{Delete: []PodRef{del(old[3], ReasonRollingGroup)}}},
		{name: "then the next one down",
			spec: mkSpec(4), pods: []Pod{old[0], old[1], old[2], single(3, "new")},
			want: actions{Delete: []PodRef{del(old[2], ReasonRollingGroup)}}},
		{name: "a rebuilt group that is not Ready yet holds the roll",
			spec: mkSpec(4), pods: []Pod{old[0], old[1], old[2], fresh}, want: actions{}},
		{name: "a missing group holds the roll and is created",
			spec: mkSpec(4), pods: old[:3], want: actions{Create: []PodID{cr(3, "", 0)}}},
		{name: "maxUnavailable 2 rolls two at once",
			spec: mkSpec(4, maxUnavailable(intstr.FromInt32(2))), pods: old,
			want: actions{Delete: []PodRef{del(old[2], ReasonRollingGroup), del(old[3], ReasonRollingGroup)}}},
		{name: "maxUnavailable 50% of 4 is 2",
			spec: mkSpec(4, maxUnavailable(intstr.FromString("50%"))), pods: old,
			want: actions{Delete: []PodRef{del(old[2], ReasonRollingGroup), del(old[3], ReasonRollingGroup)}}},
		{name: "maxUnavailable 10% of 4 rounds down to 0 and is 1",
			spec: mkSpec(4, maxUnavailable(intstr.FromString("10%"))), pods: old,
			want: actions{Delete: []PodRef{del(old[3], ReasonRollingGroup)}}},
		{name: "partition 2 rolls only groups 2 and 3",
			spec: mkSpec(4, partition(intstr.FromInt32(2))), pods: []Pod{old[0], old[1], old[2], single(3, "new")},
			want: actions{Delete: []PodRef{del(old[2], ReasonRollingGroup)}}},
		{name: "partition 2: done when 2 and 3 are updated",
			spec: mkSpec(4, partition(intstr.FromInt32(2))), pods: []Pod{old[0], old[1], single(2, "new"), single(3, "new")},
			want: actions{}},
		{name: "partition 50% of 4 is 2, percent rounds up: 30% of 4 is 2",
			spec: mkSpec(4, partition(intstr.FromString("30%"))), pods: []Pod{old[0], old[1], single(2, "new"), single(3, "new")},
			want: actions{}},
		{name: "a protected group that is not Ready is not rolled",
			spec: mkSpec(4, partition(intstr.FromInt32(2))), pods: []Pod{old[0], sick, single(2, "new"), single(3, "new")},
			want: actions{}},
		{name: "an unhealthy outdated group goes first even with the budget spent (Kthena #743)",
			spec: mkSpec(4), pods: []Pod{old[0], sick, old[2], old[3]},
			want: actions{Delete: []PodRef{del(sick, ReasonRollingGroup)}}},
		{name: "with 2 allowed, the unhealthy group is free and one Ready group goes",
			spec: mkSpec(4, maxUnavailable(intstr.FromInt32(2))), pods: []Pod{old[0], sick, old[2], old[3]},
			want: actions{Delete: []PodRef{del(sick, ReasonRollingGroup), del(old[3], ReasonRollingGroup)}}},
		{name: "scale down and roll share the allowance",
			spec: mkSpec(2), pods: old,
			want: actions{Delete: []PodRef{del(old[1], ReasonRollingGroup), del(old[2], ReasonScalingDown), del(old[3], ReasonScalingDown)}}},
		{name: "scale up holds the roll",
			spec: mkSpec(6), pods: old, want: actions{Create: []PodID{cr(4, "", 0), cr(5, "", 0)}}},
		{name: "mixed revisions in a group make it outdated",
			spec: mkSpec(1, multi(1)), pods: []Pod{leader(0, "new"), worker(0, 1, "old")},
			want: actions{Delete: []PodRef{del(leader(0, "new"), ReasonRollingGroup), del(worker(0, 1, "old"), ReasonRollingGroup)}}},
	})
}

func TestRule8Unschedulable(t *testing.T) {
	msg1 := "0/19 nodes are available: 19 Insufficient nvidia.com/gpu."
	msg2 := "0/19 nodes are available: 19 node(s) didn't match Pod's node affinity."
	pods := []Pod{single(0, "new"), single(2, "new", unsched(msg2)), single(1, "new", unsched(msg1)),
		single(3, "new", unsched("gone"), terminating)}
	st := Next(mkSpec(3), pods, nil, t0).Status
	assert.Equal(t, int32(2), st.Unschedulable)
	assert.Equal(t, msg1, st.UnschedulableMessage)
	assert.Equal(t, ProgressStarting, st.Progressing)
}

func TestStatusCounts(t *testing.T) {
	pods := cat(mnGroup(0, 1, "old"), mnGroup(1, 1, "new"), mnGroup(2, 1, "new", notReady),
		[]Pod{leader(3, "new", terminating)}, mnGroup(4, 1, "new", restarting(2, t0)))
	st := Next(mkSpec(4, multi(1), policy(v1beta1.RecoveryNone)), pods, nil, t0).Status
	assert.Equal(t, Status{
		Component: "engine", Desired: 4, MaxUnavailable: 1,
		Replicas: 4, Ready: 2, Updated: 3, Outdated: 1, Unavailable: 2, Available: 1,
		Progressing: ProgressRollingUpdate,
		Failing:     []Failure{{Group: 4, Pod: "e-4", Reason: "CrashLoopBackOff", Restarts: 2}},
	}, st)
	rest := Next(mkSpec(2), singles(2, "new"), nil, t0).Status
	assert.Equal(t, "", rest.Progressing)
	assert.Equal(t, int32(0), rest.Unavailable)
	assert.Equal(t, ProgressScaling, Next(mkSpec(3), singles(2, "new"), nil, t0).Status.Progressing)
}

func TestInvalidRolloutIsAWarningAndRollsNothing(t *testing.T) {
	s := Next(mkSpec(2, partition(intstr.FromString("half")), maxUnavailable(intstr.FromString("x"))), singles(2, "old"), nil, t0)
	assert.Empty(t, s.Delete)
	if assert.Len(t, s.Events, 2) {
		assert.Equal(t, ReasonInvalidRollout, s.Events[0].Reason)
		assert.Contains(t, s.Events[0].Message, `partition "half"`)
		assert.Contains(t, s.Events[1].Message, `maxUnavailable "x"`)
	}
}

func TestDelay(t *testing.T) {
	for n, want := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second} {
		assert.Equal(t, want, Delay(int32(n), DefaultBackoffBase, DefaultBackoffMax), "n=%d", n)
	}
	assert.Equal(t, 5*time.Minute, Delay(1<<30, DefaultBackoffBase, DefaultBackoffMax))
}
