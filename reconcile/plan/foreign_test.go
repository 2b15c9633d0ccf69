package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

func foreign(p *Pod)        { p.Foreign = true }
func restartedReady(p *Pod) { p.Restarts = 1 }

// A pod the service does not control at one of its names holds its slot:
// nothing is created there, it is never deleted, counted or Ready.
func TestForeignPodHoldsItsSlot(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "an orphan at the only group's name: nothing is created or deleted",
			spec: mkSpec(1), pods: []Pod{single(0, "old", foreign)}, want: actions{Requeue: WaitRequeue}},
		{name: "an orphan worker: the group is not completed in its place",
			spec: mkSpec(1, multi(1)), pods: []Pod{leader(0, "new"), worker(0, 1, "new", foreign)}, want: actions{Requeue: WaitRequeue}},
		{name: "an orphan at group 0 does not move the group to another ordinal",
			spec: mkSpec(2), pods: []Pod{single(0, "new", foreign)}, want: actions{Create: []PodID{cr(1, "", 0)}, Requeue: WaitRequeue}},
	})
	st := Next(mkSpec(1), []Pod{single(0, "new", foreign)}, nil, t0).Status
	assert.Equal(t, int32(0), st.Replicas, "not counted")
	assert.Equal(t, int32(0), st.Ready, "not counted")
	assert.Equal(t, int32(1), st.Unavailable)
}

// Rule 6 under ServingGroupRecreate: a restarted member of a multi-pod
// group recreates the group even once it is Ready again (LeaderWorkerSet's
// RecreateGroupOnPodRestart), within the allowance since the group
// serves; RoleRecreate leaves a Ready pod alone.
func TestRule6RestartedMember(t *testing.T) {
	g0 := mnGroup(0, 2, "new")
	g0[1] = worker(0, 1, "new", restartedReady)
	g1 := mnGroup(1, 2, "new")
	g1r := mnGroup(1, 2, "new")
	g1r[2] = worker(1, 2, "new", restartedReady)
	sgr := policy(v1beta1.ServingGroupRecreate)
	runRuleCases(t, []ruleCase{
		{name: "ServingGroupRecreate: the group is recreated",
			spec: mkSpec(2, multi(2), sgr), pods: cat(g0, g1), want: actions{Delete: dels(g0, ReasonRecreatingGroup)}},
		{name: "ServingGroupRecreate: one group per unit of allowance",
			spec: mkSpec(2, multi(2), sgr), pods: cat(g0, g1r), want: actions{Delete: dels(g0, ReasonRecreatingGroup)}},
		{name: "ServingGroupRecreate: maxUnavailable 2 recreates both",
			spec: mkSpec(2, multi(2), sgr, maxUnavailable(intstr.FromInt32(2))), pods: cat(g0, g1r),
			want: actions{Delete: append(dels(g0, ReasonRecreatingGroup), dels(g1r, ReasonRecreatingGroup)...)}},
		{name: "RoleRecreate: a Ready pod is left alone",
			spec: mkSpec(2, multi(2)), pods: cat(g0, g1), want: actions{}},
		{name: "ServingGroupRecreate: a single-pod group's Ready pod is left alone",
			spec: mkSpec(1, sgr), pods: []Pod{single(0, "new", restartedReady)}, want: actions{}},
	})
}
