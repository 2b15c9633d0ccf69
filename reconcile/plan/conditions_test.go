package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConditions(t *testing.T) {
	gpu := "0/19 nodes are available: 19 Insufficient nvidia.com/gpu."
	engineOK := Status{Component: "engine", Desired: 4, MaxUnavailable: 1, Replicas: 4, Ready: 4, Updated: 4}
	router := Status{Component: "router", Desired: 1, MaxUnavailable: 1, Replicas: 1, Ready: 1, Updated: 1}
	rolling := Status{Component: "engine", Desired: 4, MaxUnavailable: 1, Replicas: 3, Ready: 3, Updated: 1, Outdated: 2,
		Unavailable: 1, Progressing: ProgressRollingUpdate}
	stuck := Status{Component: "engine", Desired: 4, MaxUnavailable: 1, Replicas: 4, Ready: 2, Updated: 4,
		Unavailable: 2, Unschedulable: 1, UnschedulableMessage: gpu, Progressing: ProgressStarting}
	crashing := Status{Component: "decoder", Desired: 2, MaxUnavailable: 1, Replicas: 2, Ready: 1, Updated: 2, Unavailable: 1,
		Progressing: ProgressRecovering, Failing: []Failure{{Group: 1, Pod: "svc-decoder-1", Reason: "CrashLoopBackOff", Restarts: 5, Recreates: 2}}}
	pull := `container ome-container ImagePullBackOff: Back-off pulling image "ghcr.io/x/engine:1"`
	waiting := Status{Component: "engine", Desired: 1, MaxUnavailable: 1, Replicas: 1, Ready: 0, Updated: 1, Unavailable: 1,
		Stuck: 1, StuckMessage: pull, Progressing: ProgressStarting}
	stalledRoll, stalledStart := rolling, stuck
	stalledRoll.Stalled, stalledRoll.ProgressDeadline = true, DefaultProgressDeadline
	stalledStart.Stalled, stalledStart.ProgressDeadline = true, DefaultProgressDeadline
	cond := func(typ, status, reason, msg string) Condition { return Condition{typ, status, reason, msg} }
	resolved := cond("Resolved", "True", "Resolved", "runtime pinned")
	cases := []struct {
		name       string
		components []Status
		resolved   bool
		err        string
		want       []Condition
	}{
		{name: "all ready", components: []Status{router, engineOK}, resolved: true, want: []Condition{
			resolved,
			cond("Ready", "True", "AllGroupsReady", "engine: 4/4 groups ready; router: 1/1 groups ready"),
			cond("Progressing", "False", "AllGroupsReady", ""),
			cond("Degraded", "False", "AsExpected", ""),
		}},
		{name: "a roll within maxUnavailable is Ready", components: []Status{rolling, router}, resolved: true, want: []Condition{
			resolved,
			cond("Ready", "True", "RollingUpdate", "engine: 3/4 groups ready; router: 1/1 groups ready"),
			cond("Progressing", "True", "RollingUpdate", "engine: rolling update, 1/4 groups updated, 3/4 ready"),
			cond("Degraded", "False", "AsExpected", ""),
		}},
		{name: "unschedulable and failing", components: []Status{crashing, stuck}, resolved: true, want: []Condition{
			resolved,
			cond("Ready", "False", "Unschedulable", "engine: 2/4 groups ready; 1 unschedulable: "+gpu+
				"; decoder: 1/2 groups ready; 1 failing: group 1 pod svc-decoder-1 CrashLoopBackOff, 5 restarts, recreated 2 times in a row"),
			cond("Progressing", "True", "Recovering", "engine: 2/4 groups ready; decoder: recovering 1 failing group"),
			cond("Degraded", "True", "PodsFailing", "engine: 1 group unschedulable: "+gpu+
				"; decoder: 1 group failing: group 1 pod svc-decoder-1 CrashLoopBackOff, 5 restarts, recreated 2 times in a row"),
		}},
		{name: "a container that cannot start: not Ready, Degraded, naming the image", components: []Status{waiting}, resolved: true, want: []Condition{
			resolved,
			cond("Ready", "False", "ContainersStuck", "engine: 0/1 groups ready; 1 stuck: "+pull),
			cond("Progressing", "True", "Starting", "engine: 0/1 groups ready"),
			cond("Degraded", "True", "ContainersStuck", "engine: 1 group stuck: "+pull),
		}},
		{name: "a roll of a one-group service whose only group is down is not Ready: nothing serves",
			components: []Status{{Component: "engine", Desired: 1, MaxUnavailable: 1, Replicas: 1, Ready: 0, Updated: 1,
				Unavailable: 1, Progressing: ProgressRollingUpdate}}, resolved: true, want: []Condition{
				resolved,
				cond("Ready", "False", "GroupsNotReady", "engine: 0/1 groups ready"),
				cond("Progressing", "True", "RollingUpdate", "engine: rolling update, 1/1 groups updated, 0/1 ready"),
				cond("Degraded", "False", "AsExpected", ""),
			}},
		{name: "scaling", components: []Status{{Component: "engine", Desired: 3, MaxUnavailable: 1, Replicas: 1, Ready: 1, Updated: 1,
			Unavailable: 2, Progressing: ProgressScaling}}, resolved: true, want: []Condition{
			resolved,
			cond("Ready", "False", "GroupsNotReady", "engine: 1/3 groups ready"),
			cond("Progressing", "True", "Scaling", "engine: scaling from 1 to 3 groups, 1 ready"),
			cond("Degraded", "False", "AsExpected", ""),
		}},
		{name: "a pin that no longer resolves degrades a running service", components: []Status{engineOK}, resolved: true,
			err: `ClusterServingRuntime "vllm" was deleted`, want: []Condition{
				cond("Resolved", "False", "PinUnresolvable", `ClusterServingRuntime "vllm" was deleted`),
				cond("Ready", "True", "AllGroupsReady", "engine: 4/4 groups ready"),
				cond("Progressing", "False", "AllGroupsReady", ""),
				cond("Degraded", "True", "PinUnresolvable", `ClusterServingRuntime "vllm" was deleted`),
			}},
		{name: "nothing resolves", resolved: false, err: "no runtime serves format onnx", want: []Condition{
			cond("Resolved", "False", "PinUnresolvable", "no runtime serves format onnx"),
			cond("Ready", "False", "PinUnresolvable", "no runtime serves format onnx"),
			cond("Progressing", "False", "AllGroupsReady", ""),
			cond("Degraded", "True", "PinUnresolvable", "no runtime serves format onnx"),
		}},
		{name: "a roll stalled past its deadline is not Ready, although the old groups serve", components: []Status{stalledRoll, router}, resolved: true, want: []Condition{
			resolved,
			cond("Ready", "False", "ProgressDeadlineExceeded", "engine: 3/4 groups ready; router: 1/1 groups ready"),
			cond("Progressing", "False", "ProgressDeadlineExceeded", "engine: rolling update, 1/4 groups updated, 3/4 ready (no progress for 10m0s, progressDeadlineSeconds)"),
			cond("Degraded", "True", "ProgressDeadlineExceeded", "engine: rolling update, 1/4 groups updated, 3/4 ready (no progress for 10m0s, progressDeadlineSeconds)"),
		}},
		{name: "a stalled start says what is wrong in Ready and Degraded", components: []Status{stalledStart}, resolved: true, want: []Condition{
			resolved,
			cond("Ready", "False", "Unschedulable", "engine: 2/4 groups ready; 1 unschedulable: "+gpu),
			cond("Progressing", "False", "ProgressDeadlineExceeded", "engine: 2/4 groups ready (no progress for 10m0s, progressDeadlineSeconds)"),
			cond("Degraded", "True", "Unschedulable", "engine: 1 group unschedulable: "+gpu),
		}},
		{name: "failing pods alone", components: []Status{crashing}, resolved: true, want: []Condition{
			resolved,
			cond("Ready", "False", "PodsFailing", "decoder: 1/2 groups ready; 1 failing: group 1 pod svc-decoder-1 CrashLoopBackOff, 5 restarts, recreated 2 times in a row"),
			cond("Progressing", "True", "Recovering", "decoder: recovering 1 failing group"),
			cond("Degraded", "True", "PodsFailing", "decoder: 1 group failing: group 1 pod svc-decoder-1 CrashLoopBackOff, 5 restarts, recreated 2 times in a row"),
		}},
		{name: "not pinned yet", resolved: false, want: []Condition{
			cond("Resolved", "False", "NotResolved", "no runtime is pinned yet"),
			cond("Ready", "False", "NotResolved", "no runtime is pinned yet"),
			cond("Progressing", "False", "AllGroupsReady", ""),
			cond("Degraded", "False", "AsExpected", ""),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Conditions(tc.components, tc.resolved, tc.err))
		})
	}
}

func TestReadyColumn(t *testing.T) {
	assert.Equal(t, "0/0", ReadyColumn(nil))
	assert.Equal(t, "5/6", ReadyColumn([]Status{
		{Component: "engine", Desired: 4, Ready: 3},
		{Component: "router", Desired: 2, Ready: 5}, // scaling down: the extra Ready groups do not count
	}))
}

// The READY column agrees with the Ready condition: Ready=True only while
// every component has a Ready group and no more than maxUnavailable of
// its desired groups are not; AllGroupsReady exactly when the column is
// full.
func TestReadyColumnAgreesWithReady(t *testing.T) {
	var cases [][]Status
	for _, prog := range []string{"", ProgressRollingUpdate, ProgressScaling, ProgressRecovering, ProgressStarting} {
		for _, stalled := range []bool{false, true} {
			for desired := int32(1); desired <= 3; desired++ {
				for ready := int32(0); ready <= desired; ready++ {
					s := Status{Component: "engine", Desired: desired, MaxUnavailable: 1, Replicas: desired, Ready: ready,
						Unavailable: desired - ready, Progressing: prog, Stalled: stalled && prog != ""}
					r := Status{Component: "router", Desired: 1, MaxUnavailable: 1, Replicas: 1, Ready: ready % 2, Unavailable: 1 - ready%2}
					cases = append(cases, []Status{s}, []Status{s, r})
				}
			}
		}
	}
	for _, cs := range cases {
		ready := Conditions(cs, true, "")[1]
		var n, want int32
		for _, s := range cs {
			n, want = n+min(s.Ready, s.Desired), want+s.Desired
			if ready.Status == ConditionTrue {
				assert.Positive(t, s.Ready, "%+v: Ready=True with a component without a Ready group", cs)
				assert.GreaterOrEqual(t, s.Ready, s.Desired-s.MaxUnavailable, "%+v", cs)
				if s.Stalled {
					assert.Equal(t, s.Desired, s.Ready, "%+v: Ready=True while stalled", cs)
				}
			}
		}
		assert.Equal(t, ready.Reason == ReasonAllGroupsReady, n == want, "%+v: %s and column %s", cs, ready.Reason, ReadyColumn(cs))
	}
}

func TestConditionsFromNext(t *testing.T) {
	gpu := "0/19 nodes are available: 19 Insufficient nvidia.com/gpu."
	st := Next(mkSpec(4), []Pod{single(0, "new"), single(1, "new"), single(2, "new", unsched(gpu)), single(3, "new", unsched(gpu))}, nil, t0).Status
	c := Conditions([]Status{st}, true, "")
	assert.Equal(t, Condition{"Ready", "False", "Unschedulable", "engine: 2/4 groups ready; 2 unschedulable: " + gpu}, c[1])
	assert.Equal(t, "2/4", ReadyColumn([]Status{st}))
}
