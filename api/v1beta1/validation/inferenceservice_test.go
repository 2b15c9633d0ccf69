package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func rollout(partition, maxUnavailable *intstr.IntOrString) *v1beta1.InferenceServiceSpec {
	return &v1beta1.InferenceServiceSpec{RolloutStrategy: &v1beta1.RolloutStrategy{
		Type:                       v1beta1.ServingGroupRollingUpdate,
		RollingUpdateConfiguration: &v1beta1.RollingUpdateConfiguration{Partition: partition, MaxUnavailable: maxUnavailable},
	}}
}

func ios(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestValidateLifecycle(t *testing.T) {
	cfg := field.NewPath("spec", "rolloutStrategy", "rollingUpdateConfiguration")
	neg := int64(-1)
	cases := []struct {
		name      string
		spec      *v1beta1.InferenceServiceSpec
		maxGroups int32
		want      field.ErrorList
	}{
		{name: "no rollout strategy", spec: &v1beta1.InferenceServiceSpec{}, maxGroups: 4},
		{name: "partition 2 of 4, maxUnavailable 1", spec: rollout(ios(intstr.FromInt32(2)), ios(intstr.FromInt32(1))), maxGroups: 4},
		{name: "partition equal to groups pauses", spec: rollout(ios(intstr.FromInt32(4)), nil), maxGroups: 4},
		{name: "percentages", spec: rollout(ios(intstr.FromString("50%")), ios(intstr.FromString("25%"))), maxGroups: 4},
		{name: "unknown group count skips the bound", spec: rollout(ios(intstr.FromInt32(40)), nil)},
		{name: "maxUnavailable 0", spec: rollout(nil, ios(intstr.FromInt32(0))), maxGroups: 4,
			want: field.ErrorList{field.Invalid(cfg.Child("maxUnavailable"), int32(0), "must be at least 1: a rolling update that may take no serving group down can never progress")}},
		{name: "maxUnavailable 0%", spec: rollout(nil, ios(intstr.FromString("0%"))), maxGroups: 4,
			want: field.ErrorList{field.Invalid(cfg.Child("maxUnavailable"), "0%", "must be a percentage above 0% and at most 100%: a rolling update that may take no serving group down can never progress")}},
		{name: "maxUnavailable not a percentage", spec: rollout(nil, ios(intstr.FromString("half"))), maxGroups: 4,
			want: field.ErrorList{field.Invalid(cfg.Child("maxUnavailable"), "half", `must be an integer or a percentage such as "25%"`)}},
		{name: "partition above the group count", spec: rollout(ios(intstr.FromInt32(5)), nil), maxGroups: 4,
			want: field.ErrorList{field.Invalid(cfg.Child("partition"), int32(5), "is above the 4 serving group(s) the service can have: groups with an ordinal below the partition keep their revision, so no group would ever roll. Use at most 4 (equal pauses the rollout)")}},
		{name: "negative partition", spec: rollout(ios(intstr.FromInt32(-1)), nil), maxGroups: 4,
			want: field.ErrorList{field.Invalid(cfg.Child("partition"), int32(-1), "must not be negative")}},
		{name: "partition over 100%", spec: rollout(ios(intstr.FromString("150%")), nil), maxGroups: 4,
			want: field.ErrorList{field.Invalid(cfg.Child("partition"), "150%", "must be a percentage from 0% to 100%")}},
		{name: "both wrong, both reported", spec: rollout(ios(intstr.FromInt32(9)), ios(intstr.FromInt32(0))), maxGroups: 2,
			want: field.ErrorList{
				field.Invalid(cfg.Child("maxUnavailable"), int32(0), "must be at least 1: a rolling update that may take no serving group down can never progress"),
				field.Invalid(cfg.Child("partition"), int32(9), "is above the 2 serving group(s) the service can have: groups with an ordinal below the partition keep their revision, so no group would ever roll. Use at most 2 (equal pauses the rollout)"),
			}},
		{name: "negative grace", spec: &v1beta1.InferenceServiceSpec{RestartGracePeriodSeconds: &neg},
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "restartGracePeriodSeconds"), int64(-1), "must not be negative")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ValidateLifecycle(tc.spec, tc.maxGroups)); diff != "" {
				t.Errorf("ValidateLifecycle (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateComponents(t *testing.T) {
	cases := []struct {
		name string
		spec v1beta1.InferenceServiceSpec
		want field.ErrorList
	}{
		{name: "nothing: the engine is defaulted", spec: v1beta1.InferenceServiceSpec{}},
		{name: "engine and decoder", spec: v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{}, Decoder: &v1beta1.DecoderSpec{}}},
		{name: "decoder without engine", spec: v1beta1.InferenceServiceSpec{Decoder: &v1beta1.DecoderSpec{}},
			want: field.ErrorList{field.Required(field.NewPath("spec", "engine"), "decoder needs engine: spec.decoder serves the decode phase of a prefill/decode pair and spec.engine the prefill phase; set spec.engine or remove spec.decoder")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ValidateComponents(&tc.spec)); diff != "" {
				t.Errorf("ValidateComponents (-want +got):\n%s", diff)
			}
		})
	}
}

func i32(v int32) *int32 { return &v }

// pd is a prefill/decode spec with 4 engine and 4 decoder groups (seed
// 003's example) and the given gang policy.
func pd(gp *v1beta1.GangPolicy) *v1beta1.InferenceServiceSpec {
	s := &v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{}, Decoder: &v1beta1.DecoderSpec{}, GangPolicy: gp}
	s.Engine.Replicas, s.Decoder.Replicas = i32(4), i32(4)
	return s
}

func minRoles(m map[string]int32) *v1beta1.GangPolicy { return &v1beta1.GangPolicy{MinRoleReplicas: m} }

func TestValidateGangPolicy(t *testing.T) {
	mrr := field.NewPath("spec", "gangPolicy", "minRoleReplicas")
	single := &v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{}, GangPolicy: minRoles(map[string]int32{"engine": 1})}
	unknownReplicas := pd(minRoles(map[string]int32{"decode": 9}))
	unknownReplicas.Decoder.Replicas = nil
	cases := []struct {
		name string
		spec *v1beta1.InferenceServiceSpec
		want field.ErrorList
	}{
		{name: "seed 003: prefill 2, decode 2", spec: pd(minRoles(map[string]int32{"prefill": 2, "decode": 2}))},
		{name: "seed 003: prefill 2, decode 1", spec: pd(minRoles(map[string]int32{"prefill": 2, "decode": 1}))},
		{name: "berth names, all groups", spec: pd(minRoles(map[string]int32{"engine": 4, "decoder": 4}))},
		{name: "gang without minimums", spec: &v1beta1.InferenceServiceSpec{GangPolicy: &v1beta1.GangPolicy{Scheduler: v1beta1.GangSchedulerCoscheduling}}},
		{name: "replicas unknown: no upper bound", spec: unknownReplicas},
		{name: "unknown role", spec: pd(minRoles(map[string]int32{"router": 1})),
			want: field.ErrorList{field.NotSupported(mrr.Key("router"), "router", []string{"engine", "decoder", "prefill", "decode"})}},
		{name: "zero", spec: pd(minRoles(map[string]int32{"prefill": 0})),
			want: field.ErrorList{field.Invalid(mrr.Key("prefill"), int32(0), "must be at least 1: a gang needs at least one serving group of each role")}},
		{name: "above the role's replicas", spec: pd(minRoles(map[string]int32{"decoder": 5})),
			want: field.ErrorList{field.Invalid(mrr.Key("decoder"), int32(5), "is above the 4 serving group(s) of the decoder (spec.decoder.replicas): the gang could never be placed; use at most 4")}},
		{name: "alias and name of one role", spec: pd(minRoles(map[string]int32{"engine": 1, "prefill": 2})),
			want: field.ErrorList{field.Duplicate(mrr.Key("prefill"), "prefill (the same role as engine)")}},
		{name: "a service without decoder", spec: single,
			want: field.ErrorList{field.Invalid(mrr.Key("engine"), "engine", "the service has no decoder: each engine serving group (its leader and workers) is gang-scheduled on its own, and minRoleReplicas applies to prefill/decode services only; remove the key, or add spec.decoder")}},
		{name: "unknown scheduler", spec: &v1beta1.InferenceServiceSpec{GangPolicy: &v1beta1.GangPolicy{Scheduler: "Kueue"}},
			want: field.ErrorList{field.NotSupported(field.NewPath("spec", "gangPolicy", "scheduler"), v1beta1.GangScheduler("Kueue"), []string{"Volcano", "Coscheduling"})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ValidateGangPolicy(tc.spec, GangRoles(tc.spec))); diff != "" {
				t.Errorf("ValidateGangPolicy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateGangPolicyRolesFromTopology(t *testing.T) {
	// A runtime's decoderConfig gives a decoder the spec does not show: the
	// caller passes the resolved roles.
	spec := &v1beta1.InferenceServiceSpec{GangPolicy: minRoles(map[string]int32{"decode": 3})}
	got := ValidateGangPolicy(spec, []GangRole{{"engine", 2}, {"decoder", 2}})
	want := field.ErrorList{field.Invalid(field.NewPath("spec", "gangPolicy", "minRoleReplicas").Key("decode"), int32(3),
		"is above the 2 serving group(s) of the decoder (spec.decoder.replicas): the gang could never be placed; use at most 2")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ValidateGangPolicy (-want +got):\n%s", diff)
	}
}

func TestValidateGangPolicyUpdate(t *testing.T) {
	set := pd(minRoles(map[string]int32{"prefill": 2}))
	cases := []struct {
		name     string
		old, cur *v1beta1.InferenceServiceSpec
		want     field.ErrorList
	}{
		{name: "added", old: pd(nil), cur: set},
		{name: "changed", old: set, cur: pd(minRoles(map[string]int32{"prefill": 1}))},
		{name: "never set", old: pd(nil), cur: pd(nil)},
		{name: "removed", old: set, cur: pd(nil),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "gangPolicy"), "cannot be removed once set: PodGroups and the pods' scheduling follow it; delete and recreate the service to drop gang scheduling")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ValidateGangPolicyUpdate(tc.old, tc.cur)); diff != "" {
				t.Errorf("ValidateGangPolicyUpdate (-want +got):\n%s", diff)
			}
		})
	}
}
