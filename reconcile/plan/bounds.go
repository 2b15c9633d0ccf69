package plan

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

// withDefaults fills a Spec's zero values and clamps what cannot be
// negative.
func withDefaults(s Spec) Spec {
	s.Replicas = max(s.Replicas, 0)
	s.Workers = max(s.Workers, 0)
	s.MultiNode = s.MultiNode || s.Workers > 0
	if s.Recovery == "" {
		s.Recovery = v1beta1.RoleRecreate
	}
	s.RestartGrace = max(s.RestartGrace, 0)
	if s.BackoffBase <= 0 {
		s.BackoffBase = DefaultBackoffBase
	}
	if s.BackoffMax <= 0 {
		s.BackoffMax = DefaultBackoffMax
	}
	s.BackoffMax = max(s.BackoffMax, s.BackoffBase)
	return s
}

// Partition resolves spec.Partition against Replicas: a percentage rounds
// up (Kthena), a negative value is 0. A value that does not parse
// protects every group and is an error.
func Partition(spec Spec) (int32, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(&spec.Partition, int(max(spec.Replicas, 0)), true)
	if err != nil {
		return math.MaxInt32, fmt.Errorf("partition %q: %w; use an integer or a percentage such as \"50%%\"", spec.Partition.String(), err)
	}
	return int32(min(max(n, 0), math.MaxInt32)), nil
}

// MaxUnavailable resolves spec.MaxUnavailable against Replicas: the zero
// value is 1, a percentage rounds down, the result is at least 1. A value
// that does not parse is 1 and an error.
func MaxUnavailable(spec Spec) (int32, error) {
	if spec.MaxUnavailable == (intstr.IntOrString{}) {
		return 1, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&spec.MaxUnavailable, int(max(spec.Replicas, 0)), false)
	if err != nil {
		return 1, fmt.Errorf("maxUnavailable %q: %w; use an integer or a percentage such as \"25%%\"", spec.MaxUnavailable.String(), err)
	}
	return int32(min(max(n, 1), 1<<30)), nil
}

// allowance is how many Ready groups may be deleted now without more than
// maxUnavailable desired groups unavailable (rule 5): deleting k of ready
// Ready groups leaves desired - min(ready-k, desired) unavailable.
func allowance(desired, ready, maxUnavailable int32) int32 {
	return max(0, ready-(desired-maxUnavailable))
}
