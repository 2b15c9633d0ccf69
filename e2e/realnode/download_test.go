package realnode

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/node"
	"github.com/berthdev/berth/internal/hubtest"
	"github.com/berthdev/berth/merge"
)

// The local Hugging Face Hub and MinIO-style S3 server, listening on the
// real node's gateway so pods (the reconciler's discovery and the
// downloader init containers) reach them. Started by TestMain with the node.
var (
	hub *hubtest.Server
	s3  *hubtest.S3Server
)

// The servers' ports: fixed (one real node per machine owns the gateway),
// because testdata/kustomize allows namespaced models to name exactly these
// endpoints (--model-namespaced-endpoints).
const hubPort, s3Port = "18900", "18901"

// startModelServers serves hubtest's tiny models (a public and a gated
// one) on the Hub and the public one on S3.
func startModelServers() error {
	var err error
	if hub, err = hubtest.NewServerAt(net.JoinHostPort(node.GatewayIP, hubPort), hubtest.Tiny(false), hubtest.Tiny(true)); err != nil {
		return err
	}
	if s3, err = hubtest.NewS3ServerAt(net.JoinHostPort(node.GatewayIP, s3Port), hubtest.Tiny(false)); err != nil {
		hub.Close()
		return err
	}
	return nil
}

func stopModelServers() {
	if hub != nil {
		hub.Close()
	}
	if s3 != nil {
		s3.Close()
	}
}

// downloadedService creates a BaseModel with storage and secret, and an
// InferenceService on berth-test-engine serving it from the real node,
// and waits until it answers; it returns the reply and the engine pod.
func downloadedService(t *testing.T, ns string, storage *v1beta1.StorageSpec, secret map[string]string) (string, *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	c := berthClient(t)
	applyTestEngineRuntime(t)
	_, err := env.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: *storage.Key},
		StringData: secret}, metav1.CreateOptions{})
	require.NoError(t, err)
	// As OME writes models: only the storage; berth learns the rest from
	// the model's files.
	_, err = c.OmeV1beta1().BaseModels(ns).Create(ctx, &v1beta1.BaseModel{ObjectMeta: metav1.ObjectMeta{Name: "tiny", Namespace: ns},
		Spec: v1beta1.BaseModelSpec{Storage: storage}}, metav1.CreateOptions{})
	require.NoError(t, err)
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: ns},
		Spec: v1beta1.InferenceServiceSpec{
			Model:   &v1beta1.ModelRef{Name: "tiny", Kind: ptr("BaseModel")},
			Runtime: &v1beta1.ServingRuntimeRef{Name: "berth-test-engine-rt"},
			Engine:  &v1beta1.EngineSpec{},
		},
	}
	isvc.Spec.Engine.NodeSelector, isvc.Spec.Engine.Tolerations = node.Placement()
	_, err = c.OmeV1beta1().InferenceServices(ns).Create(ctx, isvc, metav1.CreateOptions{})
	require.NoError(t, err)
	waitServiceReady(t, c, ns, "chat", 3*time.Minute)
	pod, err := env.Kube.CoreV1().Pods(ns).Get(ctx, "chat-engine-0", metav1.GetOptions{})
	require.NoError(t, err)
	return chatFromPod(t, ns, "client", "http://chat."+ns+".svc"), pod
}

// assertDownloaded checks the pod's downloader ran to success and says
// what it fetched.
func assertDownloaded(t *testing.T, pod *corev1.Pod, uri string) {
	t.Helper()
	require.NotEmpty(t, pod.Status.InitContainerStatuses)
	st := pod.Status.InitContainerStatuses[0]
	require.Equal(t, merge.ModelDownloaderName, st.Name)
	require.NotNil(t, st.State.Terminated)
	assert.Zero(t, st.State.Terminated.ExitCode)
	logs, err := env.Kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: merge.ModelDownloaderName}).DoRaw(context.Background())
	require.NoError(t, err)
	t.Logf("downloader (%s): %s", pod.Spec.InitContainers[0].Image, lastLine(string(logs)))
	assert.Contains(t, string(logs), uri)
	for _, v := range pod.Spec.Volumes {
		if v.Name == merge.ModelVolumeName {
			require.NotNil(t, v.EmptyDir, "a downloaded model lives in an emptyDir")
			require.NotNil(t, v.EmptyDir.SizeLimit, "sized from what discovery listed (status.discovered.downloadBytes)")
			assert.GreaterOrEqual(t, v.EmptyDir.SizeLimit.Value(), int64(218_446), "room for every file downloaded")
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// A gated model on the Hub, its token in a Secret under `token` as OME
// users write it: discovered, downloaded into /mnt/models by berth's
// downloader, served.
func TestGatedModelDownloadsOnRealNode(t *testing.T) {
	needNode(t)
	ns := newNamespace(t, "gated")
	uri := "hf://" + hubtest.TinyPrivateID
	reply, pod := downloadedService(t, ns, &v1beta1.StorageSpec{StorageURI: ptr(uri), Key: ptr("hf-token"),
		Parameters: map[string]string{"endpoint": hub.URL}}, map[string]string{"token": hubtest.Token})
	assertDownloaded(t, pod, hubtest.TinyPrivateID)
	assert.Contains(t, reply, "LlamaForCausalLM", "the engine read the downloaded config.json")
}

// A model on a MinIO-style S3 endpoint, its keys in a Secret: downloaded
// and served.
func TestS3ModelDownloadsOnRealNode(t *testing.T) {
	needNode(t)
	ns := newNamespace(t, "s3")
	uri := "s3://" + hubtest.S3Bucket + "/" + hubtest.TinyID
	reply, pod := downloadedService(t, ns, &v1beta1.StorageSpec{StorageURI: ptr(uri), Key: ptr("s3-keys"),
		Parameters: map[string]string{"endpoint": s3.URL, "region": hubtest.S3Region, "pathStyle": "true"}},
		map[string]string{"AWS_ACCESS_KEY_ID": hubtest.S3AccessKeyID, "AWS_SECRET_ACCESS_KEY": hubtest.S3SecretAccessKey})
	assertDownloaded(t, pod, hubtest.TinyID)
	assert.Contains(t, reply, "LlamaForCausalLM")
}
