package testengine

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// EnvKubeconfigForTests names an admin kubeconfig of a disposable cluster;
// with it TestDiscoveryAgainstAPIServer runs against a real kube-apiserver.
const EnvKubeconfigForTests = "BERTH_TEST_ENGINE_KUBECONFIG"

// TestDiscoveryAgainstAPIServer runs the router's discovery against a real
// kube-apiserver with real RBAC, as a pod's ServiceAccount (impersonated):
// forbidden first (as a ServiceAccount without a Role is), then, with a
// Role, pods becoming workers when their status says Running and Ready,
// and leaving when they stop being Ready or are deleted. The pods name a
// scheduler that does not exist, so only this test writes their status.
func TestDiscoveryAgainstAPIServer(t *testing.T) {
	path := os.Getenv(EnvKubeconfigForTests)
	if path == "" {
		t.Skipf("set %s to an admin kubeconfig of a disposable cluster to run discovery against a real kube-apiserver", EnvKubeconfigForTests)
	}
	admin, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	kc, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ns := fmt.Sprintf("berth-test-engine-%d", time.Now().UnixNano()%1_000_000)
	_, err = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = kc.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	_, err = kc.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "router"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	asRouter := rest.CopyConfig(admin)
	asRouter.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":router",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	routerClient, err := kubernetes.NewForConfig(asRouter)
	require.NoError(t, err)

	cfg, err := Parse([]string{"python3", "-m", "sglang_router.launch_router", "--pd-disaggregation", "--service-discovery",
		"--service-discovery-namespace", ns, "--service-discovery-port", "8080",
		"--prefill-selector", "component=engine", "--decode-selector", "component=decoder"})
	require.NoError(t, err)
	r, err := NewRouter(cfg, nil)
	require.NoError(t, err)
	r.StartDiscovery(ctx, routerClient)

	require.Eventually(t, func() bool { return len(r.discoveryProblems()) == 2 }, 30*time.Second, 50*time.Millisecond)
	assert.Contains(t, strings.Join(r.discoveryProblems(), ";"), "forbidden")
	assert.Equal(t, 503, healthStatus(t, r))

	grantPodReading(ctx, t, kc, ns)
	// The reflectors retry with backoff: allow for it.
	require.Eventually(t, func() bool { return len(r.discoveryProblems()) == 0 }, 90*time.Second, 100*time.Millisecond,
		"%v", r.discoveryProblems())
	assert.Equal(t, 200, healthStatus(t, r))

	pods := kc.CoreV1().Pods(ns)
	runningPod(ctx, t, pods, "engine-0", "10.244.7.1", map[string]string{"component": "engine"}, map[string]string{DefaultBootstrapPortAnno: "9001"})
	runningPod(ctx, t, pods, "decoder-0", "10.244.7.2", map[string]string{"component": "decoder"}, nil)
	runningPod(ctx, t, pods, "other-0", "10.244.7.3", map[string]string{"component": "other"}, nil)
	want := map[string]string{"http://10.244.7.1:8080": RolePrefill, "http://10.244.7.2:8080": RoleDecode}
	require.Eventually(t, func() bool { return assert.ObjectsAreEqual(want, urls(r.workers.all())) }, 30*time.Second, 50*time.Millisecond,
		"%v", r.workers.all())
	p, _ := r.workers.pick(RolePrefill)
	assert.Equal(t, 9001, p.BootstrapPort)

	d, err := pods.Get(ctx, "decoder-0", metav1.GetOptions{})
	require.NoError(t, err)
	d.Status.Conditions[0].Status = corev1.ConditionFalse
	_, err = pods.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, pods.Delete(ctx, "engine-0", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	require.Eventually(t, func() bool { return len(r.workers.all()) == 0 }, 30*time.Second, 50*time.Millisecond, "%v", r.workers.all())
}

func grantPodReading(ctx context.Context, t *testing.T, kc kubernetes.Interface, ns string) {
	t.Helper()
	_, err := kc.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kc.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "router-reads-pods"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "router", Namespace: ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// runningPod creates a pod no scheduler or kubelet will touch and writes
// its status as a kubelet would for a running, ready container.
func runningPod(ctx context.Context, t *testing.T, pods interface {
	Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error)
	UpdateStatus(context.Context, *corev1.Pod, metav1.UpdateOptions) (*corev1.Pod, error)
}, name, ip string, labels, annotations map[string]string) {
	t.Helper()
	p, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{SchedulerName: "berth-test-engine-no-scheduler",
			Containers: []corev1.Container{{Name: "engine", Image: "berth-test-engine"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}}
	_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
}
