package plan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

// Roles of the pods of a multi-node group. Single-pod groups have role "".
const (
	RoleLeader = "leader"
	RoleWorker = "worker"
)

// Defaults of Spec (rule 6) and the wait for a terminating pod (rule 2).
const (
	DefaultBackoffBase = 10 * time.Second
	DefaultBackoffMax  = 5 * time.Minute
	// WaitRequeue is how soon to look again when a pod to create still has
	// a terminating pod in its place.
	WaitRequeue = 2 * time.Second
)

// Spec is the desired state of one component (engine, decoder or router)
// of one InferenceService, resolved by the caller from the service.
type Spec struct {
	Component string
	// Replicas is the number of serving groups wanted.
	Replicas int32
	// Workers is the number of worker pods per group (0: single-pod groups,
	// or a lone leader when MultiNode).
	Workers int32
	// MultiNode: groups are a leader and Workers workers. Workers > 0
	// implies it.
	MultiNode bool
	// Revision is the current revision; a pod stamped with another one is
	// outdated.
	Revision string
	// Partition: groups with an ordinal below it are not rolled. An int or
	// a percentage of Replicas, rounded up. Zero value: 0.
	Partition intstr.IntOrString
	// MaxUnavailable bounds the desired groups that may be unavailable when
	// the planner deletes a Ready group. An int or a percentage of
	// Replicas, rounded down, at least 1. Zero value: 1.
	MaxUnavailable intstr.IntOrString
	// Recovery is what is recreated when a pod fails; "" is RoleRecreate,
	// the API's default.
	Recovery v1beta1.RecoveryPolicy
	// RestartGrace is how long a pod may fail before Recovery acts.
	RestartGrace time.Duration
	// BackoffBase and BackoffMax shape the delay between consecutive
	// recoveries of a group: min(base·2^(n-1), max) after the n-th.
	// Zero: DefaultBackoffBase, DefaultBackoffMax.
	BackoffBase, BackoffMax time.Duration
	// StableRevision is the last revision every group ran (StatefulSet's
	// currentRevision): a group below the partition with no pod left is
	// created at it (rule 3). "" or Revision: at Revision.
	StableRevision string
	// Recorded are the revisions other than Revision whose pod templates
	// the caller recorded and can create pods from, with the shape of
	// their groups. A group below the partition is recreated at its own
	// revision only when it is recorded (rule 3).
	Recorded map[string]Shape
	// Pair is set for the engine and decoder of a prefill/decode service
	// (rules 10 and 11), and by NextRouters for its router; nil otherwise.
	Pair *Pair
	// Held are ordinals that pods outside this call hold (the routers of
	// other pairings, rule 12): rule 2 skips them instead of waiting.
	Held map[int32]bool
}

// Shape is what a revision's groups are made of: one pod, or a leader and
// Workers workers (MultiNode).
type Shape struct {
	MultiNode bool
	Workers   int32
}

// Pod is what the planner needs to know about one observed pod of the
// component. ObservePod builds it from a corev1.Pod.
type Pod struct {
	Name, UID string
	// Group is the serving group's ordinal; -1 when the pod's labels do not
	// say (such a pod is extra and deleted).
	Group int32
	// Role is "", RoleLeader or RoleWorker; Worker is 0 for the leader and
	// the only pod, 1..Workers for workers.
	Role   string
	Worker int32
	// Revision is the pod's ome.io/revision annotation.
	Revision string
	// Pairing is the pod's ome.io/pairing label (rule 10).
	Pairing string
	Phase   corev1.PodPhase
	// Ready is the pod's Ready condition; ReadySince when it became True.
	Ready      bool
	ReadySince time.Time
	// Terminating: deletionTimestamp is set.
	Terminating bool
	// Foreign: a pod of the name the component uses for its identity that
	// the service does not control (an orphan, someone else's). It holds
	// its slot like a terminating pod, and is never deleted, counted or
	// adopted: nothing is created in its place while it is there.
	Foreign bool
	// Restarts is the sum of its containers' restart counts.
	Restarts int32
	// FailingSince is when the pod became Failed or, while restarting, not
	// Ready; zero when healthy or unknown (the grace then counts as passed).
	FailingSince time.Time
	// Reason is the kubelet's word for a pod that is not well:
	// CrashLoopBackOff, OOMKilled, ImagePullBackOff, Evicted...
	Reason string
	// Unschedulable is the scheduler's message while PodScheduled is False
	// with reason Unschedulable.
	Unschedulable string
	// Stuck says which container waits for something waiting will not
	// bring (an image the node cannot get, a bad configuration): "container
	// <name> <reason>: <the kubelet's message>". Such a pod is not
	// recreated (a new one would wait the same) but reported.
	Stuck string
	// RecreateCount is the pod's ome.io/recreate-count annotation.
	RecreateCount int32
	// GroupSize is the number of pods of its group when the pod was made
	// (its BERTH_GROUP_SIZE or LWS_GROUP_SIZE env); 0 when unknown.
	GroupSize int32
}

// PodID names a pod to create. The caller composes it at Spec.Revision, or
// at Revision when set (a recorded revision, rule 3), and stamps
// RecreateCount as the ome.io/recreate-count annotation.
type PodID struct {
	Group         int32
	Role          string
	Worker        int32
	RecreateCount int32
	Revision      string
	// Pairing is Spec.Pair.Pairing, for the caller to stamp (rule 10); ""
	// without a pair.
	Pairing string
}

// PodRef names a pod to delete; the caller deletes with a UID
// precondition.
type PodRef struct {
	Name, UID string
	Group     int32
	Role      string
	Worker    int32
	// Reason is one of the Reason* constants: which rule deletes it.
	Reason string
}

// Reasons of deletes, events and Progressing.
const (
	ReasonExtraPod           = "ExtraPod"
	ReasonScalingDown        = "ScalingDown"
	ReasonRollingGroup       = "RollingGroup"
	ReasonReplacingGroup     = "ReplacingGroup"
	ReasonRecreatingGroup    = "RecreatingGroup"
	ReasonRecreatingPod      = "RecreatingPod"
	ReasonReplacingFailedPod = "ReplacingFailedPod"
	ReasonCreatingGroup      = "CreatingGroup"
	ReasonCreatingPod        = "CreatingPod"
	ReasonBackOff            = "BackOff"
	ReasonInvalidRollout     = "InvalidRolloutStrategy"
	ReasonRevisionMissing    = "RevisionNotRecorded"
	ReasonRatioHold          = "RatioHold"
	ReasonPairingGone        = "PairingGone"
	ReasonRouterRetired      = "RouterRetired"
	ReasonRouterFirst        = "RouterFirst"

	ProgressRollingUpdate = "RollingUpdate"
	ProgressScaling       = "Scaling"
	ProgressRecovering    = "Recovering"
	ProgressStarting      = "Starting"
)

// Event types, as corev1's.
const (
	EventNormal  = corev1.EventTypeNormal
	EventWarning = corev1.EventTypeWarning
)

// Event is one event for the caller to record on the InferenceService.
type Event struct {
	Type, Reason, Message string
}

// Failure is a group with a failing pod (rule 6): the first such pod.
type Failure struct {
	Group    int32
	Pod      string
	Reason   string
	Restarts int32
	// Recreates is how many times in a row the group was recovered.
	Recreates int32
}

// Status is the observed state of the component, for the service's status
// and conditions.
type Status struct {
	Component string
	// Desired is Spec.Replicas; MaxUnavailable the resolved bound.
	Desired, MaxUnavailable int32
	// Replicas counts live groups (at least one expected pod not
	// terminating), Ready the Ready groups, Updated the live groups whose
	// pods are all at Spec.Revision, Outdated the others.
	Replicas, Ready, Updated, Outdated int32
	// Unavailable is Desired minus the Ready groups, at least 0.
	Unavailable int32
	// Available counts Ready groups at Spec.Revision that are not in a
	// failure streak (rule 6's count is 0): what rule 9 measures progress
	// on, so a crash-looping group that is Ready for a moment is not
	// progress.
	Available int32
	// Stalled: the component made no progress for ProgressDeadline (rule
	// 9). TrackProgress sets both; Next leaves them zero.
	Stalled          bool
	ProgressDeadline time.Duration
	// Unschedulable counts groups with an unschedulable pod;
	// UnschedulableMessage is the scheduler's message for the first one.
	Unschedulable        int32
	UnschedulableMessage string
	// Stuck counts groups with a stuck pod (Pod.Stuck); StuckMessage is the
	// first one's.
	Stuck        int32
	StuckMessage string
	// Progressing is "" when the component is at rest, else one of the
	// Progress* reasons.
	Progressing string
	// Failing lists groups with failing pods, by ordinal.
	Failing []Failure
}

// Recovery is the backoff memory of one group: how many recoveries in a
// row, and when the last one was.
type Recovery struct {
	Count int32
	Last  time.Time
}

// Backoff is the backoff memory of a component's groups, by ordinal. The
// caller keeps the one Next returned and passes it to the next call.
type Backoff map[int32]Recovery

// Step is the next step toward the Spec.
type Step struct {
	Create []PodID
	Delete []PodRef
	// Requeue is when to call Next again if no pod changes; 0: no timer.
	Requeue time.Duration
	Events  []Event
	Status  Status
	Backoff Backoff
	// Pairs is, with Spec.Pair, the component's Range per pairing after
	// this step: the next role's Pair.Other, and the status's pairings.
	Pairs map[string]Range
	// RouterFirst are the pairings whose last group this step holds until
	// their routers are gone (rule 13): the router's Pair.Retire.
	RouterFirst map[string]bool
}
