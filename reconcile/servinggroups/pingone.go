package servinggroups

// Reasons of the Degraded condition while a pinned runtime or class is
// deleted. The service keeps its pin and its running pods until the
// object returns or the user asks for a new decision (annotation
// ome.io/repin, `berth repin`); Resolved says the same with
// PinnedRuntimeMissing or PinnedClassMissing.
const (
	ReasonRuntimeDeleted = "RuntimeDeleted"
	ReasonClassDeleted   = "AcceleratorClassDeleted"
)

// degradedReason is the Degraded condition's reason for why a pin does not
// resolve: a deleted runtime or class has a reason of its own, anything
// else the Resolved condition's.
func degradedReason(unresolved string) string {
	switch unresolved {
	case ReasonRuntimeMissing:
		return ReasonRuntimeDeleted
	case ReasonClassMissing:
		return ReasonClassDeleted
	}
	return unresolved
}
