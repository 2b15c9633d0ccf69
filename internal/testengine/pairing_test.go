package testengine

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A prefill is paired only with a decode of its pairing, whichever the
// round robin is at; a prefill whose pairing has no decode is skipped.
func TestPickPairSamePairing(t *testing.T) {
	s := newWorkerSet()
	for _, w := range []Worker{
		{URL: "http://p-old", Role: RolePrefill, Pairing: "old"},
		{URL: "http://p-new", Role: RolePrefill, Pairing: "new"},
		{URL: "http://p-lone", Role: RolePrefill, Pairing: "lone"},
		{URL: "http://d-old-1", Role: RoleDecode, Pairing: "old"},
		{URL: "http://d-old-2", Role: RoleDecode, Pairing: "old"},
		{URL: "http://d-new", Role: RoleDecode, Pairing: "new"},
	} {
		s.put(w)
	}
	seen := map[string]int{}
	for range 60 {
		p, d, ok, why := s.pickPair()
		if !ok {
			t.Fatalf("no pair: %s", why)
		}
		if p.Pairing != d.Pairing {
			t.Fatalf("prefill %s (pairing %s) paired with decode %s (pairing %s)", p.URL, p.Pairing, d.URL, d.Pairing)
		}
		seen[p.URL+">"+d.URL]++
	}
	for _, pair := range []string{"http://p-old>http://d-old-1", "http://p-old>http://d-old-2", "http://p-new>http://d-new"} {
		if seen[pair] == 0 {
			t.Errorf("pair %s never picked: %v", pair, seen)
		}
	}
	if seen["http://p-lone>"] != 0 {
		t.Errorf("a prefill without a decode of its pairing was picked")
	}

	s = newWorkerSet()
	s.put(Worker{URL: "http://p", Role: RolePrefill, Pairing: "a"})
	s.put(Worker{URL: "http://d", Role: RoleDecode, Pairing: "b"})
	if _, _, ok, why := s.pickPair(); ok || why != "pairing" {
		t.Fatalf("pairs across pairings: ok=%v why=%q", ok, why)
	}
	s.remove("http://d")
	if _, _, ok, why := s.pickPair(); ok || why != RoleDecode {
		t.Fatalf("no decode: ok=%v why=%q", ok, why)
	}
}

// Discovery reads the pod's pairing label.
func TestWorkerFromPodPairing(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", Labels: map[string]string{LabelPairing: "abc"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	w, why := WorkerFromPod(pod, RoleDecode, 8080, "x")
	if why != "" || w.Pairing != "abc" {
		t.Fatalf("worker %+v (%s), want pairing abc", w, why)
	}
}

// A PD router is ready (/readiness, the model gateway's probe path) only
// once it has a prefill and a decode of one pairing; /health stays 200.
func TestReadinessNeedsAPair(t *testing.T) {
	r, router := newTestRouter(t, "--pd-disaggregation")
	ready := func() int { return call(t, "GET", router+"/readiness", "").status }
	if got := ready(); got != 503 {
		t.Fatalf("no worker: /readiness %d, want 503", got)
	}
	r.workers.put(Worker{URL: "http://p-old", Role: RolePrefill, Pairing: "old"})
	r.workers.put(Worker{URL: "http://d-new", Role: RoleDecode, Pairing: "new"})
	if got := ready(); got != 503 {
		t.Fatalf("a prefill and a decode of two pairings: /readiness %d, want 503", got)
	}
	if got := call(t, "GET", router+"/health", "").status; got != 200 {
		t.Fatalf("/health %d, want 200", got)
	}
	r.workers.put(Worker{URL: "http://d-old", Role: RoleDecode, Pairing: "old"})
	a := call(t, "GET", router+"/readiness", "")
	if a.status != 200 || !strings.Contains(a.body, `"pairings":["old"]`) {
		t.Fatalf("a pair of pairing old: /readiness %d %s", a.status, a.body)
	}
	r.workers.remove("http://p-old")
	if got := ready(); got != 503 {
		t.Fatalf("the prefill gone: /readiness %d, want 503", got)
	}
}
