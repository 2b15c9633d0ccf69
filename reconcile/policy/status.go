package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
)

// The service's side of ServingPolicy.
const (
	// ConditionPolicyCompliant is on every InferenceService at least one
	// ServingPolicy selects: True when it follows all of them, False when
	// it violates one (for example a service admitted before the policy
	// existed). A service no policy selects has none.
	ConditionPolicyCompliant = "PolicyCompliant"
	// ReasonCompliant: PolicyCompliant=True.
	ReasonCompliant = "Compliant"
	// ReasonViolatesServingPolicy: PolicyCompliant=False.
	ReasonViolatesServingPolicy = "ViolatesServingPolicy"
	// ConditionQuotaExceeded is the serving groups controller's condition
	// of a service whose pods a ResourceQuota refuses
	// (reconcile.ConditionQuotaExceeded, the same string): such services
	// are counted last against a namespace budget.
	ConditionQuotaExceeded = "QuotaExceeded"
)

// The policy's side: its Ready condition.
const (
	// ReasonInForce: Ready=True, the policy's selectors parse and its
	// ResourceQuotas (if it has a namespace budget) are in place.
	ReasonInForce = "InForce"
	// ReasonInvalidSelector: Ready=False, a selector does not parse
	// (admission refuses such a policy; one stored before applies nowhere).
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonQuotaSyncFailed: Ready=False, a ResourceQuota of its namespace
	// budget could not be written (retried with backoff).
	ReasonQuotaSyncFailed = "QuotaSyncFailed"
	// maxViolatingServices is how many services status.violatingServices
	// names.
	maxViolatingServices = 20
)

// policyStatus is a policy's status from its verdicts (service key →
// violations of this policy, empty when compliant), the ResourceQuotas it
// keeps (quota, in how many namespaces) and the error of keeping them.
// violatingServices are the first maxViolatingServices violating services
// by namespace and name, each with its first violation. now stamps a
// condition that changes status.
func policyStatus(sp *policyv1alpha1.ServingPolicy, verdicts map[string][]string, quota string, quotas int, quotaErr error, now metav1.Time) policyv1alpha1.ServingPolicyStatus {
	st := policyv1alpha1.ServingPolicyStatus{ObservedGeneration: sp.Generation, Conditions: slices.Clone(sp.Status.Conditions)}
	keys := make([]string, 0, len(verdicts))
	for k := range verdicts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := verdicts[k]
		if len(v) == 0 {
			continue
		}
		st.Violations++
		if len(st.ViolatingServices) < maxViolatingServices {
			ns, name, _ := strings.Cut(k, "/")
			st.ViolatingServices = append(st.ViolatingServices, policyv1alpha1.PolicyViolation{Namespace: ns, Name: name, Message: v[0]})
		}
	}
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: ReasonInForce, ObservedGeneration: sp.Generation, LastTransitionTime: now,
		Message: fmt.Sprintf("in force: selects %d InferenceService(s), %d violate it", len(verdicts), st.Violations)}
	if quotas > 0 {
		ready.Message += fmt.Sprintf("; ResourceQuota %s keeps the namespace budget in %d namespace(s)", quota, quotas)
	}
	if problem := selectorProblem(sp); problem != "" {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonInvalidSelector, problem+"; the policy applies nowhere until it is fixed"
	} else if quotaErr != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonQuotaSyncFailed, "keeping ResourceQuota "+quota+": "+quotaErr.Error()+"; retried with backoff"
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	return st
}

// selectorProblem names a selector of the policy that does not parse.
func selectorProblem(sp *policyv1alpha1.ServingPolicy) string {
	for _, s := range []struct {
		path string
		sel  *metav1.LabelSelector
	}{{"spec.namespaceSelector", sp.Spec.NamespaceSelector}, {"spec.serviceSelector", sp.Spec.ServiceSelector}} {
		if s.sel == nil {
			continue
		}
		if _, err := metav1.LabelSelectorAsSelector(s.sel); err != nil {
			return s.path + ": " + err.Error()
		}
	}
	return ""
}

// complianceCondition is a service's PolicyCompliant condition from its
// verdicts (policy → its violations of that policy): nil when no policy
// selects it, False naming every policy it violates and quoting the first
// violation (policies in name order), else True naming the policies.
func complianceCondition(verdicts map[string][]string, generation int64) *metav1.Condition {
	if len(verdicts) == 0 {
		return nil
	}
	names := make([]string, 0, len(verdicts))
	for n := range verdicts {
		names = append(names, n)
	}
	sort.Strings(names)
	var all, violated []string
	var first string
	count := 0
	for _, n := range names {
		all = append(all, "ServingPolicy/"+n)
		if v := verdicts[n]; len(v) > 0 {
			violated = append(violated, "ServingPolicy/"+n)
			count += len(v)
			if first == "" {
				first = v[0]
			}
		}
	}
	c := &metav1.Condition{Type: ConditionPolicyCompliant, ObservedGeneration: generation}
	if len(violated) == 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonCompliant, "complies with "+strings.Join(all, ", ")
		return c
	}
	c.Status, c.Reason = metav1.ConditionFalse, ReasonViolatesServingPolicy
	c.Message = fmt.Sprintf("violates %s: %s", strings.Join(violated, ", "), first)
	if count > 1 {
		c.Message += fmt.Sprintf(" (%d violations in all)", count)
	}
	return c
}
