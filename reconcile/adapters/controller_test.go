package adapters

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	berthinformers "github.com/berthdev/berth/api/client/informers/externalversions"
	"github.com/berthdev/berth/api/v1beta1"
)

func sidecarPod(name, ip string, port int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: map[string]string{v1beta1.LabelInferenceService: "svc"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "engine"}, {Name: "engine-runtime", Ports: []corev1.ContainerPort{{Name: "sidecar", ContainerPort: port}}}},
			Volumes: []corev1.Volume{{Name: "lora", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
				Items: []corev1.DownwardAPIVolumeFile{{Path: "adapters.json", FieldRef: &corev1.ObjectFieldSelector{FieldPath: annotationPath}}}}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
}

func TestSyncAnnotatesPodsAndWritesStatus(t *testing.T) {
	sidecar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"loaded":[{"name":"sql","source":"/a"}],"failed":[{"name":"bad","reason":"no adapter_config.json"}],"desired":2}`))
	}))
	defer sidecar.Close()
	host, portS, err := net.SplitHostPort(sidecar.Listener.Addr().String())
	require.NoError(t, err)
	port, _ := strconv.Atoi(portS)

	isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "team"},
		Spec: v1beta1.InferenceServiceSpec{Adapters: []v1beta1.LoRAAdapter{{Name: "sql", Source: "/a"}, {Name: "bad", Source: "/b"}}}}
	plain := sidecarPod("svc-router-0", host, int32(port))
	plain.Spec.Volumes = nil
	pending := sidecarPod("svc-engine-1", "", int32(port))
	pending.Status.Phase = corev1.PodPending
	kube := kubefake.NewClientset(sidecarPod("svc-engine-0", host, int32(port)), pending, plain)
	berth := berthfake.NewSimpleClientset(isvc)
	shared := berthinformers.NewSharedInformerFactory(berth, 0)
	c := New(kube, berth, shared, Options{Log: nil})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shared.Start(ctx.Done())
	c.podInf.Start(ctx.Done())
	require.Eventually(t, c.Synced, 5*time.Second, 10*time.Millisecond)

	again, err := c.sync(ctx, "team/svc")
	require.NoError(t, err)
	assert.True(t, again, "a service with adapters is polled")

	for name, want := range map[string]string{"svc-engine-0": `[{"name":"sql","source":"/a"},{"name":"bad","source":"/b"}]`,
		"svc-engine-1": `[{"name":"sql","source":"/a"},{"name":"bad","source":"/b"}]`, "svc-router-0": ""} {
		p, err := kube.CoreV1().Pods("team").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, want, p.Annotations[v1beta1.AnnotationLoRAAdapters], name)
	}
	got, err := berth.OmeV1beta1().InferenceServices("team").Get(ctx, "svc", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []v1beta1.PodAdapters{
		{Pod: "svc-engine-0", Loaded: []string{"sql"}, Failed: []v1beta1.AdapterFailure{{Name: "bad", Reason: "no adapter_config.json"}}},
		{Pod: "svc-engine-1", Error: "pod not running yet"},
	}, got.Status.Adapters)
}

func TestAnnotationAndHelpers(t *testing.T) {
	a, err := Annotation(nil)
	require.NoError(t, err)
	assert.Equal(t, "[]", a, "no adapters is an empty list: the sidecar unloads everything")
	assert.Equal(t, int32(DefaultSidecarPort), SidecarPort(&corev1.Pod{}))
	assert.False(t, Projects(&corev1.Pod{}))
	projected := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "a", FieldRef: &corev1.ObjectFieldSelector{FieldPath: annotationPath}}}}}}}}}}}}
	assert.True(t, Projects(projected))
	assert.True(t, Idle([]v1beta1.PodAdapters{{Pod: "p", Error: "x"}}))
	assert.False(t, Idle([]v1beta1.PodAdapters{{Pod: "p", Loaded: []string{"a"}}}))
	assert.True(t, Equal(nil, []v1beta1.PodAdapters{}))
}
