package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/api/policy/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

// MakePolicy is a valid Deny policy; each test changes one thing.
func MakePolicy(edit func(*v1alpha1.ServingPolicySpec)) *v1alpha1.ServingPolicy {
	p := &v1alpha1.ServingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.ServingPolicySpec{
		ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Deny},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		Rules: v1alpha1.ServingPolicyRules{
			AcceleratorClasses: &v1alpha1.ObjectRule{Allowed: []string{"nvidia-a100-*", "nvidia-l4"}, Denied: []string{"*"}},
			Images:             &v1alpha1.ImageRule{AllowedPrefixes: []string{"registry.example.com", "ghcr.io/org", "lmsysorg"}},
			RequiredLabels:     []string{"team", "example.com/cost-center"},
			MaxCostPerHour:     ptr(resource.MustParse("12.5")),
		},
	}}
	if edit != nil {
		edit(&p.Spec)
	}
	return p
}

func TestValidateServingPolicy(t *testing.T) {
	spec := field.NewPath("spec")
	rules := spec.Child("rules")
	actions := spec.Child("validationActions")
	tests := []struct {
		name string
		edit func(*v1alpha1.ServingPolicySpec)
		want field.ErrorList
	}{
		{name: "valid"},
		{name: "Warn and Audit", edit: func(s *v1alpha1.ServingPolicySpec) {
			s.ValidationActions = []v1alpha1.ValidationAction{v1alpha1.Warn, v1alpha1.Audit}
		}},
		{name: "no action", edit: func(s *v1alpha1.ServingPolicySpec) { s.ValidationActions = nil },
			want: field.ErrorList{field.Required(actions, "at least one of Deny, Warn and Audit")}},
		{name: "unknown and repeated actions", edit: func(s *v1alpha1.ServingPolicySpec) {
			s.ValidationActions = []v1alpha1.ValidationAction{"Audit", "Block", "Audit"}
		}, want: field.ErrorList{
			field.NotSupported(actions.Index(1), v1alpha1.ValidationAction("Block"), []string{"Deny", "Warn", "Audit"}),
			field.Duplicate(actions.Index(2), v1alpha1.ValidationAction("Audit")),
		}},
		{name: "Deny and Warn", edit: func(s *v1alpha1.ServingPolicySpec) {
			s.ValidationActions = []v1alpha1.ValidationAction{v1alpha1.Deny, v1alpha1.Warn}
		}, want: field.ErrorList{field.Invalid(actions, []v1alpha1.ValidationAction{v1alpha1.Deny, v1alpha1.Warn},
			"Deny and Warn together are not allowed: a denied request's message would be said twice; use Deny, or Warn")}},
		{name: "bad selectors", edit: func(s *v1alpha1.ServingPolicySpec) {
			s.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near", Values: []string{"a"}}}}
			s.ServiceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}
			s.Rules.Runtimes = &v1alpha1.ObjectRule{DeniedSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn}}}}
		}, want: field.ErrorList{
			field.Invalid(spec.Child("namespaceSelector", "matchExpressions").Index(0).Child("operator"), metav1.LabelSelectorOperator("Near"), "not a valid selector operator"),
			field.Invalid(spec.Child("serviceSelector", "matchLabels"), "bad key!", "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')").WithOrigin("format=k8s-label-key"),
			field.Required(rules.Child("runtimes", "deniedSelector", "matchExpressions").Index(0).Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"),
		}},
		{name: "bad names", edit: func(s *v1alpha1.ServingPolicySpec) {
			s.Rules.AcceleratorClasses = &v1alpha1.ObjectRule{Allowed: []string{"nvidia-*-80gb", "", "a100", "a100", "Nvidia-*", "*a"}}
		}, want: field.ErrorList{
			field.Invalid(rules.Child("acceleratorClasses", "allowed").Index(0), "nvidia-*-80gb", `"*" is allowed only as the last character (a prefix)`),
			field.Invalid(rules.Child("acceleratorClasses", "allowed").Index(1), "", `must be a name, or a name prefix followed by "*"`),
			field.Duplicate(rules.Child("acceleratorClasses", "allowed").Index(3), "a100"),
			field.Invalid(rules.Child("acceleratorClasses", "allowed").Index(4), "Nvidia-*", "is not the prefix of a valid name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
			field.Invalid(rules.Child("acceleratorClasses", "allowed").Index(5), "*a", `"*" is allowed only as the last character (a prefix)`),
		}},
		{name: "bad image prefixes", edit: func(s *v1alpha1.ServingPolicySpec) {
			s.Rules.Images.AllowedPrefixes = []string{"", "ghcr.io/org:1", "ghcr.io/org/*", "ghcr.io/org/", "lmsysorg", "docker.io/lmsysorg"}
		}, want: field.ErrorList{
			field.Invalid(rules.Child("images", "allowedPrefixes").Index(0), "", "empty prefix"),
			field.Invalid(rules.Child("images", "allowedPrefixes").Index(1), "ghcr.io/org:1", "a prefix has no tag"),
			field.Invalid(rules.Child("images", "allowedPrefixes").Index(2), "ghcr.io/org/*", "a prefix has no whitespace, digest or wildcard"),
			field.Duplicate(rules.Child("images", "allowedPrefixes").Index(5), "docker.io/lmsysorg"),
		}},
		{name: "no image prefix", edit: func(s *v1alpha1.ServingPolicySpec) { s.Rules.Images.AllowedPrefixes = nil },
			want: field.ErrorList{field.Required(rules.Child("images", "allowedPrefixes"), "at least one registry or repository prefix (an empty list would forbid every image)")}},
		{name: "negative budgets and cost", edit: func(s *v1alpha1.ServingPolicySpec) {
			s.Rules.MaxAcceleratorsPerService = ptr(int64(-1))
			s.Rules.MaxAcceleratorsPerNamespace = ptr(int64(-16))
			s.Rules.MaxCostPerHour = ptr(resource.MustParse("-0.5"))
		}, want: field.ErrorList{
			field.Invalid(rules.Child("maxAcceleratorsPerService"), int64(-1), "must not be negative"),
			field.Invalid(rules.Child("maxAcceleratorsPerNamespace"), int64(-16), "must not be negative"),
			field.Invalid(rules.Child("maxCostPerHour"), "-500m", "must not be negative"),
		}},
		{name: "zero budgets are allowed", edit: func(s *v1alpha1.ServingPolicySpec) {
			s.Rules.MaxAcceleratorsPerService = ptr(int64(0))
			s.Rules.MaxCostPerHour = ptr(resource.MustParse("0"))
		}},
		{name: "bad required labels", edit: func(s *v1alpha1.ServingPolicySpec) {
			s.Rules.RequiredLabels = []string{"team", "-team", "team"}
		}, want: field.ErrorList{
			field.Invalid(rules.Child("requiredLabels").Index(1), "-team", "is not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
			field.Duplicate(rules.Child("requiredLabels").Index(2), "team"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ValidateServingPolicy(MakePolicy(tt.edit)))
		})
	}
}

func TestValidateServingPolicyUpdate(t *testing.T) {
	negative := func(s *v1alpha1.ServingPolicySpec) { s.Rules.MaxAcceleratorsPerService = ptr(int64(-1)) }
	both := func(s *v1alpha1.ServingPolicySpec) {
		negative(s)
		s.ValidationActions = []v1alpha1.ValidationAction{v1alpha1.Deny, v1alpha1.Deny}
	}
	rules := field.NewPath("spec", "rules")
	tests := []struct {
		name     string
		old, cur *v1alpha1.ServingPolicy
		want     field.ErrorList
	}{
		{name: "valid to valid", old: MakePolicy(nil), cur: MakePolicy(nil)},
		{name: "valid to invalid", old: MakePolicy(nil), cur: MakePolicy(negative),
			want: field.ErrorList{field.Invalid(rules.Child("maxAcceleratorsPerService"), int64(-1), "must not be negative")}},
		{name: "an error the old object had is not reported again", old: MakePolicy(negative), cur: MakePolicy(negative)},
		{name: "a new error is", old: MakePolicy(negative), cur: MakePolicy(both),
			want: field.ErrorList{field.Duplicate(field.NewPath("spec", "validationActions").Index(1), v1alpha1.Deny)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ValidateServingPolicyUpdate(tt.old, tt.cur))
		})
	}
}
