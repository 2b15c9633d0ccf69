package merge

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// The gang schedulers' own keys: a pod joins a Volcano PodGroup through
// annotations and a coscheduling (scheduler-plugins) PodGroup through a
// label.
const (
	AnnotationVolcanoGroupName = "scheduling.k8s.io/group-name"
	AnnotationVolcanoTaskSpec  = "volcano.sh/task-spec"
	LabelCoschedulingPodGroup  = "scheduling.x-k8s.io/pod-group"
)

// RouterServiceAccountName is the ServiceAccount (and the Role and
// RoleBinding) the reconciler gives a service's router: <isvc>-router.
func RouterServiceAccountName(isvc string) string { return isvc + "-" + v1beta1.ComponentRouter }

// PodGroupName is the gang PodGroup of a component's group: the service's
// name for a prefill/decode service (engine and decoder form one gang),
// else the group's <isvc>-<component>-<g>.
func PodGroupName(isvc, component string, group int, prefillDecode bool) string {
	if prefillDecode {
		return isvc
	}
	return GroupServiceName(isvc, component, group)
}

// GangTaskName is a gang task: <component>-<group>, the key of a
// PodGroup's minTaskMember and a Volcano pod's task-spec.
func GangTaskName(component string, group int) string { return component + "-" + strconv.Itoa(group) }

// GangMember says whether a gang covers a component's pods: the engine's,
// and the decoder's of a prefill/decode service (engine and decoder form
// one gang); never the router's.
func GangMember(component string, prefillDecode bool) bool {
	return component == v1beta1.ComponentEngine || prefillDecode && component == v1beta1.ComponentDecoder
}

// NewGangMark is the mark of a pod of component's group under backend
// (Volcano or Coscheduling), or nil: without a backend, and for pods no
// gang covers (the router; the decoder unless the service is
// prefill/decode, whose engine and decoder form one gang).
func NewGangMark(backend v1beta1.GangScheduler, schedulerName, isvc, component string, group int, prefillDecode bool) *GangMark {
	if backend == "" || !GangMember(component, prefillDecode) {
		return nil
	}
	return &GangMark{Backend: backend, PodGroup: PodGroupName(isvc, component, group, prefillDecode),
		Task: GangTaskName(component, group), SchedulerName: schedulerName}
}

// GangMark puts a pod in its gang's PodGroup.
type GangMark struct {
	// Backend is Volcano or Coscheduling.
	Backend v1beta1.GangScheduler
	// PodGroup is the PodGroup's name (PodGroupName).
	PodGroup string
	// Task is Volcano's task-spec: <component>-<group> (GangTaskName).
	Task string
	// SchedulerName is set on the pod when not empty (gangPolicy alone
	// turned gang scheduling on, so the composed pod names no scheduler).
	SchedulerName string
}

// GroupPodOptions are what the reconciler adds to a group's pod outside
// its revision: none of them changes what the pod is composed from, so
// none of them rolls a group.
type GroupPodOptions struct {
	// RecreateCount is how many times in a row the group was recreated
	// (annotation ome.io/recreate-count; the recovery backoff reads it).
	RecreateCount int32
	// RouterServiceAccount is the account a router pod runs under, unless
	// the pod already names one ("" for none).
	RouterServiceAccount string
	// Gang is the pod's PodGroup mark; nil without gang scheduling.
	Gang *GangMark
	// Pairing is the pod's ome.io/pairing label (Pairing): engine and
	// decoder pods of a prefill/decode service; "" for none.
	Pairing string
}

// GroupPod is the pod the reconciler creates in slot (group, role,
// worker) of component t of isvc, before the pod webhook completes it:
// SkeletonPod (identity, owner, group env; the leader address of a
// multi-pod group), the labels OME's runtimes select on
// (OMECompatLabels), and MarkPod's additions. berth render builds its
// pods with the same function, so what it prints is what is created.
func GroupPod(isvc *v1beta1.InferenceService, t ComponentTopology, group int, role string, worker int, o GroupPodOptions) *corev1.Pod {
	g := GroupIdentity{GroupIndex: group, Role: role, WorkerIndex: worker}
	if t.MultiNode {
		g.GroupSize = int(t.Workers) + 1
		g.LeaderAddress = LeaderAddress(isvc.Name, isvc.Namespace, t.Component, group)
	}
	pod := SkeletonPod(isvc, t.Component, g)
	// Outside SkeletonPod (and so outside the revision): they reach new
	// pods without a roll.
	for k, v := range OMECompatLabels(t.Component, g) {
		pod.Labels[k] = v
	}
	if o.RecreateCount > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[v1beta1.AnnotationRecreateCount] = strconv.Itoa(int(o.RecreateCount))
	}
	MarkPod(pod, t.Component, o)
	return pod
}

// MarkPod adds to a pod of component what lies outside every revision:
// a router's ServiceAccount (when the pod names none: a runtime or the
// service may name another, which the pod webhook lays over it), the
// pairing label (Pairing) and the gang mark (Volcano's group-name and
// task-spec annotations, or coscheduling's label, and the backend's
// schedulerName when set).
func MarkPod(pod *corev1.Pod, component string, o GroupPodOptions) {
	if component == v1beta1.ComponentRouter && pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = o.RouterServiceAccount
	}
	markPairing(pod, o.Pairing)
	m := o.Gang
	if m == nil {
		return
	}
	switch m.Backend {
	case v1beta1.GangSchedulerVolcano:
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[AnnotationVolcanoGroupName] = m.PodGroup
		pod.Annotations[AnnotationVolcanoTaskSpec] = m.Task
	case v1beta1.GangSchedulerCoscheduling:
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[LabelCoschedulingPodGroup] = m.PodGroup
	}
	if m.SchedulerName != "" {
		pod.Spec.SchedulerName = m.SchedulerName
	}
}
