package merge

import (
	"fmt"
	"math/rand/v2"
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

func TestNames(t *testing.T) {
	assert.Equal(t, "chat-engine-3", PodName("chat", "engine", GroupIdentity{GroupIndex: 3}))
	assert.Equal(t, "chat-engine-3-0", PodName("chat", "engine", GroupIdentity{GroupIndex: 3, Role: RoleLeader}))
	assert.Equal(t, "chat-decoder-0-2", PodName("chat", "decoder", GroupIdentity{Role: RoleWorker, WorkerIndex: 2}))
	assert.Equal(t, "chat-engine-1", GroupServiceName("chat", "engine", 1))
	assert.Equal(t, "chat-engine-1-0.chat-engine-1.team-a", LeaderAddress("chat", "team-a", "engine", 1))
}

func TestSkeletonPod(t *testing.T) {
	svc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "llm", UID: "u-1", Labels: map[string]string{"team": "x"}}}
	g := GroupIdentity{GroupIndex: 2, Role: RoleWorker, WorkerIndex: 1, GroupSize: 3, LeaderAddress: LeaderAddress("ds", "llm", "engine", 2)}
	pod := SkeletonPod(svc, v1beta1.ComponentEngine, g)
	assert.Equal(t, "ds-engine-2-1", pod.Name)
	assert.Equal(t, "llm", pod.Namespace)
	assert.Equal(t, map[string]string{
		v1beta1.LabelInferenceService: "ds", v1beta1.LabelComponent: "engine", v1beta1.LabelGroupIndex: "2",
		v1beta1.LabelRole: "worker", v1beta1.LabelWorkerIndex: "1",
	}, pod.Labels, "identity labels only: the service's own labels are not copied")
	require.Len(t, pod.OwnerReferences, 1)
	ref := pod.OwnerReferences[0]
	assert.Equal(t, "ome.io/v1beta1", ref.APIVersion)
	assert.Equal(t, "InferenceService", ref.Kind)
	assert.Equal(t, "ds", ref.Name)
	assert.EqualValues(t, "u-1", ref.UID)
	assert.True(t, *ref.Controller)
	assert.True(t, *ref.BlockOwnerDeletion)
	assert.Equal(t, "ds-engine-2-1", pod.Spec.Hostname)
	assert.Equal(t, "ds-engine-2", pod.Spec.Subdomain)
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	assert.Equal(t, DefaultRunnerName, c.Name)
	assert.Empty(t, c.Image, "the pod webhook sets the image")
	assert.Contains(t, c.Env, corev1.EnvVar{Name: EnvGroupSize, Value: "3"})
	assert.Contains(t, c.Env, corev1.EnvVar{Name: EnvLeaderAddress, Value: "ds-engine-2-0.ds-engine-2.llm"})

	single := SkeletonPod(&v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "a"}}, v1beta1.ComponentRouter, GroupIdentity{GroupIndex: 1})
	assert.Equal(t, "chat-router-1", single.Name)
	assert.Empty(t, single.OwnerReferences, "no UID, no owner reference")
	assert.Empty(t, single.Spec.Hostname)
	assert.Empty(t, single.Spec.Subdomain)
	assert.Empty(t, single.Spec.Containers[0].Env)
	assert.NotContains(t, single.Labels, v1beta1.LabelRole)
	assert.NotContains(t, single.Labels, v1beta1.LabelWorkerIndex)
}

// randomGroup is a valid group identity: a single pod (size and leader not
// recorded), or a leader or worker of a group of 1 + workers pods.
func randomGroup(rng *rand.Rand) GroupIdentity {
	g := GroupIdentity{GroupIndex: rng.IntN(1200)}
	if rng.IntN(3) == 0 {
		return g
	}
	workers := rng.IntN(8)
	g.GroupSize = 1 + workers
	g.LeaderAddress = fmt.Sprintf("leader-%d.svc", rng.IntN(100))
	g.Role = RoleLeader
	if workers > 0 && rng.IntN(2) == 0 {
		g.Role, g.WorkerIndex = RoleWorker, 1+rng.IntN(workers)
	}
	return g
}

// TestSkeletonPodProperties: GroupIdentityFromPod inverts SkeletonPod, the
// names are what PodName says, and ComposePod of a skeleton is idempotent
// and keeps the identity, over random groups and every golden case.
func TestSkeletonPodProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dir := range successCases(t) {
		in, _ := loadCase(t, dir)
		for i := 0; i < 30; i++ {
			g := randomGroup(rng)
			pod := SkeletonPod(in.Service, in.Component, g)
			got, err := GroupIdentityFromPod(pod)
			require.NoError(t, err)
			require.Equal(t, g, got, "%s %+v", dir, g)
			require.Equal(t, PodName(in.Service.Name, in.Component, g), pod.Name)

			in.Group = g
			require.NoError(t, ComposePod(in, pod), dir)
			once := mustYAML(t, pod)
			require.NoError(t, ComposePod(in, pod), dir)
			require.Equal(t, once, mustYAML(t, pod), "%s %+v: composing a composed skeleton changes nothing", dir, g)
			got, err = GroupIdentityFromPod(pod)
			require.NoError(t, err)
			require.Equal(t, g, got, "%s %+v: the composed pod keeps its identity", dir, g)
		}
	}
}
