package validation

import (
	"fmt"
	"maps"
	"slices"
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

// GangRole is one role of a prefill/decode gang: its component (engine or
// decoder) and how many serving groups it runs (0: not known here, so the
// upper bound is not checked).
type GangRole struct {
	Component string
	Replicas  int32
}

// GangRoles are the gang roles of a service as its spec alone says:
// engine and decoder when it has a decoder, with replicas from
// spec.<role>.replicas, else minReplicas. A service without a decoder has
// none: each engine serving group is its own gang. The webhook passes the
// roles of the resolved topology instead (a runtime's decoderConfig adds a
// decoder the spec does not show).
func GangRoles(spec *v1beta1.InferenceServiceSpec) []GangRole {
	if spec.Decoder == nil {
		return nil
	}
	replicas := func(e v1beta1.ComponentExtensionSpec) int32 {
		switch {
		case e.Replicas != nil:
			return *e.Replicas
		case e.MinReplicas != nil:
			return *e.MinReplicas
		}
		return 0
	}
	engine := GangRole{Component: v1beta1.ComponentEngine}
	if spec.Engine != nil {
		engine.Replicas = replicas(spec.Engine.ComponentExtensionSpec)
	}
	return []GangRole{engine, {Component: v1beta1.ComponentDecoder, Replicas: replicas(spec.Decoder.ComponentExtensionSpec)}}
}

// gangRoleNames are the names minRoleReplicas accepts: berth's components
// and Kthena's names for them.
var gangRoleNames = []string{v1beta1.ComponentEngine, v1beta1.ComponentDecoder, v1beta1.GangRolePrefill, v1beta1.GangRoleDecode}

// ValidateGangPolicy checks spec.gangPolicy against the service's gang
// roles (GangRoles, or the caller's from the resolved topology): the
// scheduler is Volcano or Coscheduling; every minRoleReplicas key names a
// role the service has, once (prefill and engine are one role, decode and
// decoder another); every value is at least 1 and at most the role's
// replicas.
func ValidateGangPolicy(spec *v1beta1.InferenceServiceSpec, roles []GangRole) field.ErrorList {
	gp := spec.GangPolicy
	if gp == nil {
		return nil
	}
	p := field.NewPath("spec", "gangPolicy")
	var errs field.ErrorList
	switch gp.Scheduler {
	case "", v1beta1.GangSchedulerVolcano, v1beta1.GangSchedulerCoscheduling:
	default:
		errs = append(errs, field.NotSupported(p.Child("scheduler"), gp.Scheduler,
			[]string{string(v1beta1.GangSchedulerVolcano), string(v1beta1.GangSchedulerCoscheduling)}))
	}
	keys := slices.Sorted(maps.Keys(gp.MinRoleReplicas))
	seen := map[string]string{}
	for _, k := range keys {
		kp, v := p.Child("minRoleReplicas").Key(k), gp.MinRoleReplicas[k]
		if !slices.Contains(gangRoleNames, k) {
			errs = append(errs, field.NotSupported(kp, k, gangRoleNames))
			continue
		}
		role := v1beta1.CanonicalGangRole(k)
		if other, dup := seen[role]; dup {
			errs = append(errs, field.Duplicate(kp, fmt.Sprintf("%s (the same role as %s)", k, other)))
			continue
		}
		seen[role] = k
		errs = append(errs, validateMinRoleReplicas(kp, k, role, v, roles)...)
	}
	return errs
}

func validateMinRoleReplicas(kp *field.Path, key, role string, v int32, roles []GangRole) field.ErrorList {
	i := slices.IndexFunc(roles, func(r GangRole) bool { return r.Component == role })
	switch {
	case len(roles) == 0:
		return field.ErrorList{field.Invalid(kp, key, "the service has no decoder: each engine serving group (its leader and workers) is gang-scheduled on its own, and minRoleReplicas applies to prefill/decode services only; remove the key, or add spec.decoder")}
	case i < 0:
		return field.ErrorList{field.Invalid(kp, key, fmt.Sprintf("the service has no %s role; its roles are %s", role, roleList(roles)))}
	case v < 1:
		return field.ErrorList{field.Invalid(kp, v, "must be at least 1: a gang needs at least one serving group of each role")}
	case roles[i].Replicas > 0 && v > roles[i].Replicas:
		return field.ErrorList{field.Invalid(kp, v, fmt.Sprintf("is above the %d serving group(s) of the %s (spec.%s.replicas): the gang could never be placed; use at most %d",
			roles[i].Replicas, role, role, roles[i].Replicas))}
	}
	return nil
}

func roleList(roles []GangRole) string {
	var names []string
	for _, r := range roles {
		names = append(names, r.Component)
	}
	return strings.Join(names, ", ")
}

// ValidateGangPolicyUpdate denies removing spec.gangPolicy once set (seed
// 003; the CRD's transition rule says the same).
func ValidateGangPolicyUpdate(old, cur *v1beta1.InferenceServiceSpec) field.ErrorList {
	if old.GangPolicy != nil && cur.GangPolicy == nil {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "gangPolicy"),
			"cannot be removed once set: PodGroups and the pods' scheduling follow it; delete and recreate the service to drop gang scheduling")}
	}
	return nil
}
