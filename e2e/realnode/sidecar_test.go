package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/node"
)

// routerWorker is one worker of the router's GET /workers.
type routerWorker struct {
	URL           string `json:"url"`
	WorkerType    string `json:"worker_type"`
	BootstrapPort *int   `json:"bootstrap_port"`
}

// applyProfiles applies deploy/profiles.
func applyProfiles(t *testing.T) {
	t.Helper()
	objs, err := devenv.Manifests("profiles")
	require.NoError(t, err)
	require.NoError(t, env.Applier.ApplyAll(context.Background(), objs))
}

// newSidecarService is a PD service on berth-test-engine-pd-sidecar-rt: a
// router that discovers nothing, and engine and decoder pods whose sidecars
// register them.
func newSidecarService(t *testing.T, c versioned.Interface, ns, name string, opts ...func(*v1beta1.InferenceService)) {
	t.Helper()
	applyProfiles(t)
	objs, err := devenv.Manifests("test-engine-sidecar")
	require.NoError(t, err)
	var applyErr error
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		applyErr = env.Applier.ApplyAll(ctx, objs) // the webhook may not see the new profiles yet
		return applyErr == nil, nil
	}), "%v", applyErr)
	opts = append([]func(*v1beta1.InferenceService){onRuntime("berth-test-engine-pd-sidecar-rt"), func(isvc *v1beta1.InferenceService) {
		isvc.Spec.Decoder = &v1beta1.DecoderSpec{}
		isvc.Spec.Decoder.NodeSelector, isvc.Spec.Decoder.Tolerations = node.Placement()
		isvc.Spec.Router = &v1beta1.RouterSpec{}
		isvc.Spec.Router.NodeSelector, isvc.Spec.Router.Tolerations = node.Placement()
	}}, opts...)
	newChatService(t, c, ns, name, 1, opts...)
	waitServiceReady(t, c, ns, name, 3*time.Minute)
}

// routerPod is the service's router pod once Running with an IP.
func routerPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	return waitPod(t, ns, name+"-router-0", 2*time.Minute, func(p *corev1.Pod) bool {
		return running(p) && p.Status.PodIP != "" && p.DeletionTimestamp == nil
	})
}

// listWorkers asks the router pod (by IP, from the host) for its workers.
func listWorkers(ip string) ([]routerWorker, error) {
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + ip + ":8080/workers")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /workers: %s", resp.Status)
	}
	var out struct {
		Workers []routerWorker `json:"workers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	return out.Workers, nil
}

// podWorkers is what the router should list for the service's engine and
// decoder pods: "<type> <url>", sorted.
func podWorkers(t *testing.T, ns, name string) []string {
	t.Helper()
	pods, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: v1beta1.LabelInferenceService + "=" + name})
	require.NoError(t, err)
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
			continue
		}
		switch p.Labels[v1beta1.LabelComponent] {
		case v1beta1.ComponentEngine:
			out = append(out, "prefill http://"+p.Status.PodIP+":8080")
		case v1beta1.ComponentDecoder:
			out = append(out, "decode http://"+p.Status.PodIP+":8080")
		}
	}
	sort.Strings(out)
	return out
}

func workerKeys(ws []routerWorker) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.WorkerType+" "+w.URL)
	}
	sort.Strings(out)
	return out
}

// waitWorkers polls the router until its workers are want (by
// podWorkers when want is nil) and returns how long that took.
func waitWorkers(t *testing.T, ip string, timeout time.Duration, want func() []string) time.Duration {
	t.Helper()
	start := time.Now()
	var last []string
	var lastWant []string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ws, err := listWorkers(ip)
		if err != nil {
			return false, nil
		}
		last, lastWant = workerKeys(ws), want()
		return strings.Join(last, ",") == strings.Join(lastWant, ","), nil
	})
	require.NoError(t, err, "router at %s lists %v, want %v", ip, last, lastWant)
	return time.Since(start)
}

func setDecoders(t *testing.T, c versioned.Interface, ns, name string, n int32) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		isvc, err := c.OmeV1beta1().InferenceServices(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		isvc.Spec.Decoder.MinReplicas, isvc.Spec.Decoder.MaxReplicas = &n, &n
		_, err = c.OmeV1beta1().InferenceServices(ns).Update(context.Background(), isvc, metav1.UpdateOptions{})
		return err
	}))
}

// sidecarRSS is the resident memory of each berth-engine-sidecar process
// on this host (the real node's containers are host processes).
func sidecarRSS() string {
	out, err := exec.Command("ps", "-C", "berth-engine-sidecar", "-o", "pid=,rss=").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("ps: %v %s", err, out)
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// The engine runtime sidecar on the real node, against berth-test-engine's
// router: each engine and decoder pod is in the router's worker list (the
// router discovers nothing itself), a restarted router lists them again
// within a bounded time, scaling the decoder from 1 to 3 groups reaches the
// router, and scaling back removes the deleted pods' workers (their
// sidecars unregister on SIGTERM; the stand-in router drops a worker only
// when asked to).
func TestEngineSidecarKeepsTheRouterInSyncOnRealNode(t *testing.T) {
	needNode(t)
	ns := newNamespace(t, "sidecar")
	c := berthClient(t)
	newSidecarService(t, c, ns, "sc")
	want := func() []string { return podWorkers(t, ns, "sc") }

	router := routerPod(t, ns, "sc")
	waitWorkers(t, router.Status.PodIP, 30*time.Second, want)
	ws, err := listWorkers(router.Status.PodIP)
	require.NoError(t, err)
	for _, w := range ws {
		if w.WorkerType == "prefill" {
			require.NotNil(t, w.BootstrapPort)
			assert.Equal(t, 8998, *w.BootstrapPort, "the prefill registers its bootstrap port")
		}
	}
	t.Logf("router lists %v; sidecar processes (pid rss KiB): %s", workerKeys(ws), sidecarRSS())

	// The router restarts (its pod is deleted and made again): it starts
	// with no worker and the sidecars' heartbeats (5s) register them again.
	require.NoError(t, env.Kube.CoreV1().Pods(ns).Delete(context.Background(), router.Name, metav1.DeleteOptions{}))
	deleted := time.Now()
	var fresh *corev1.Pod
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(ns).Get(ctx, router.Name, metav1.GetOptions{})
		if err != nil || p.UID == router.UID || p.Status.PodIP == "" {
			return false, nil
		}
		_, lerr := listWorkers(p.Status.PodIP)
		fresh = p
		return lerr == nil, nil
	}))
	answering := time.Since(deleted)
	healed := waitWorkers(t, fresh.Status.PodIP, 60*time.Second, want)
	t.Logf("router restart: the new router answered %s after the old pod's deletion; it listed every worker again %s later",
		answering.Round(time.Millisecond), healed.Round(time.Millisecond))
	assert.Less(t, healed, 30*time.Second, "a restarted router is healed within a bounded time")

	// Scaling the decoder from 1 to 3 groups reaches the router.
	setDecoders(t, c, ns, "sc", 3)
	scaled := time.Now()
	waitWorkers(t, fresh.Status.PodIP, 2*time.Minute, func() []string {
		w := want()
		if strings.Count(strings.Join(w, ","), "decode ") != 3 {
			return []string{"3 decoder pods with IPs"}
		}
		return w
	})
	t.Logf("scale 1 -> 3 decoder groups: the router listed 3 decode workers %s after the update", time.Since(scaled).Round(time.Millisecond))
	t.Logf("sidecar processes (pid rss KiB): %s", sidecarRSS())

	// Back to 1: the deleted pods' sidecars unregister them on SIGTERM.
	setDecoders(t, c, ns, "sc", 1)
	down := time.Now()
	waitWorkers(t, fresh.Status.PodIP, 2*time.Minute, func() []string {
		w := want()
		if strings.Count(strings.Join(w, ","), "decode ") != 1 {
			return []string{"1 decoder pod"}
		}
		return w
	})
	t.Logf("scale 3 -> 1: the router dropped the 2 deleted decoders %s after the update", time.Since(down).Round(time.Millisecond))
}

// engineAdapters lists the LoRA adapters the engine at ip serves (its
// /v1/models entries with a parent), asked from the host.
func engineAdapters(ip string) ([]string, error) {
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + ip + ":8080/v1/models")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var list struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	out := []string{}
	for _, m := range list.Data {
		if m.Parent != nil {
			out = append(out, m.ID)
		}
	}
	sort.Strings(out)
	return out, nil
}

func setAdapters(t *testing.T, c versioned.Interface, ns, name string, adapters ...v1beta1.LoRAAdapter) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		isvc, err := c.OmeV1beta1().InferenceServices(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		isvc.Spec.Adapters = adapters
		_, err = c.OmeV1beta1().InferenceServices(ns).Update(context.Background(), isvc, metav1.UpdateOptions{})
		return err
	}))
}

// waitAdapterStatus waits until status.adapters has an entry for each of
// pods with loaded adapters and failed names as given, and every engine
// serves exactly loaded; it returns how long that took.
func waitAdapterStatus(t *testing.T, c versioned.Interface, ns, name string, pods map[string]string, loaded, failed []string) time.Duration {
	t.Helper()
	start := time.Now()
	var last []v1beta1.PodAdapters
	var lastErr string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		isvc, err := c.OmeV1beta1().InferenceServices(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = isvc.Status.Adapters
		got := map[string]v1beta1.PodAdapters{}
		for _, e := range last {
			got[e.Pod] = e
		}
		for pod, ip := range pods {
			e := got[pod]
			var names []string
			for _, f := range e.Failed {
				names = append(names, f.Name)
			}
			if fmt.Sprint(e.Loaded) != fmt.Sprint(loaded) || fmt.Sprint(names) != fmt.Sprint(failed) {
				return false, nil
			}
			served, err := engineAdapters(ip)
			if err != nil || fmt.Sprint(served) != fmt.Sprint(loaded) {
				lastErr = fmt.Sprintf("%s serves %v (%v)", pod, served, err)
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "status.adapters %+v; %s; want loaded %v failed %v on %v", last, lastErr, loaded, failed, pods)
	return time.Since(start)
}

// podIdentity is a pod's UID and its containers' restart counts.
func podIdentity(t *testing.T, ns, name string) string {
	t.Helper()
	p, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	s := string(p.UID) + " rev=" + p.Annotations[v1beta1.AnnotationRevision]
	for _, cs := range p.Status.ContainerStatuses {
		s += fmt.Sprintf(" %s:%d", cs.Name, cs.RestartCount)
	}
	return s
}

// LoRA adapters on the real node: an adapter added to the service is
// loaded by every engine pod's sidecar without a restart (pod UIDs,
// revisions and restart counts unchanged); a failing load is in status
// with the engine's reason and leaves the others loaded; a removed adapter
// is unloaded; an engine killed and restarted by the kubelet, in the same
// pod, gets its adapters again from the sidecar. (The service gives a
// failing pod 5 minutes: with the default restartGracePeriodSeconds 0 the
// reconciler replaces a restarted pod that is not Ready yet
// (recoveryPolicy RoleRecreate), and the new pod's sidecar loads the
// adapters at its start, which would not show the reload.)
func TestEngineSidecarLoRAOnRealNode(t *testing.T) {
	needNode(t)
	ns := newNamespace(t, "lora")
	c := berthClient(t)
	newSidecarService(t, c, ns, "lora", func(isvc *v1beta1.InferenceService) {
		isvc.Spec.RestartGracePeriodSeconds = ptr(int64(300))
	})
	model, err := c.OmeV1beta1().BaseModels(ns).Get(context.Background(), "lora-model", metav1.GetOptions{})
	require.NoError(t, err)
	dir := strings.TrimPrefix(*model.Spec.Storage.StorageURI, "local://")
	for _, a := range []string{"sql", "chat"} {
		require.NoError(t, exec.Command("mkdir", "-p", dir+"/adapters/"+a).Run())
		require.NoError(t, exec.Command("sh", "-c", `echo '{"r":8,"peft_type":"LORA"}' > `+dir+"/adapters/"+a+"/adapter_config.json && chmod -R a+rX "+dir+"/adapters").Run())
	}
	pods := map[string]string{}
	before := map[string]string{}
	for _, name := range []string{"lora-engine-0", "lora-decoder-0"} {
		p := waitPod(t, ns, name, time.Minute, running)
		pods[name], before[name] = p.Status.PodIP, podIdentity(t, ns, name)
	}
	sql := v1beta1.LoRAAdapter{Name: "sql", Source: "/mnt/models/adapters/sql"}
	chat := v1beta1.LoRAAdapter{Name: "chat", Source: "/mnt/models/adapters/chat"}
	broken := v1beta1.LoRAAdapter{Name: "broken", Source: "/mnt/models/adapters/absent"}

	setAdapters(t, c, ns, "lora", sql)
	t.Logf("add sql: loaded on every engine pod and in status after %s", waitAdapterStatus(t, c, ns, "lora", pods, []string{"sql"}, nil).Round(time.Millisecond))

	setAdapters(t, c, ns, "lora", sql, chat, broken)
	t.Logf("add chat and a broken adapter: status after %s", waitAdapterStatus(t, c, ns, "lora", pods, []string{"chat", "sql"}, []string{"broken"}).Round(time.Millisecond))
	isvc, err := c.OmeV1beta1().InferenceServices(ns).Get(context.Background(), "lora", metav1.GetOptions{})
	require.NoError(t, err)
	for _, e := range isvc.Status.Adapters {
		if len(e.Failed) > 0 {
			assert.Contains(t, e.Failed[0].Reason, "absent", "the engine's reason")
			t.Logf("%s: failed %s: %s", e.Pod, e.Failed[0].Name, e.Failed[0].Reason)
		}
	}

	setAdapters(t, c, ns, "lora", chat)
	t.Logf("remove sql and broken: unloaded after %s", waitAdapterStatus(t, c, ns, "lora", pods, []string{"chat"}, nil).Round(time.Millisecond))
	for name, id := range before {
		assert.Equal(t, id, podIdentity(t, ns, name), "%s: same pod, same revision, no container restart", name)
	}

	killEngine(t, "lora-engine-0")
	killed := time.Now()
	restarted := waitPod(t, ns, "lora-engine-0", 2*time.Minute, func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != "engine-runtime" && cs.RestartCount > 0 && cs.Ready {
				return true
			}
		}
		return false
	})
	t.Logf("engine container restarted and Ready %s after the kill (pod %s, IP %s)", time.Since(killed).Round(time.Millisecond), restarted.UID, restarted.Status.PodIP)
	uid := restarted.UID
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("after the engine restart:\n%s", netnsDiag("lora-engine-0", pods["lora-engine-0"]))
		}
	})
	waitAdapterStatus(t, c, ns, "lora", pods, []string{"chat"}, nil)
	t.Logf("engine restart: its adapters were loaded again %s after the kill", time.Since(killed).Round(time.Millisecond))
	after, err := env.Kube.CoreV1().Pods(ns).Get(context.Background(), "lora-engine-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, uid, after.UID, "the same pod: the sidecar reloaded the restarted engine's adapters, no new pod did")
	t.Logf("sidecar processes (pid rss KiB): %s", sidecarRSS())
}

// enginePIDs are the engine processes of a pod on the real node (its
// containers are host processes): those with the pod's POD_NAME in their
// environment running sglang.launch_server.
func enginePIDs(pod string) []int {
	procs, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range procs {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err1 := os.ReadFile("/proc/" + e.Name() + "/environ")
		cmdline, err2 := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err1 != nil || err2 != nil {
			continue
		}
		if slices.Contains(strings.Split(string(environ), "\x00"), "POD_NAME="+pod) &&
			strings.Contains(string(cmdline), "sglang.launch_server") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killEngine kills the engine processes of a pod with SIGKILL, so the
// kubelet restarts the container.
func killEngine(t *testing.T, pod string) {
	t.Helper()
	pids := enginePIDs(pod)
	require.NotEmpty(t, pids, "no engine process of %s on this host", pod)
	for _, pid := range pids {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
}

// netnsDiag is what a pod's network namespace shows: its listening and
// established sockets and a request to the engine from inside it and from
// the host.
func netnsDiag(pod, ip string) string {
	pids := enginePIDs(pod)
	if len(pids) == 0 {
		return "no engine process"
	}
	pid := strconv.Itoa(pids[0])
	out := fmt.Sprintf("engine pids %v\n", pids)
	for _, args := range [][]string{
		{"nsenter", "-t", pid, "-n", "ss", "-tlnp"},
		{"nsenter", "-t", pid, "-n", "ss", "-tn", "state", "established"},
		{"nsenter", "-t", pid, "-n", "ip", "-br", "addr"},
		{"nsenter", "-t", pid, "-n", "curl", "-sS", "-m", "3", "http://127.0.0.1:8080/v1/models"},
		{"nsenter", "-t", pid, "-n", "curl", "-sS", "-m", "3", "http://" + ip + ":8080/v1/models"},
		{"curl", "-sS", "-m", "3", "http://" + ip + ":8080/v1/models"},
	} {
		b, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		out += fmt.Sprintf("$ %s\n%s(err %v)\n", strings.Join(args, " "), b, err)
	}
	return out
}
