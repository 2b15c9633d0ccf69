package e2eutil

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// RouterSelectors reads the discovery selectors a router pod was rendered
// with: the key=value items after --prefill-selector and after
// --decode-selector in its containers' command and args, up to the next
// flag, one map per selector flag.
func RouterSelectors(p *corev1.Pod) []map[string]string {
	var out []map[string]string
	for _, c := range p.Spec.Containers {
		var cur map[string]string
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			switch {
			case a == "--prefill-selector" || a == "--decode-selector":
				cur = map[string]string{}
				out = append(out, cur)
			case strings.HasPrefix(a, "-"):
				cur = nil
			case cur != nil:
				if k, v, ok := strings.Cut(a, "="); ok {
					cur[k] = v
				}
			}
		}
	}
	return out
}

// PodReady reports whether p's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ServedPairings are the pairings (label ome.io/pairing) with a router
// pod that is Ready and not terminating: during a prefill/decode rollout,
// the pairing whose routers serve, so that an older pairing's router may
// retire before that pairing's last group (rule 13 of reconcile/plan).
func ServedPairings(pods []*corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		if p.Labels[v1beta1.LabelComponent] == v1beta1.ComponentRouter && p.DeletionTimestamp == nil && PodReady(p) {
			out[p.Labels[v1beta1.LabelPairing]] = true
		}
	}
	return out
}
