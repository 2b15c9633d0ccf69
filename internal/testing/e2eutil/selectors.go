package e2eutil

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
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
