// Package validation holds the stateless validation of ServingPolicy: what
// the webhook refuses at admission, each error with the path of the field
// at fault, so `kubectl apply` names every field at once. Tests compare
// the lists by value.
//
//  1. spec.validationActions: at least one; each Deny, Warn or Audit, at
//     most once; Deny and Warn not together (as in Kubernetes'
//     ValidatingAdmissionPolicyBinding: the message would be said twice).
//  2. spec.namespaceSelector, spec.serviceSelector and the rules'
//     allowedSelector and deniedSelector are valid label selectors
//     (metav1validation.ValidateLabelSelector).
//  3. Names in rules.acceleratorClasses and rules.runtimes (allowed,
//     denied): a DNS subdomain, or a prefix of one followed by "*"; "*"
//     appears only as the last character; no name twice.
//  4. rules.images.allowedPrefixes: at least one; each a registry, or a
//     registry and a path, without tag, digest or wildcard (as
//     policy/imageref reads it); no prefix twice.
//  5. maxAcceleratorsPerService, maxAcceleratorsPerNamespace and
//     maxCostPerHour are not negative.
//  6. requiredLabels are valid label keys, each once.
//
// An update is held to the same rules, except that an error the old
// object already had is not reported again (ratcheting), so a policy
// stored before a rule existed can still be relabelled or have its status
// written.
package validation

import (
	"strings"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/api/policy/v1alpha1"
	"github.com/berthdev/berth/api/policy/v1alpha1/imageref"
)

var knownActions = []string{string(v1alpha1.Deny), string(v1alpha1.Warn), string(v1alpha1.Audit)}

// ValidateServingPolicy checks a ServingPolicy's spec.
func ValidateServingPolicy(p *v1alpha1.ServingPolicy) field.ErrorList {
	if p == nil {
		return nil
	}
	spec := field.NewPath("spec")
	errs := validateActions(spec.Child("validationActions"), p.Spec.ValidationActions)
	errs = append(errs, validateSelectors(spec, &p.Spec)...)
	errs = append(errs, validateRules(spec.Child("rules"), &p.Spec.Rules)...)
	return errs
}

// ValidateServingPolicyUpdate checks the new object as
// ValidateServingPolicy does, leaving out the errors the old one had.
func ValidateServingPolicyUpdate(old, cur *v1alpha1.ServingPolicy) field.ErrorList {
	errs := ValidateServingPolicy(cur)
	if old == nil || len(errs) == 0 {
		return errs
	}
	had := map[string]bool{}
	for _, e := range ValidateServingPolicy(old) {
		had[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !had[e.Error()] {
			out = append(out, e)
		}
	}
	return out
}

func validateActions(p *field.Path, actions []v1alpha1.ValidationAction) field.ErrorList {
	var errs field.ErrorList
	if len(actions) == 0 {
		return append(errs, field.Required(p, "at least one of Deny, Warn and Audit"))
	}
	seen := sets.New[v1alpha1.ValidationAction]()
	for i, a := range actions {
		switch {
		case a != v1alpha1.Deny && a != v1alpha1.Warn && a != v1alpha1.Audit:
			errs = append(errs, field.NotSupported(p.Index(i), a, knownActions))
		case seen.Has(a):
			errs = append(errs, field.Duplicate(p.Index(i), a))
		}
		seen.Insert(a)
	}
	if seen.Has(v1alpha1.Deny) && seen.Has(v1alpha1.Warn) {
		errs = append(errs, field.Invalid(p, actions, "Deny and Warn together are not allowed: a denied request's message would be said twice; use Deny, or Warn"))
	}
	return errs
}

func validateSelectors(spec *field.Path, s *v1alpha1.ServingPolicySpec) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(s.NamespaceSelector, opts, spec.Child("namespaceSelector"))
	return append(errs, metav1validation.ValidateLabelSelector(s.ServiceSelector, opts, spec.Child("serviceSelector"))...)
}

func validateRules(p *field.Path, r *v1alpha1.ServingPolicyRules) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateObjectRule(p.Child("acceleratorClasses"), r.AcceleratorClasses)...)
	errs = append(errs, validateObjectRule(p.Child("runtimes"), r.Runtimes)...)
	if r.Images != nil {
		errs = append(errs, validatePrefixes(p.Child("images", "allowedPrefixes"), r.Images.AllowedPrefixes)...)
	}
	for _, b := range []struct {
		name string
		v    *int64
	}{{"maxAcceleratorsPerService", r.MaxAcceleratorsPerService}, {"maxAcceleratorsPerNamespace", r.MaxAcceleratorsPerNamespace}} {
		if b.v != nil && *b.v < 0 {
			errs = append(errs, field.Invalid(p.Child(b.name), *b.v, "must not be negative"))
		}
	}
	if q := r.MaxCostPerHour; q != nil && q.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("maxCostPerHour"), q.String(), "must not be negative"))
	}
	seen := sets.New[string]()
	for i, l := range r.RequiredLabels {
		lp := p.Child("requiredLabels").Index(i)
		for _, msg := range validation.IsQualifiedName(l) {
			errs = append(errs, field.Invalid(lp, l, "is not a valid label key: "+msg))
		}
		if seen.Has(l) {
			errs = append(errs, field.Duplicate(lp, l))
		}
		seen.Insert(l)
	}
	return errs
}

func validateObjectRule(p *field.Path, r *v1alpha1.ObjectRule) field.ErrorList {
	if r == nil {
		return nil
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := validateNames(p.Child("allowed"), r.Allowed)
	errs = append(errs, metav1validation.ValidateLabelSelector(r.AllowedSelector, opts, p.Child("allowedSelector"))...)
	errs = append(errs, validateNames(p.Child("denied"), r.Denied)...)
	return append(errs, metav1validation.ValidateLabelSelector(r.DeniedSelector, opts, p.Child("deniedSelector"))...)
}

// validateNames: each entry is an object name, or a name prefix ending in
// "*"; none twice.
func validateNames(p *field.Path, names []string) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, n := range names {
		np := p.Index(i)
		if seen.Has(n) {
			errs = append(errs, field.Duplicate(np, n))
		}
		seen.Insert(n)
		errs = append(errs, validateName(np, n)...)
	}
	return errs
}

func validateName(p *field.Path, n string) field.ErrorList {
	prefix, isPrefix := strings.CutSuffix(n, "*")
	switch {
	case n == "":
		return field.ErrorList{field.Invalid(p, n, "must be a name, or a name prefix followed by \"*\"")}
	case strings.Contains(prefix, "*"):
		return field.ErrorList{field.Invalid(p, n, "\"*\" is allowed only as the last character (a prefix)")}
	case isPrefix:
		if prefix == "" {
			return nil
		}
		// A prefix of a DNS subdomain: the same characters, and a
		// complete name once any lower-case letter or digit ends it.
		for _, msg := range validation.IsDNS1123Subdomain(prefix + "x") {
			return field.ErrorList{field.Invalid(p, n, "is not the prefix of a valid name: "+msg)}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(n) {
		errs = append(errs, field.Invalid(p, n, msg))
	}
	return errs
}

func validatePrefixes(p *field.Path, prefixes []string) field.ErrorList {
	var errs field.ErrorList
	if len(prefixes) == 0 {
		return append(errs, field.Required(p, "at least one registry or repository prefix (an empty list would forbid every image)"))
	}
	seen := sets.New[string]()
	for i, pre := range prefixes {
		pp := p.Index(i)
		norm, err := imageref.NormalizePrefix(pre)
		if err != nil {
			errs = append(errs, field.Invalid(pp, pre, err.Error()))
			continue
		}
		if seen.Has(norm) {
			errs = append(errs, field.Duplicate(pp, pre))
		}
		seen.Insert(norm)
	}
	return errs
}
