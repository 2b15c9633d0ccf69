package realnode

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/node"
	"github.com/berthdev/berth/internal/testing/e2eutil"
	"github.com/berthdev/berth/reconcile/plan"
)

// requester sends one chat request at a time through url, each from a new
// client pod on the real node (berth-test-engine chat, no retries) named
// prefix-N, until stopped, and counts the answers.
type requester struct {
	mu         sync.Mutex
	ok, failed int
	failures   []string
	stop, done chan struct{}
	ns, url    string
}

func startRequester(ns, url, prefix string) *requester {
	r := &requester{ns: ns, url: url, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for i := 0; ; i++ {
			select {
			case <-r.stop:
				return
			default:
			}
			ok, why := r.one(fmt.Sprintf("%s-%d", prefix, i))
			r.mu.Lock()
			if ok {
				r.ok++
			} else {
				r.failed++
				r.failures = append(r.failures, why)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

// one runs one client pod and reports whether its request was answered.
func (r *requester) one(name string) (bool, string) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "chat", Image: TestEngineImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"berth-test-engine", "chat", "--url", r.url}}},
	}}
	onRealNode(&pod.Spec)
	if _, err := env.Kube.CoreV1().Pods(r.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return false, name + ": " + err.Error()
	}
	var phase corev1.PodPhase
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.Kube.CoreV1().Pods(r.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, _ := env.Kube.CoreV1().Pods(r.ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	_ = env.Kube.CoreV1().Pods(r.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
	if phase != corev1.PodSucceeded {
		return false, fmt.Sprintf("%s: %s: %s", name, phase, logs)
	}
	return true, ""
}

func (r *requester) finish() (ok, failed int, failures []string) {
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok, r.failed, r.failures
}

// pdSampler lists the service's pods every 250 ms while the test runs
// and checks each sample: the worst skew of any pairing's Ready groups,
// whether a router's rendered selectors (--prefill-selector and
// --decode-selector items) match pods of a pairing other than its own,
// and whether a pairing with a live prefill and a live decode pod has no
// live router. A sample is a snapshot, not every transition.
type pdSampler struct {
	mu                 sync.Mutex
	samples, bothServe int
	worstSkew          int64
	worstAt            string
	mixed, unrouted    []string
	routers            map[string]string // router pod -> its pairing
	stop, done         chan struct{}
}

func startPDSampler(ns, svc string, r v1beta1.PrefillDecodeRatio) *pdSampler {
	s := &pdSampler{routers: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			list, err := env.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: v1beta1.LabelInferenceService + "=" + svc})
			if err == nil {
				s.sample(list.Items, r)
			}
		}
	}()
	return s
}

func (s *pdSampler) sample(pods []corev1.Pod, r v1beta1.PrefillDecodeRatio) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	ready := map[string]map[string]int32{v1beta1.ComponentEngine: {}, v1beta1.ComponentDecoder: {}}
	live := map[string]map[string]bool{v1beta1.ComponentEngine: {}, v1beta1.ComponentDecoder: {}}
	routed := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		c, q := p.Labels[v1beta1.LabelComponent], p.Labels[v1beta1.LabelPairing]
		switch {
		case c == v1beta1.ComponentRouter:
			s.routers[p.Name] = q
			if p.DeletionTimestamp == nil {
				routed[q] = true
			}
			for _, sel := range e2eutil.RouterSelectors(p) {
				for j := range pods {
					o := &pods[j]
					if labels.SelectorFromSet(sel).Matches(labels.Set(o.Labels)) && o.Labels[v1beta1.LabelPairing] != q {
						s.mixed = append(s.mixed, fmt.Sprintf("router %s (pairing %q) selects %s of pairing %q", p.Name, q, o.Name, o.Labels[v1beta1.LabelPairing]))
					}
				}
			}
		case live[c] != nil && p.DeletionTimestamp == nil:
			live[c][q] = true
			if e2eutil.PodReady(p) {
				ready[c][q]++
			}
		}
	}
	ptrs := make([]*corev1.Pod, len(pods))
	for i := range pods {
		ptrs[i] = &pods[i]
	}
	served := e2eutil.ServedPairings(ptrs)
	serving := 0
	for q := range live[v1beta1.ComponentEngine] {
		pr, dr := ready[v1beta1.ComponentEngine][q], ready[v1beta1.ComponentDecoder][q]
		if sk := r.Skew(pr, dr); sk > s.worstSkew {
			s.worstSkew, s.worstAt = sk, fmt.Sprintf("pairing %s: %d prefill, %d decode Ready", q, pr, dr)
		}
		// A pairing's router retires before its last group once another
		// pairing's router serves (plan rule 13).
		if live[v1beta1.ComponentDecoder][q] && !routed[q] && (len(served) == 0 || served[q]) {
			s.unrouted = append(s.unrouted, fmt.Sprintf("pairing %s has live prefill and decode pods and no live router", q))
		}
		if pr > 0 && dr > 0 && routed[q] {
			serving++
		}
	}
	if serving > 1 {
		s.bothServe++
	}
}

func (s *pdSampler) finish() *pdSampler {
	close(s.stop)
	<-s.done
	return s
}

// A 1:2 prefill/decode service on the real node (2 prefill, 4 decode
// groups of berth-test-engine, a router per pairing selecting
// ome.io/pairing={{.Pairing}}, as the shipped runtime does) is rolled to a
// new pairing while three clients send requests through its front
// Service, each one after another: every request is answered (goal: 0
// failed); sampled every 250 ms, no router selects pods of another
// pairing, every pairing with live prefill and decode pods has a router
// (unless another pairing's router serves: its own retired early),
// and the Ready groups stay within the ratio; the old pairing's router
// leaves before its last group (events RouterFirst and RouterRetired).
func TestPrefillDecodeRatioRolloutServesOnRealNode(t *testing.T) {
	needNode(t)
	ctx := context.Background()
	ns := newNamespace(t, "pdratio")
	c := berthClient(t)
	applyTestEngineRuntime(t)
	one := int32(1)
	newChatService(t, c, ns, "pdr", 2, onRuntime("berth-test-engine-pd-rt"), func(isvc *v1beta1.InferenceService) {
		isvc.Spec.PrefillDecodeRatio = &v1beta1.PrefillDecodeRatio{Prefill: 1, Decode: 2, MaxSkew: &one}
		isvc.Spec.Decoder = &v1beta1.DecoderSpec{}
		isvc.Spec.Decoder.MaxReplicas = ptr(int32(4))
		isvc.Spec.Decoder.NodeSelector, isvc.Spec.Decoder.Tolerations = node.Placement()
		isvc.Spec.Router = &v1beta1.RouterSpec{}
		isvc.Spec.Router.NodeSelector, isvc.Spec.Router.Tolerations = node.Placement()
	})
	pairs := func(want int32, not string) func(*v1beta1.InferenceService) bool {
		return func(s *v1beta1.InferenceService) bool {
			return len(s.Status.Pairings) == 1 && s.Status.Pairings[0].Pairing != not &&
				s.Status.Pairings[0].ReadyPrefill == want && s.Status.Pairings[0].ReadyDecode == 2*want &&
				// One router per ratio unit, within the runtime's maxReplicas (1).
				s.Status.Components[v1beta1.ComponentRouter].ReadyReplicas == 1
		}
	}
	isvc := waitService(t, c, ns, "pdr", 5*time.Minute, "2 prefill and 4 decode groups Ready at one pairing", pairs(2, ""))
	old := isvc.Status.Pairings[0].Pairing
	sampler := startPDSampler(ns, "pdr", *isvc.Spec.PrefillDecodeRatio)

	var reqs []*requester // three clients, each one request at a time
	for _, prefix := range []string{"req-a", "req-b", "req-c"} {
		reqs = append(reqs, startRequester(ns, "http://pdr."+ns+".svc", prefix))
	}
	time.Sleep(5 * time.Second) // some requests before the roll
	isvc, err := c.OmeV1beta1().InferenceServices(ns).Get(ctx, "pdr", metav1.GetOptions{})
	require.NoError(t, err)
	if isvc.Spec.Engine.Runner == nil {
		isvc.Spec.Engine.Runner = &v1beta1.RunnerSpec{}
	}
	isvc.Spec.Engine.Runner.Env = append(isvc.Spec.Engine.Runner.Env, corev1.EnvVar{Name: "ROLL", Value: "1"})
	_, err = c.OmeV1beta1().InferenceServices(ns).Update(ctx, isvc, metav1.UpdateOptions{})
	require.NoError(t, err)
	start := time.Now()
	isvc = waitService(t, c, ns, "pdr", 8*time.Minute, "rolled to a new pairing", pairs(2, old))
	took := time.Since(start)
	time.Sleep(5 * time.Second) // and some after
	var ok, failed int
	var failures []string
	for _, r := range reqs {
		o, f, fs := r.finish()
		ok, failed, failures = ok+o, failed+f, append(failures, fs...)
	}
	smp := sampler.finish()
	t.Logf("rollout %s → %s took %s; requests answered %d, failed %d", old, isvc.Status.Pairings[0].Pairing, took.Round(time.Second), ok, failed)
	t.Logf("%d samples: worst skew %d (%s); both pairings served through their own routers in %d; routers seen (pod: pairing) %v",
		smp.samples, smp.worstSkew, smp.worstAt, smp.bothServe, smp.routers)
	for _, f := range failures {
		t.Logf("failed: %s", f)
	}
	// The old pairing's router left before its last group (plan rule 13).
	for _, reason := range []string{plan.ReasonRouterFirst, plan.ReasonRouterRetired} {
		evs, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pdr,reason=" + reason})
		require.NoError(t, err)
		for _, e := range evs.Items {
			t.Logf("event %s: %s", e.Reason, e.Message)
		}
		assert.NotEmpty(t, evs.Items, "no %s event: the old pairing's router did not leave before its last group", reason)
	}
	assert.Zero(t, failed, "every request through the rollout is answered")
	assert.Empty(t, smp.mixed, "a router's selectors matched pods of another pairing")
	assert.Empty(t, smp.unrouted, "a pairing with live prefill and decode pods had no router")
	assert.LessOrEqual(t, smp.worstSkew, isvc.Spec.PrefillDecodeRatio.Tolerance(), "Ready groups outside the ratio: %s", smp.worstAt)
	pairingsSeen := map[string]bool{}
	for _, q := range smp.routers {
		pairingsSeen[q] = true
	}
	assert.Equal(t, map[string]bool{old: true, isvc.Status.Pairings[0].Pairing: true}, pairingsSeen, "a router per pairing")
	assert.Greater(t, ok, 3, "requests went through while it rolled")
}

// waitService polls the service until done.
func waitService(t *testing.T, c versioned.Interface, ns, name string, timeout time.Duration, what string, done func(*v1beta1.InferenceService) bool) *v1beta1.InferenceService {
	t.Helper()
	var last *v1beta1.InferenceService
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := c.OmeV1beta1().InferenceServices(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = s
		return done(s), nil
	})
	if err != nil {
		t.Fatalf("%s/%s: %s: not within %s; status: %+v", ns, name, what, timeout, last.Status)
	}
	return last
}
