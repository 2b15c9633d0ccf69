package selection

import "errors"

// How a Decision's AcceleratorClass was chosen (Decision.ClassChosenBy).
const (
	ChosenByNone             = "none"             // nothing asked for an accelerator: no class
	ChosenByNoClasses        = "noClasses"        // asked, but the cluster has no AcceleratorClass
	ChosenByAnnotation       = "annotation"       // ome.io/accelerator-class
	ChosenByPreferredClasses = "preferredClasses" // spec.acceleratorSelector.preferredClasses
	ChosenByPreferenceOrder  = "preferenceOrder"  // the runtime's acceleratorRequirements.preferenceOrder
	ChosenByStrategy         = "strategy"         // performance, cost or balanced
	ChosenByPin              = "pin"              // Resolve: the pinned class, not re-decided
)

// Denial codes (Error.Code): one per kind of failure, stable, for metrics
// and for callers that branch on the failure without parsing its text.
const (
	CodeInvalidInput                 = "InvalidInput"
	CodeModelNotFound                = "ModelNotFound"
	CodeModelInvalid                 = "ModelInvalid" // unparseable fields, or disabled
	CodeRuntimeNotFound              = "RuntimeNotFound"
	CodeRuntimeIncompatible          = "RuntimeIncompatible" // the named runtime cannot serve the model
	CodeNoRuntime                    = "NoRuntime"           // no runtime can serve the model
	CodeInvalidAcceleratorRequest    = "InvalidAcceleratorRequest"
	CodeAcceleratorClassNotFound     = "AcceleratorClassNotFound"
	CodeAcceleratorClassNotQualified = "AcceleratorClassNotQualified" // the named or preferred classes do not qualify
	CodeNoAcceleratorClass           = "NoAcceleratorClass"           // no class qualifies (vendor, capabilities, fit)
	CodePinnedObjectMissing          = "PinnedObjectMissing"          // Resolve: the pinned runtime or class is gone
)

// DecisionMetrics are the labels to count a decision by. Runtime and class
// names come from objects admins create, so their number is bounded.
type DecisionMetrics struct {
	Runtime  string // RuntimeRef: "ClusterServingRuntime/<name>"
	Class    string // "" when no class was chosen
	ChosenBy string // a ChosenBy* constant
	Strategy string // the strategy in force when classes were ranked; "" otherwise
	// Unavailable: a class was chosen whose Ready nodes have no room for a
	// group now (the service will wait for capacity).
	Unavailable bool
}

// Metrics returns the decision's metric labels.
func (d *Decision) Metrics() DecisionMetrics {
	m := DecisionMetrics{Runtime: d.RuntimeRef(), Class: d.AcceleratorClassName(), ChosenBy: d.ClassChosenBy, Strategy: string(d.Strategy)}
	m.Unavailable = d.AcceleratorClass != nil && !d.AcceleratorAvailable
	return m
}

// Code is the denial code of an error from Select or Resolve, "" for any
// other error (and nil).
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
