package policy

import "testing"

// describeUse names one resource, or the total and each resource (sorted).
func TestDescribeUse(t *testing.T) {
	one := []resourceUse{{name: "nvidia.com/gpu", n: 24}}
	if got, want := describeUse(one, 24), "24 nvidia.com/gpu"; got != want {
		t.Errorf("describeUse(one) = %q; want %q", got, want)
	}
	var two []resourceUse
	two = addUse(two, "nvidia.com/gpu", 8)
	two = addUse(two, "amd.com/gpu", 10)
	two = addUse(two, "amd.com/gpu", 6)
	if got, want := describeUse(two, 24), "24 accelerators (16 amd.com/gpu, 8 nvidia.com/gpu)"; got != want {
		t.Errorf("describeUse(two) = %q; want %q", got, want)
	}
}
