package realnode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/api/v1beta1"
)

// An image the node does not have (and cannot pull: the local node's
// registries are closed) shows in the service's status, with its name.
func TestMissingImageShowsInStatus(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	ns := newNamespace(t, "badimage")
	c := berthClient(t)
	applyTestEngineRuntime(t)
	const missing = "ghcr.io/berthdev/no-such-engine:0.0.0"
	newChatService(t, c, ns, "broken", 1, func(isvc *v1beta1.InferenceService) {
		isvc.Spec.Engine.Runner = &v1beta1.RunnerSpec{Image: missing}
	})

	var status string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := c.OmeV1beta1().InferenceServices(ns).Get(ctx, "broken", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		b, _ := json.Marshal(got.Status)
		status = string(b)
		return strings.Contains(status, missing), nil
	})
	require.NoError(t, err, "the status never named the missing image %s: %s", missing, status)
	t.Logf("status: %s", status)
}
