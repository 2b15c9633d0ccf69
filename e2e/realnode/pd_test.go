package realnode

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/node"
)

// Prefill/decode on the real node: engine (prefill), decoder (decode) and
// berth-test-engine's router run; the router discovers both roles through
// the API with its pod's ServiceAccount, and a request through the front
// Service is prefilled on the engine and decoded on the decoder, which
// fetched the KV from the prefill's bootstrap port.
func TestPrefillDecodeServesOnRealNode(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	ns := newNamespace(t, "pd")
	c := berthClient(t)
	applyTestEngineRuntime(t)
	newChatService(t, c, ns, "pd", 1, onRuntime("berth-test-engine-pd-rt"), func(isvc *v1beta1.InferenceService) {
		isvc.Spec.Decoder = &v1beta1.DecoderSpec{}
		isvc.Spec.Decoder.NodeSelector, isvc.Spec.Decoder.Tolerations = node.Placement()
		isvc.Spec.Router = &v1beta1.RouterSpec{}
		isvc.Spec.Router.NodeSelector, isvc.Spec.Router.Tolerations = node.Placement()
	})
	waitServiceReady(t, c, ns, "pd", 3*time.Minute)

	router, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "pd-router-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "pd-router", router.Spec.ServiceAccountName, "the router discovers workers with the ServiceAccount berth made for it")

	reply := chatFromPod(t, ns, "client", "http://pd."+ns+".svc")
	t.Logf("reply through the router: %s", reply)
	assert.Contains(t, reply, "on pod pd-decoder-0", "decoded on the decoder")
	assert.Contains(t, reply, "prefilled on pod pd-engine-0", "prefilled on the engine")
}
