package plan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

type observeCase struct {
	name   string
	pod    *corev1.Pod
	status corev1.PodStatus
	want   Pod
	err    string
}

// observeBase is a pod named svc-engine-2-1 with the given labels and annotations.
func observeBase(labels, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-engine-2-1", UID: "u1", Labels: labels, Annotations: ann},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func runObserve(t *testing.T, cases []observeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.status.Phase != "" {
				tc.pod.Status = tc.status
			}
			got, err := ObservePod(tc.pod)
			assert.Equal(t, tc.want, got)
			if tc.err == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.err)
			}
		})
	}
}

func TestObservePodStatus(t *testing.T) {
	base := observeBase
	ids := map[string]string{v1beta1.LabelGroupIndex: "2", v1beta1.LabelRole: "worker", v1beta1.LabelWorkerIndex: "1"}
	runObserve(t, []observeCase{
		{name: "a Ready worker",
			pod: base(ids, map[string]string{v1beta1.AnnotationRevision: "r1", v1beta1.AnnotationRecreateCount: "2"}),
			status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(-time.Minute)}}},
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Group: 2, Role: "worker", Worker: 1, Revision: "r1",
				Phase: corev1.PodRunning, Ready: true, ReadySince: t0.Add(-time.Minute), RecreateCount: 2}},
		{name: "a crash-looping pod: restarts of all containers, not Ready since, the kubelet's reason",
			pod: base(map[string]string{v1beta1.LabelGroupIndex: "0"}, nil),
			status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: at(-3 * time.Minute)}},
				InitContainerStatuses: []corev1.ContainerStatus{{RestartCount: 1}},
				ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 4,
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", FinishedAt: at(-time.Minute)}}}}},
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Group: 0, Phase: corev1.PodRunning, Restarts: 5,
				FailingSince: t0.Add(-3 * time.Minute), Reason: "CrashLoopBackOff"}},
		{name: "restarting without a Ready condition: failing since the last termination",
			pod: base(map[string]string{v1beta1.LabelGroupIndex: "0"}, nil),
			status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 1,
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", FinishedAt: at(-time.Minute)}}}}},
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Phase: corev1.PodRunning, Restarts: 1,
				FailingSince: t0.Add(-time.Minute), Reason: "OOMKilled"}},
		{name: "a Failed, evicted pod",
			pod: base(map[string]string{v1beta1.LabelGroupIndex: "0"}, nil),
			status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted",
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: at(-time.Second)}}},
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Phase: corev1.PodFailed, FailingSince: t0.Add(-time.Second), Reason: "Evicted"}},
		{name: "unschedulable",
			pod: base(map[string]string{v1beta1.LabelGroupIndex: "1"}, nil),
			status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/19 nodes are available: 19 Insufficient nvidia.com/gpu."}}},
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Group: 1, Phase: corev1.PodPending,
				Unschedulable: "0/19 nodes are available: 19 Insufficient nvidia.com/gpu."}},
		{name: "an image the node cannot get: stuck, with the kubelet's message naming the image",
			pod: base(map[string]string{v1beta1.LabelGroupIndex: "1"}, nil),
			status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "ome-container",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
					Message: `Back-off pulling image "ghcr.io/x/engine:1"`}}}}},
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Group: 1, Phase: corev1.PodPending, Reason: "ImagePullBackOff",
				Stuck: `container ome-container ImagePullBackOff: Back-off pulling image "ghcr.io/x/engine:1"`}},
		{name: "a pod being created is not failing and has no reason",
			pod: base(map[string]string{v1beta1.LabelGroupIndex: "1"}, nil),
			status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}},
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Group: 1, Phase: corev1.PodPending}},
	})
}

func TestObservePodIdentity(t *testing.T) {
	base := observeBase
	runObserve(t, []observeCase{
		{name: "no group index: extra",
			pod:  base(map[string]string{v1beta1.LabelRole: "worker"}, nil),
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Group: -1, Role: "worker", Phase: corev1.PodRunning},
			err:  `pod ns/svc-engine-2-1: label ome.io/group-index="" must be a non-negative integer`},
		{name: "a bad worker index and role",
			pod:  base(map[string]string{v1beta1.LabelGroupIndex: "1", v1beta1.LabelWorkerIndex: "-1", v1beta1.LabelRole: "boss"}, nil),
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Group: -1, Role: "boss", Worker: -1, Phase: corev1.PodRunning},
			err:  `label ome.io/role="boss" must be leader, worker or absent`},
		{name: "a bad recreate count reads as 0 and keeps the pod",
			pod:  base(map[string]string{v1beta1.LabelGroupIndex: "1"}, map[string]string{v1beta1.AnnotationRecreateCount: "many"}),
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Group: 1, Phase: corev1.PodRunning},
			err:  `annotation ome.io/recreate-count="many" must be a non-negative integer; read as 0`},
		{name: "terminating",
			pod: func() *corev1.Pod {
				p := base(map[string]string{v1beta1.LabelGroupIndex: "3"}, nil)
				now := metav1.NewTime(t0)
				p.DeletionTimestamp = &now
				return p
			}(),
			want: Pod{Name: "svc-engine-2-1", UID: "u1", Group: 3, Phase: corev1.PodRunning, Terminating: true}},
	})
	withEnv := observeBase(map[string]string{v1beta1.LabelGroupIndex: "0", v1beta1.LabelRole: "leader"}, nil)
	withEnv.Spec.InitContainers = []corev1.Container{{Env: []corev1.EnvVar{{Name: "LWS_GROUP_SIZE", Value: "4"}}}}
	withEnv.Spec.Containers = []corev1.Container{{Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "BERTH_GROUP_SIZE", Value: "3"}}}}
	got, err := ObservePod(withEnv)
	assert.NoError(t, err)
	assert.Equal(t, int32(3), got.GroupSize, "BERTH_GROUP_SIZE first")
	withEnv.Spec.Containers = nil
	got, _ = ObservePod(withEnv)
	assert.Equal(t, int32(4), got.GroupSize, "then LWS_GROUP_SIZE, from any container")
	withEnv.Spec.InitContainers[0].Env[0].Value = "zero"
	got, _ = ObservePod(withEnv)
	assert.Equal(t, int32(0), got.GroupSize, "unknown")

	_, err = ObservePod(nil)
	assert.Error(t, err)
}
