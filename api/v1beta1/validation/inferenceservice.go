package validation

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateLifecycle checks the fields the reconciler reads. maxGroups is the
// most serving groups any component of the service can have (0: unknown,
// the partition bound is not checked).
func ValidateLifecycle(spec *v1beta1.InferenceServiceSpec, maxGroups int32) field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath("spec")
	if rs := spec.RolloutStrategy; rs != nil && rs.RollingUpdateConfiguration != nil {
		p := root.Child("rolloutStrategy", "rollingUpdateConfiguration")
		cfg := rs.RollingUpdateConfiguration
		if v := cfg.MaxUnavailable; v != nil {
			errs = append(errs, validateMaxUnavailable(p.Child("maxUnavailable"), *v)...)
		}
		if v := cfg.Partition; v != nil {
			errs = append(errs, validatePartition(p.Child("partition"), *v, maxGroups)...)
		}
	}
	if g := spec.RestartGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(root.Child("restartGracePeriodSeconds"), *g, "must not be negative"))
	}
	return errs
}

func validateMaxUnavailable(p *field.Path, v intstr.IntOrString) field.ErrorList {
	if v.Type == intstr.Int {
		if v.IntVal < 1 {
			return field.ErrorList{field.Invalid(p, v.IntVal, "must be at least 1: a rolling update that may take no serving group down can never progress")}
		}
		return nil
	}
	pct, err := percent(v.StrVal)
	if err != nil {
		return field.ErrorList{field.Invalid(p, v.StrVal, err.Error())}
	}
	if pct == 0 || pct > 100 {
		return field.ErrorList{field.Invalid(p, v.StrVal, "must be a percentage above 0% and at most 100%: a rolling update that may take no serving group down can never progress")}
	}
	return nil
}

func validatePartition(p *field.Path, v intstr.IntOrString, maxGroups int32) field.ErrorList {
	if v.Type == intstr.Int {
		switch {
		case v.IntVal < 0:
			return field.ErrorList{field.Invalid(p, v.IntVal, "must not be negative")}
		case maxGroups > 0 && v.IntVal > maxGroups:
			return field.ErrorList{field.Invalid(p, v.IntVal, fmt.Sprintf(
				"is above the %d serving group(s) the service can have: groups with an ordinal below the partition keep their revision, so no group would ever roll. Use at most %d (equal pauses the rollout)", maxGroups, maxGroups))}
		}
		return nil
	}
	pct, err := percent(v.StrVal)
	if err != nil {
		return field.ErrorList{field.Invalid(p, v.StrVal, err.Error())}
	}
	if pct > 100 {
		return field.ErrorList{field.Invalid(p, v.StrVal, "must be a percentage from 0% to 100%")}
	}
	return nil
}

// percent parses "N%".
func percent(s string) (int, error) {
	n, ok := strings.CutSuffix(s, "%")
	if !ok {
		return 0, fmt.Errorf("must be an integer or a percentage such as \"25%%\"")
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("must be an integer or a percentage such as \"25%%\"")
	}
	return v, nil
}

// ValidateComponents checks the components as the user sent them, before
// the webhook's defaults add an engine: a decoder needs an engine. (The
// CRD says so too, but the apiserver validates after the mutating webhook,
// so that rule alone never fires.)
func ValidateComponents(spec *v1beta1.InferenceServiceSpec) field.ErrorList {
	if spec.Decoder != nil && spec.Engine == nil {
		return field.ErrorList{field.Required(field.NewPath("spec", "engine"), "decoder needs engine: spec.decoder serves the decode phase of a prefill/decode pair and spec.engine the prefill phase; set spec.engine or remove spec.decoder")}
	}
	return nil
}
