package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValidationAction is what a violation of a policy does, as in Kubernetes'
// ValidatingAdmissionPolicyBinding.
// +kubebuilder:validation:Enum=Deny;Warn;Audit
type ValidationAction string

// The validation actions.
const (
	// Deny refuses the request with the violations as the message.
	Deny ValidationAction = "Deny"
	// Warn admits the request and returns each violation as an admission
	// warning (kubectl prints them).
	Warn ValidationAction = "Warn"
	// Audit admits the request, adds the violation to the request's audit
	// event as an audit annotation and counts it in a metric.
	Audit ValidationAction = "Audit"
)

// ServingPolicySpec says where a policy applies, what it allows and what a
// violation does.
type ServingPolicySpec struct {
	// NamespaceSelector selects the namespaces the policy applies to, by
	// their labels. Unset or empty: every namespace. berth's own namespace
	// and kube-system are never subject to a policy.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// ServiceSelector narrows the policy to InferenceServices whose labels
	// match (and to the pods and runtimes of those namespaces as a whole
	// when unset). Unset or empty: every InferenceService.
	// +optional
	ServiceSelector *metav1.LabelSelector `json:"serviceSelector,omitempty"`
	// ValidationActions: what a violation does. Any of Deny, Warn and Audit,
	// each at most once; Deny and Warn together are refused, as in
	// ValidatingAdmissionPolicyBinding (the message would be said twice).
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	ValidationActions []ValidationAction `json:"validationActions"`
	// Rules the selected services must follow. An unset rule allows
	// everything.
	// +optional
	Rules ServingPolicyRules `json:"rules,omitempty"`
}

// ServingPolicyRules are the constraints of a policy. Every unset rule
// allows everything.
type ServingPolicyRules struct {
	// AcceleratorClasses the selected services may be placed on. A class it
	// forbids loses in selection with "forbidden by ServingPolicy/<name>".
	// +optional
	AcceleratorClasses *ObjectRule `json:"acceleratorClasses,omitempty"`
	// Runtimes (ServingRuntimes and ClusterServingRuntimes, by name) the
	// selected services may use. A runtime it forbids loses in selection.
	// +optional
	Runtimes *ObjectRule `json:"runtimes,omitempty"`
	// Images the composed pods may run: every container and init container
	// of every component, including a user's runner override, and the
	// images of ServingRuntimes and ClusterServingRuntimes themselves.
	// +optional
	Images *ImageRule `json:"images,omitempty"`
	// MaxAcceleratorsPerService caps the accelerators one InferenceService
	// may request: over all components, groups (at maxReplicas when set,
	// else replicas) × pods per group × accelerators per pod, counted on
	// the pods as berth composes them.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxAcceleratorsPerService *int64 `json:"maxAcceleratorsPerService,omitempty"`
	// MaxAcceleratorsPerNamespace caps the accelerators of all
	// InferenceServices pinned in one selected namespace, counted as
	// MaxAcceleratorsPerService counts them. The reconciler also keeps a
	// ResourceQuota on requests.<accelerator resource> in each selected
	// namespace, so the apiserver enforces the cap on pods atomically.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxAcceleratorsPerNamespace *int64 `json:"maxAcceleratorsPerNamespace,omitempty"`
	// MaxCostPerHour caps what one InferenceService may cost per hour, in
	// the unit of the AcceleratorClasses' spec.cost.perHour (dollars per
	// accelerator-hour): accelerators (as MaxAcceleratorsPerService counts
	// them) × the class's perHour. A class without a perHour is not
	// limited by it.
	// +optional
	MaxCostPerHour *resource.Quantity `json:"maxCostPerHour,omitempty"`
	// RequiredLabels every selected InferenceService must carry, with a
	// non-empty value (for example team or cost-center).
	// +listType=set
	// +optional
	RequiredLabels []string `json:"requiredLabels,omitempty"`
	// AllowCommand says whether a user may set a container's command on an
	// InferenceService (spec.engine, decoder, router runners, leaders and
	// workers). A command replaces the runtime's entrypoint and bypasses
	// the accelerator's args. Default true.
	// +optional
	AllowCommand *bool `json:"allowCommand,omitempty"`
}

// ObjectRule allows or denies objects by name or by labels. An object is
// allowed when the allow lists are both empty or one of them matches it,
// and neither deny list matches it.
type ObjectRule struct {
	// Allowed names. An entry ending in "*" matches every name with the
	// prefix before it (nvidia-a100-*).
	// +listType=set
	// +optional
	Allowed []string `json:"allowed,omitempty"`
	// AllowedSelector allows the objects whose labels match (for example
	// ome.io/gpu-tier: standard).
	// +optional
	AllowedSelector *metav1.LabelSelector `json:"allowedSelector,omitempty"`
	// Denied names, with the same "*" suffix as Allowed.
	// +listType=set
	// +optional
	Denied []string `json:"denied,omitempty"`
	// DeniedSelector denies the objects whose labels match.
	// +optional
	DeniedSelector *metav1.LabelSelector `json:"deniedSelector,omitempty"`
}

// ImageRule allows image references by registry or repository prefix.
type ImageRule struct {
	// AllowedPrefixes of image references, compared with the reference
	// normalised as the container runtime reads it (lmsysorg/sglang is
	// docker.io/lmsysorg/sglang) on a path boundary: "registry.example.com"
	// allows registry.example.com/any/image, and "ghcr.io/org" allows
	// ghcr.io/org/x but not ghcr.io/organisation/x.
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	AllowedPrefixes []string `json:"allowedPrefixes"`
}

// ServingPolicyStatus is what berth observed of a policy.
type ServingPolicyStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Violations is the number of existing InferenceServices that violate
	// the policy, including those admitted before it existed.
	// +optional
	Violations int32 `json:"violations"`
	// ViolatingServices names up to 20 of them, with the first violation.
	// +listType=atomic
	// +optional
	ViolatingServices []PolicyViolation `json:"violatingServices,omitempty"`
	// Conditions: Ready (the policy is in force).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PolicyViolation names one InferenceService that violates a policy.
type PolicyViolation struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Message is the first violation, as admission would state it.
	Message string `json:"message"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=sp,categories=berth
// +kubebuilder:printcolumn:name="Actions",type=string,JSONPath=`.spec.validationActions`
// +kubebuilder:printcolumn:name="Violations",type=integer,JSONPath=`.status.violations`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ServingPolicy is a cluster admin's policy for InferenceServices, enforced
// at admission on the resolved decision.
type ServingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ServingPolicySpec   `json:"spec"`
	Status ServingPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ServingPolicyList is a list of ServingPolicies.
type ServingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServingPolicy `json:"items"`
}
