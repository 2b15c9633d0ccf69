package handlers

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	"github.com/berthdev/berth/policy"
)

// ServingPolicies (policy.berth.dev) are enforced at three points, on what
// berth resolved (see package policy for the rules):
//
//   - InferenceService: selection runs with the policies as a gate, so a
//     forbidden class or runtime loses ("forbidden by ServingPolicy/<name>")
//     and an allowed one is pinned; the validating handler then checks the
//     composed pods of the decision (policy.Set.CheckService).
//   - ServingRuntime and ClusterServingRuntime: the images of the runtime
//     (policy.Set.CheckImages), against the policies of its namespace, or,
//     for a cluster runtime, those that select every namespace.
//   - pods with the ome.io/inferenceservice label: the composed pod
//     (policy.Set.CheckPod), as defence in depth.
//
// A violation does what its policy's validationActions say: Deny refuses
// the request listing every denying violation (a cause per violation, with
// its field when known), Warn returns it as an admission warning, Audit
// adds it to the request's audit event (AuditAnnotations, keyed by
// policy.AuditKey of the policy's name) and counts it. Dry-run requests
// get the same answer. On UPDATE a violation the stored object has too
// only warns (as Kubernetes' validation ratcheting): a policy created
// after a service or runtime must not make every later update of it fail;
// see ratchetViolations.

// PolicySource is what the handlers read of ServingPolicies. A nil source,
// or one whose Set returns nil, enforces nothing.
type PolicySource struct {
	// Set is the compiled set in force (the cache swaps it atomically when
	// policies change).
	Set func() *policy.Set
	// NamespaceLabels are a namespace's labels, nil when unknown.
	NamespaceLabels func(namespace string) map[string]string
	// Observer, when set, counts violations (metrics).
	Observer ViolationObserver

	// usage remembers stored services' accelerators (namespace budgets).
	usage usageCache
}

// ViolationObserver counts policy violations by policy, rule and action
// (Deny, Warn or Audit); the webhook's metrics implement it.
type ViolationObserver interface {
	Violated(policy, rule, action string)
}

func (p *PolicySource) set() *policy.Set {
	if p == nil || p.Set == nil {
		return nil
	}
	return p.Set()
}

// subject is who a check is about: a namespace (with its labels) and, for
// a check about one service, its labels (never nil then).
func (p *PolicySource) subject(namespace string, service map[string]string, aboutService bool) policy.Subject {
	sub := policy.Subject{Namespace: namespace}
	if p != nil && p.NamespaceLabels != nil && namespace != "" {
		sub.NamespaceLabels = p.NamespaceLabels(namespace)
	}
	if aboutService {
		sub.ServiceLabels = service
		if sub.ServiceLabels == nil {
			sub.ServiceLabels = noLabels
		}
	}
	return sub
}

// noLabels are the labels of a service without any; never written.
var noLabels = map[string]string{}

// verdict is what a set of violations does to a request.
type verdict struct {
	deny     []policy.Violation
	warnings []string
	audit    map[string]string
}

// enforce splits vs by action (policy.Enforce) and counts each violation
// once per action.
func (p *PolicySource) enforce(vs []policy.Violation) verdict {
	if len(vs) == 0 {
		return verdict{}
	}
	out := policy.Enforce(vs)
	v := verdict{warnings: out.Warn, audit: out.Audit}
	for _, x := range vs {
		for _, a := range x.Actions {
			if a == v1alpha1.Deny {
				v.deny = append(v.deny, x)
			}
			if p != nil && p.Observer != nil {
				p.Observer.Violated(x.Policy, x.Rule, string(a))
			}
		}
	}
	return v
}

// response is the admission answer of a verdict: a denial listing every
// denying violation when there is one, else allowed with the warnings.
// Either carries the audit annotations.
func (v verdict) response(kind, group, name, display string, warnings []string) *admissionv1.AdmissionResponse {
	warnings = append(warnings, v.warnings...)
	var resp *admissionv1.AdmissionResponse
	if len(v.deny) > 0 {
		resp = policyDenial(kind, group, name, display, v.deny)
		resp.Warnings = warnings
	} else {
		resp = &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings}
	}
	if len(v.audit) > 0 {
		resp.AuditAnnotations = v.audit
	}
	return resp
}

// policyDenial refuses with one cause per violation (its field when known)
// and the violations' sentences, one per line, as the message:
// "<Kind> <display> is denied by ServingPolicy:\n- ServingPolicy/<name>: ...".
// The sentences are those Warn mode returns as warnings.
func policyDenial(kind, group, name, display string, vs []policy.Violation) *admissionv1.AdmissionResponse {
	lines := make([]string, 0, len(vs))
	causes := make([]metav1.StatusCause, 0, len(vs))
	for _, v := range vs {
		if len(lines) > 0 && lines[len(lines)-1] == v.Message {
			continue
		}
		lines = append(lines, v.Message)
		c := metav1.StatusCause{Type: metav1.CauseType(field.ErrorTypeForbidden), Message: v.Message}
		if v.Field != nil {
			c.Field = v.Field.String()
		}
		causes = append(causes, c)
	}
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Details: &metav1.StatusDetails{Group: group, Kind: kind, Name: name, Causes: causes},
		Message: fmt.Sprintf("%s %s is denied by ServingPolicy:\n- %s", kind, display, strings.Join(lines, "\n- ")),
	}}
}

// ratchetViolations lets through, on UPDATE, a Deny of what the stored
// object violates too: such a violation loses its Deny (its Warn and Audit
// stay) and is said as a warning. A violation is the same when its
// sentence is (the same image, class or missing label). The numbers of a
// budget differ between the two, so a quantitative rule (accelerators,
// cost) is the same when its policy, rule and field are, and ratchets only
// when the update does not ask for more accelerators than the stored
// object (grew false): scaling down a service over budget passes, scaling
// it up does not.
func ratchetViolations(cur, old []policy.Violation, grew bool) (out []policy.Violation, warnings []string) {
	had := map[string]bool{}
	for _, v := range old {
		had[violationKey(v)] = true
	}
	for _, v := range cur {
		if !slices.Contains(v.Actions, v1alpha1.Deny) || !had[violationKey(v)] || (quantitative(v.Rule) && grew) {
			out = append(out, v)
			continue
		}
		warnings = append(warnings, v.Message+" (not introduced by this update, so not denied)")
		v.Actions = slices.DeleteFunc(slices.Clone(v.Actions), func(a v1alpha1.ValidationAction) bool { return a == v1alpha1.Deny })
		out = append(out, v)
	}
	return out, warnings
}

func violationKey(v policy.Violation) string {
	if !quantitative(v.Rule) {
		return v.Message
	}
	f := ""
	if v.Field != nil {
		f = v.Field.String()
	}
	return v.Policy + "\x00" + v.Rule + "\x00" + f
}

func quantitative(rule string) bool {
	switch rule {
	case "maxAcceleratorsPerService", "maxAcceleratorsPerNamespace", "maxCostPerHour":
		return true
	}
	return false
}

// policyExclusions is one warning naming every candidate a ServingPolicy
// excluded from the decision, with the policy ("" when none was): the
// summary quotes one loser only, and a user whose service did not get the
// class it would have had must see why.
func policyExclusions(c *choice) string {
	lines := forbiddenLines(c.Explanation)
	if c.decoder != nil {
		for _, l := range forbiddenLines(c.decoder.Explanation) {
			if !slices.Contains(lines, l) {
				lines = append(lines, decoderLine+l)
			}
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return fmt.Sprintf("ServingPolicy excluded %d %s: %s", len(lines), plural(len(lines), "candidate", "candidates"), strings.Join(lines, "; "))
}

// forbiddenLines are the explanation lines of candidates a policy excluded.
func forbiddenLines(explanation []string) []string {
	var out []string
	for _, l := range explanation {
		if strings.Contains(l, "forbidden by ServingPolicy/") {
			out = append(out, l)
		}
	}
	return out
}
