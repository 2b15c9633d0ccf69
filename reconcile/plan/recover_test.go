package plan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

type rule6Case struct {
	name    string
	spec    Spec
	pods    []Pod
	memory  Backoff
	want    actions
	backoff Backoff
	events  []string // reasons
}

func runRule6(t *testing.T, cases []rule6Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(tc.spec, tc.pods, tc.memory, t0)
			assert.Equal(t, tc.want, actionsOf(got))
			assert.Equal(t, tc.backoff, got.Backoff)
			var reasons []string
			for _, e := range got.Events {
				reasons = append(reasons, e.Reason)
			}
			assert.Equal(t, tc.events, reasons)
		})
	}
}

// rule6Pods: group 0 of a leader and 2 workers, worker 1 crash-looping or Failed.
var (
	crash        = restarting(3, t0.Add(-time.Minute))
	g0           = mnGroup(0, 2, "new")
	sickWorker   = worker(0, 1, "new", crash)
	withSick     = []Pod{g0[0], sickWorker, g0[2]}
	failedWorker = worker(0, 1, "new", failedAt(t0.Add(-time.Minute)))
	withFailed   = []Pod{g0[0], failedWorker, g0[2]}
)

func TestRule6Policies(t *testing.T) {
	sec := time.Second
	runRule6(t, []rule6Case{
		{name: "RoleRecreate deletes only the failing pod",
			spec: mkSpec(1, multi(2)), pods: withSick,
			want:    actions{Delete: []PodRef{del(sickWorker, ReasonRecreatingPod)}},
			backoff: Backoff{0: {Count: 1, Last: t0}}, events: []string{ReasonRecreatingPod, ReasonBackOff}},
		{name: "ServingGroupRecreate deletes the whole group",
			spec: mkSpec(1, multi(2), policy(v1beta1.ServingGroupRecreate)), pods: withSick,
			want:    actions{Delete: dels(withSick, ReasonRecreatingGroup)},
			backoff: Backoff{0: {Count: 1, Last: t0}}, events: []string{ReasonRecreatingGroup, ReasonBackOff}},
		{name: "None leaves restarts to the kubelet",
			spec: mkSpec(1, multi(2), policy(v1beta1.RecoveryNone)), pods: withSick,
			want: actions{}, backoff: Backoff{}},
		{name: "None replaces a Failed pod",
			spec: mkSpec(1, multi(2), policy(v1beta1.RecoveryNone)), pods: withFailed,
			want:    actions{Delete: []PodRef{del(failedWorker, ReasonReplacingFailedPod)}},
			backoff: Backoff{0: {Count: 1, Last: t0}}, events: []string{ReasonReplacingFailedPod, ReasonBackOff}},
		{name: "a Failed pod is failing under RoleRecreate too",
			spec: mkSpec(1, multi(2)), pods: withFailed,
			want:    actions{Delete: []PodRef{del(failedWorker, ReasonRecreatingPod)}},
			backoff: Backoff{0: {Count: 1, Last: t0}}, events: []string{ReasonRecreatingPod, ReasonBackOff}},
		{name: "a restarted pod that is Ready again is not failing",
			spec: mkSpec(1, multi(2)), pods: []Pod{g0[0], worker(0, 1, "new", func(p *Pod) { p.Restarts = 4 }), g0[2]},
			want: actions{}, backoff: Backoff{}},
		{name: "within the grace nothing happens; look again when it ends",
			spec: mkSpec(1, multi(2), grace(90*sec)), pods: withSick,
			want: actions{Requeue: 30 * sec}, backoff: Backoff{}},
		{name: "after the grace the policy acts",
			spec: mkSpec(1, multi(2), grace(60*sec)), pods: withSick,
			want:    actions{Delete: []PodRef{del(sickWorker, ReasonRecreatingPod)}},
			backoff: Backoff{0: {Count: 1, Last: t0}}, events: []string{ReasonRecreatingPod, ReasonBackOff}},
	})
}

func TestRule6Backoff(t *testing.T) {
	sec := time.Second
	runRule6(t, []rule6Case{
		{name: "the second recovery waits 10s after the first",
			spec: mkSpec(1, multi(2)), pods: withSick, memory: Backoff{0: {Count: 1, Last: t0.Add(-4 * sec)}},
			want: actions{Requeue: 6 * sec}, backoff: Backoff{0: {Count: 1, Last: t0.Add(-4 * sec)}}},
		{name: "the fourth waits 40s after the third",
			spec: mkSpec(1, multi(2)), pods: withSick, memory: Backoff{0: {Count: 3, Last: t0.Add(-39 * sec)}},
			want: actions{Requeue: sec}, backoff: Backoff{0: {Count: 3, Last: t0.Add(-39 * sec)}}},
		{name: "and then goes",
			spec: mkSpec(1, multi(2)), pods: withSick, memory: Backoff{0: {Count: 3, Last: t0.Add(-40 * sec)}},
			want:    actions{Delete: []PodRef{del(sickWorker, ReasonRecreatingPod)}},
			backoff: Backoff{0: {Count: 4, Last: t0}}, events: []string{ReasonRecreatingPod, ReasonBackOff}},
		{name: "an empty memory is seeded from RecreateCount, the delay counting from now",
			spec: mkSpec(1, multi(2), policy(v1beta1.ServingGroupRecreate)),
			pods: []Pod{leader(0, "new", recreated(3)), worker(0, 1, "new", crash, recreated(3)), worker(0, 2, "new", recreated(3))},
			want: actions{Requeue: 40 * sec}, backoff: Backoff{0: {Count: 3, Last: t0}}},
		{name: "a group Ready for BackoffMax starts from 0 again",
			spec: mkSpec(1, multi(2)), pods: mnGroup(0, 2, "new", readySince(t0.Add(-5*time.Minute))),
			memory: Backoff{0: {Count: 3, Last: t0.Add(-6 * time.Minute)}},
			want:   actions{}, backoff: Backoff{0: {Count: 0, Last: t0.Add(-6 * time.Minute)}}},
		{name: "a group Ready for less keeps its count and asks to be called when it may reset",
			spec: mkSpec(1, multi(2)), pods: mnGroup(0, 2, "new", readySince(t0.Add(-time.Minute))),
			memory: Backoff{0: {Count: 3, Last: t0.Add(-2 * time.Minute)}},
			want:   actions{Requeue: 4 * time.Minute}, backoff: Backoff{0: {Count: 3, Last: t0.Add(-2 * time.Minute)}}},
		{name: "a recreated group is stamped with its count",
			spec: mkSpec(2, multi(1)), pods: mnGroup(0, 1, "new"), memory: Backoff{1: {Count: 2, Last: t0}},
			want:    actions{Create: groupCreates(mkSpec(2, multi(1)), 2, 1)},
			backoff: Backoff{1: {Count: 2, Last: t0}}, events: []string{ReasonCreatingGroup}},
		{name: "memory of a group that is gone and not wanted is dropped",
			spec: mkSpec(1), pods: singles(1, "new"), memory: Backoff{4: {Count: 2, Last: t0}},
			want: actions{}, backoff: Backoff{}},
		{name: "a failing outdated group is rolled, not also recovered",
			spec: mkSpec(1, multi(2)), pods: []Pod{leader(0, "old"), worker(0, 1, "old", crash), worker(0, 2, "old")},
			want:    actions{Delete: dels([]Pod{leader(0, "old"), worker(0, 1, "old", crash), worker(0, 2, "old")}, ReasonRollingGroup)},
			backoff: Backoff{}, events: []string{ReasonRollingGroup}},
		{name: "a failing protected outdated group is recovered",
			spec: mkSpec(1, partition(intstr.FromInt32(1))), pods: []Pod{single(0, "old", crash)},
			want:    actions{Delete: []PodRef{del(single(0, "old", crash), ReasonRecreatingPod)}},
			backoff: Backoff{0: {Count: 1, Last: t0}}, events: []string{ReasonRecreatingPod, ReasonBackOff}},
		{name: "a failing group being scaled away is not recovered",
			spec: mkSpec(1, policy(v1beta1.ServingGroupRecreate)), pods: []Pod{single(0, "new"), single(1, "new", crash)},
			want:    actions{Delete: []PodRef{del(single(1, "new", crash), ReasonScalingDown)}},
			backoff: Backoff{}, events: []string{ReasonScalingDown}},
	})
}

func TestRule6Events(t *testing.T) {
	pods := []Pod{single(0, "new"), single(1, "new"), single(2, "new", restarting(7, t0.Add(-time.Hour)))}
	s := Next(mkSpec(3, policy(v1beta1.ServingGroupRecreate)), pods, Backoff{2: {Count: 2, Last: t0.Add(-time.Hour)}}, t0)
	assert.Equal(t, []Event{
		{Type: EventWarning, Reason: ReasonRecreatingGroup,
			Message: "engine: group 2: pod e-2 is restarting (7 restarts): CrashLoopBackOff; recreating the group"},
		{Type: EventWarning, Reason: ReasonBackOff,
			Message: "engine: group 2 failed 3 times in a row; next recreate in 40s"},
	}, s.Events)
	assert.Equal(t, []Failure{{Group: 2, Pod: "e-2", Reason: "CrashLoopBackOff", Restarts: 7, Recreates: 3}}, s.Status.Failing)
	assert.Equal(t, ProgressRecovering, s.Status.Progressing)
}

func TestNextDoesNotChangeItsMemory(t *testing.T) {
	memory := Backoff{0: {Count: 1, Last: t0.Add(-time.Hour)}}
	s := Next(mkSpec(1), []Pod{single(0, "new", restarting(1, t0))}, memory, t0)
	assert.Equal(t, Backoff{0: {Count: 1, Last: t0.Add(-time.Hour)}}, memory)
	assert.Equal(t, Backoff{0: {Count: 2, Last: t0}}, s.Backoff)
}
