package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

func TestGroupIdentityFromPod(t *testing.T) {
	pod := func(labels map[string]string, env ...corev1.EnvVar) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Env: env}}},
		}
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		want    GroupIdentity
		wantErr string
	}{
		{name: "single pod group", pod: pod(map[string]string{v1beta1.LabelGroupIndex: "3"}), want: GroupIdentity{GroupIndex: 3}},
		{name: "worker with berth env",
			pod: pod(map[string]string{v1beta1.LabelGroupIndex: "1", v1beta1.LabelRole: "worker", v1beta1.LabelWorkerIndex: "2"},
				corev1.EnvVar{Name: EnvGroupSize, Value: "4"}, corev1.EnvVar{Name: EnvLeaderAddress, Value: "l.svc"}),
			want: GroupIdentity{GroupIndex: 1, Role: RoleWorker, WorkerIndex: 2, GroupSize: 4, LeaderAddress: "l.svc"}},
		{name: "LWS env as a fallback",
			pod:  pod(map[string]string{v1beta1.LabelRole: "leader"}, corev1.EnvVar{Name: EnvLWSGroupSize, Value: "2"}, corev1.EnvVar{Name: EnvLWSLeaderAddress, Value: "x"}),
			want: GroupIdentity{Role: RoleLeader, GroupSize: 2, LeaderAddress: "x"}},
		{name: "bad group index", pod: pod(map[string]string{v1beta1.LabelGroupIndex: "one"}),
			wantErr: `pod ns/p: label ome.io/group-index="one" is not a non-negative integer; the reconciler sets it, remove or fix it`},
		{name: "negative worker index", pod: pod(map[string]string{v1beta1.LabelWorkerIndex: "-1"}),
			wantErr: `pod ns/p: label ome.io/worker-index="-1" is not a non-negative integer; the reconciler sets it, remove or fix it`},
		{name: "bad role", pod: pod(map[string]string{v1beta1.LabelRole: "boss"}), wantErr: `pod ns/p: label ome.io/role="boss" must be leader or worker`},
		{name: "bad size", pod: pod(nil, corev1.EnvVar{Name: EnvGroupSize, Value: "0"}),
			wantErr: `pod ns/p: env BERTH_GROUP_SIZE="0" is not a positive integer; the reconciler sets it, remove or fix it`},
		{name: "nil pod", wantErr: "merge: no pod given"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GroupIdentityFromPod(tc.pod)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestGroupIdentityRoundTrip: what ComposePod writes, GroupIdentityFromPod reads.
func TestGroupIdentityRoundTrip(t *testing.T) {
	in, pod := loadCase(t, "testdata/multinode-worker")
	require.NoError(t, ComposePod(in, pod))
	got, err := GroupIdentityFromPod(pod)
	require.NoError(t, err)
	assert.Equal(t, in.Group, got)
}
