package servinggroups

import "testing"

func TestDegradedReason(t *testing.T) {
	for in, want := range map[string]string{
		ReasonRuntimeMissing:  ReasonRuntimeDeleted,
		ReasonClassMissing:    ReasonClassDeleted,
		ReasonRuntimeDisabled: ReasonRuntimeDisabled,
		ReasonModelMissing:    ReasonModelMissing,
		ReasonPinMalformed:    ReasonPinMalformed,
	} {
		if got := degradedReason(in); got != want {
			t.Errorf("degradedReason(%q) = %q, want %q", in, got, want)
		}
	}
}
