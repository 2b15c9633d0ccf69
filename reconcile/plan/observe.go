package plan

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// ObservePod reads what the planner needs from a pod of the component:
// identity from the labels ome.io/group-index, ome.io/role and
// ome.io/worker-index, the annotations ome.io/revision and
// ome.io/recreate-count, and its status. The Pod is always usable; the
// error says which label or annotation is wrong. A pod whose group index
// or worker index cannot be read gets Group -1, so Next deletes it as
// extra (rule 1).
func ObservePod(pod *corev1.Pod) (Pod, error) {
	if pod == nil {
		return Pod{Group: -1}, errors.New("plan: no pod given")
	}
	out := Pod{
		Name: pod.Name, UID: string(pod.UID), Role: pod.Labels[v1beta1.LabelRole],
		Revision: pod.Annotations[v1beta1.AnnotationRevision], Pairing: pod.Labels[v1beta1.LabelPairing], Phase: pod.Status.Phase,
		Terminating: pod.DeletionTimestamp != nil, Reason: pod.Status.Reason,
	}
	var errs []error
	bad := func(kind, key, value, want string) {
		errs = append(errs, fmt.Errorf("pod %s/%s: %s %s=%q %s", pod.Namespace, pod.Name, kind, key, value, want))
	}
	group, gerr := readIndex(pod.Labels, v1beta1.LabelGroupIndex, false)
	worker, werr := readIndex(pod.Labels, v1beta1.LabelWorkerIndex, true)
	out.Group, out.Worker = group, worker
	if gerr != nil || werr != nil {
		out.Group = -1
	}
	if gerr != nil {
		bad("label", v1beta1.LabelGroupIndex, pod.Labels[v1beta1.LabelGroupIndex], "must be a non-negative integer; the reconciler sets it, the pod will be deleted")
	}
	if werr != nil {
		bad("label", v1beta1.LabelWorkerIndex, pod.Labels[v1beta1.LabelWorkerIndex], "must be a non-negative integer; the reconciler sets it, the pod will be deleted")
	}
	if !knownRole(out.Role) {
		bad("label", v1beta1.LabelRole, out.Role, "must be leader, worker or absent; the pod will be deleted")
	}
	if v, ok := pod.Annotations[v1beta1.AnnotationRecreateCount]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			bad("annotation", v1beta1.AnnotationRecreateCount, v, "must be a non-negative integer; read as 0")
		} else {
			out.RecreateCount = int32(n)
		}
	}
	out.GroupSize = groupSize(&pod.Spec)
	observeStatus(&pod.Status, &out)
	return out, errors.Join(errs...)
}

// The group env the reconciler and the webhook give every pod of a
// multi-pod group (package merge's EnvGroupSize and EnvLWSGroupSize).
const (
	envGroupSize    = "BERTH_GROUP_SIZE"
	envLWSGroupSize = "LWS_GROUP_SIZE"
)

// groupSize reads the group size from the first container that sets
// BERTH_GROUP_SIZE, else LWS_GROUP_SIZE; 0 when none does or it is not a
// positive number.
func groupSize(spec *corev1.PodSpec) int32 {
	for _, name := range []string{envGroupSize, envLWSGroupSize} {
		for _, c := range append(slices.Clone(spec.Containers), spec.InitContainers...) {
			for _, e := range c.Env {
				if e.Name == name && e.ValueFrom == nil {
					n, err := strconv.ParseInt(e.Value, 10, 32)
					if err != nil || n < 1 {
						return 0
					}
					return int32(n)
				}
			}
		}
	}
	return 0
}

// readIndex reads a non-negative int32 label; a missing one is an error
// unless optional (then 0).
func readIndex(labels map[string]string, key string, optional bool) (int32, error) {
	v, ok := labels[key]
	if !ok && optional {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return -1, fmt.Errorf("bad %s", key)
	}
	return int32(n), nil
}

// observeStatus reads readiness, restarts, the failure time and reason,
// and the scheduler's message.
func observeStatus(st *corev1.PodStatus, out *Pod) {
	var readyCond *corev1.PodCondition
	for i, c := range st.Conditions {
		switch {
		case c.Type == corev1.PodReady:
			readyCond = &st.Conditions[i]
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
			out.Unschedulable = c.Message
		}
	}
	if readyCond != nil && readyCond.Status == corev1.ConditionTrue {
		out.Ready, out.ReadySince = true, readyCond.LastTransitionTime.Time
	}
	var lastEnd time.Time
	for _, cs := range append(append([]corev1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...) {
		out.Restarts += cs.RestartCount
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t != nil && t.FinishedAt.After(lastEnd) {
				lastEnd = t.FinishedAt.Time
			}
		}
		if out.Reason == "" && !out.Ready {
			out.Reason = containerReason(cs)
		}
		if w := cs.State.Waiting; out.Stuck == "" && w != nil && stuckReasons[w.Reason] {
			out.Stuck = truncate(fmt.Sprintf("container %s %s: %s", cs.Name, w.Reason, w.Message), 300)
		}
	}
	if !failing(*out) {
		return
	}
	out.FailingSince = lastEnd
	if readyCond != nil && readyCond.Status != corev1.ConditionTrue && !readyCond.LastTransitionTime.IsZero() {
		out.FailingSince = readyCond.LastTransitionTime.Time
	}
}

// stuckReasons are the kubelet's waiting reasons that waiting does not
// resolve: the image cannot be had, or the container cannot be made.
var stuckReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// containerReason is the kubelet's reason for a container that is not
// well: waiting (but not merely starting), or terminated now or last time.
func containerReason(cs corev1.ContainerStatus) string {
	switch {
	case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" &&
		cs.State.Waiting.Reason != "ContainerCreating" && cs.State.Waiting.Reason != "PodInitializing":
		return cs.State.Waiting.Reason
	case cs.State.Terminated != nil && cs.State.Terminated.Reason != "" && cs.State.Terminated.Reason != "Completed":
		return cs.State.Terminated.Reason
	case cs.RestartCount > 0 && cs.LastTerminationState.Terminated != nil:
		return cs.LastTerminationState.Terminated.Reason
	}
	return ""
}
