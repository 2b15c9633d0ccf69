package selection

import v1beta1 "github.com/berthdev/berth/api/v1beta1"

// ClassNodeMatcher returns whether a node belongs to the class, by the
// same rule selection counts the class's nodes with (matchesNode). The
// reconciler's accelerator discovery uses it to find the admin classes
// that already cover a product's nodes. Compile once per class, call per
// node.
func ClassNodeMatcher(class *v1beta1.AcceleratorClass) func(NodeInfo) bool {
	return compileClass(class).matchesNode
}
