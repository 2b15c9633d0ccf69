package accelerators

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

// AcceleratorClass condition types the status controller owns. Other
// conditions on a class (another controller's) are kept as they are.
const (
	// ClassReady is True when the class matches at least one Ready,
	// schedulable node.
	ClassReady = "Ready"
	// ClassSelectorTooBroad is True when discovery matches nodes whose
	// product labels (nvidia.com/gpu.product, amd.com/gpu.product,
	// gpu.intel.com/product) name another model than spec.model, or, for
	// a class without spec.model, more than one product.
	ClassSelectorTooBroad = "SelectorTooBroad"
)

// Reasons of the two conditions.
const (
	ReasonNodesReady      = "NodesReady"
	ReasonNoMatchingNodes = "NoMatchingNodes"
	ReasonNoReadyNodes    = "NoReadyNodes"
	ReasonOtherModel      = "OtherModel"
	ReasonMixedProducts   = "MixedProducts"
	ReasonOneProduct      = "OneProduct"
	ReasonNoProductLabels = "NoProductLabels"
)

// classStatus is the status the controller wants for a class: the counts
// of a (selection.Index.ClassAvailability) and its two conditions, on top
// of the class's current status (other conditions kept, transition times
// kept when a condition's status holds). changed is false when it equals
// the current status; lastUpdated moves to now only when it changed.
func classStatus(c *v1beta1.AcceleratorClass, a selection.ClassAvailability, now time.Time) (v1beta1.AcceleratorClassStatus, bool) {
	cur := c.Status
	st := *cur.DeepCopy()
	st.Nodes = a.Nodes
	st.AvailableNodes = clampInt32(int64(len(a.Nodes)))
	st.TotalAccelerators = clampInt32(a.Total)
	st.AvailableAccelerators = clampInt32(a.Available)
	t := metav1.NewTime(now)
	for _, cond := range []metav1.Condition{classReadyCondition(a), productCondition(c.Spec.Model, a)} {
		cond.ObservedGeneration, cond.LastTransitionTime = c.Generation, t
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	st.LastUpdated = cur.LastUpdated
	if equality.Semantic.DeepEqual(normalNodes(st), normalNodes(cur)) {
		return cur, false
	}
	st.LastUpdated = &t
	return st, true
}

// normalNodes treats an empty and a missing node list alike.
func normalNodes(s v1beta1.AcceleratorClassStatus) v1beta1.AcceleratorClassStatus {
	if len(s.Nodes) == 0 {
		s.Nodes = nil
	}
	if len(s.Conditions) == 0 {
		s.Conditions = nil
	}
	return s
}

func classReadyCondition(a selection.ClassAvailability) metav1.Condition {
	switch {
	case len(a.Nodes) > 0:
		return metav1.Condition{Type: ClassReady, Status: metav1.ConditionTrue, Reason: ReasonNodesReady,
			Message: fmt.Sprintf("%d Ready node(s) with %d %s, %d free", len(a.Nodes), a.Total, a.Resource, a.Available)}
	case a.Matching > 0:
		return metav1.Condition{Type: ClassReady, Status: metav1.ConditionFalse, Reason: ReasonNoReadyNodes,
			Message: fmt.Sprintf("discovery matches %d node(s), none Ready and schedulable", a.Matching)}
	}
	return metav1.Condition{Type: ClassReady, Status: metav1.ConditionFalse, Reason: ReasonNoMatchingNodes,
		Message: "discovery (spec.discovery and spec.nodeSelector) matches no node"}
}

// productCondition reads the product labels of the matching nodes.
func productCondition(model string, a selection.ClassAvailability) metav1.Condition {
	products := make([]string, 0, len(a.Products))
	for p := range a.Products {
		products = append(products, p)
	}
	sort.Strings(products)
	list := func(ps []string) string {
		parts := make([]string, len(ps))
		for i, p := range ps {
			parts[i] = fmt.Sprintf("%s (%d node(s))", p, a.Products[p])
		}
		return strings.Join(parts, ", ")
	}
	ok := metav1.Condition{Type: ClassSelectorTooBroad, Status: metav1.ConditionFalse}
	if len(products) == 0 {
		ok.Reason, ok.Message = ReasonNoProductLabels, "no matching node carries a product label ("+strings.Join(selection.ProductLabels, ", ")+")"
		return ok
	}
	if model != "" {
		var other []string
		for _, p := range products {
			if !productIsModel(p, model) {
				other = append(other, p)
			}
		}
		if len(other) > 0 {
			return metav1.Condition{Type: ClassSelectorTooBroad, Status: metav1.ConditionTrue, Reason: ReasonOtherModel,
				Message: "discovery matches nodes of another model than spec.model " + model + ": " + list(other) +
					"; narrow spec.discovery.nodeSelector, e.g. to its product label"}
		}
		ok.Reason, ok.Message = ReasonOneProduct, "matching nodes are model "+model+": "+list(products)
		return ok
	}
	if len(products) > 1 {
		return metav1.Condition{Type: ClassSelectorTooBroad, Status: metav1.ConditionTrue, Reason: ReasonMixedProducts,
			Message: fmt.Sprintf("discovery matches nodes of %d products: %s; the class's capabilities cannot describe them all", len(products), list(products))}
	}
	ok.Reason, ok.Message = ReasonOneProduct, "matching nodes are "+list(products)
	return ok
}

// productIsModel: the model's name, letters and digits only, is a run of
// whole words of the product label (h100 in NVIDIA-H100-80GB-HBM3,
// mi300x in AMD-Instinct-MI300X, rtx4090 in NVIDIA-GeForce-RTX-4090; a10
// not in NVIDIA-A100-PCIE-40GB), case-insensitively.
func productIsModel(product, model string) bool {
	split := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	}
	want := strings.Join(split(model), "")
	if want == "" {
		return true
	}
	words := split(product)
	for i := range words {
		run := ""
		for _, w := range words[i:] {
			if run += w; run == want {
				return true
			} else if len(run) >= len(want) {
				break
			}
		}
	}
	return false
}

func clampInt32(v int64) int32 {
	if v > math.MaxInt32 {
		return math.MaxInt32
	}
	if v < 0 {
		return 0
	}
	return int32(v)
}

// coalescer bounds status writes: at most one per class per interval.
// It is pure (the caller passes the clock's time).
type coalescer struct {
	interval time.Duration
	last     map[string]time.Time
}

func newCoalescer(interval time.Duration) *coalescer {
	return &coalescer{interval: interval, last: map[string]time.Time{}}
}

// wait is how long a class must wait before its next write; 0 when it may
// write now.
func (c *coalescer) wait(name string, now time.Time) time.Duration {
	last, ok := c.last[name]
	if !ok {
		return 0
	}
	if d := last.Add(c.interval).Sub(now); d > 0 {
		return d
	}
	return 0
}

// wrote records a write.
func (c *coalescer) wrote(name string, now time.Time) { c.last[name] = now }

// forget drops a deleted class.
func (c *coalescer) forget(name string) { delete(c.last, name) }
