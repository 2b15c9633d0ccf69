package realnode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// A multi-node group (a leader and two workers) on the real node: each
// worker resolves the leader's address (BERTH_LEADER_ADDRESS, a name of
// the group's headless Service) through CoreDNS and joins it, and the
// group turns Ready only then.
func TestMultiNodeGroupResolvesLeaderByDNS(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	ns := newNamespace(t, "multinode")
	c := berthClient(t)
	applyTestEngineRuntime(t)
	newChatService(t, c, ns, "group", 1, onRuntime("berth-test-engine-multinode-rt"))
	waitServiceReady(t, c, ns, "group", 3*time.Minute)

	leader := merge.PodName("group", v1beta1.ComponentEngine, merge.GroupIdentity{GroupIndex: 0, Role: merge.RoleLeader})
	address := merge.LeaderAddress("group", ns, v1beta1.ComponentEngine, 0)
	logs := func(pod string) string {
		out, err := env.Kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx)
		require.NoError(t, err)
		return string(out)
	}
	leaderLog := logs(leader)
	for w := 1; w <= 2; w++ {
		worker := merge.PodName("group", v1beta1.ComponentEngine, merge.GroupIdentity{GroupIndex: 0, Role: merge.RoleWorker, WorkerIndex: w})
		workerLog := logs(worker)
		assert.Contains(t, workerLog, "joined the leader", worker)
		assert.Contains(t, workerLog, "dist_init_addr="+address+":5000", "%s dialled the leader by its DNS name", worker)
		assert.Contains(t, leaderLog, "pod="+worker, "the leader saw %s join", worker)
		for _, line := range strings.Split(workerLog, "\n") {
			if strings.Contains(line, "joined the leader") {
				t.Logf("%s: %s", worker, line)
			}
		}
	}
	assert.Contains(t, leaderLog, "every rank joined")
}
