package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AcceleratorSelectionStrategy ranks AcceleratorClasses when nothing names one.
// +kubebuilder:validation:Enum=performance;cost;balanced
type AcceleratorSelectionStrategy string

// Selection strategies. balanced is the default, and never means "no class".
const (
	StrategyPerformance AcceleratorSelectionStrategy = "performance"
	StrategyCost        AcceleratorSelectionStrategy = "cost"
	StrategyBalanced    AcceleratorSelectionStrategy = "balanced"
	DefaultStrategy                                  = StrategyBalanced
)

// AcceleratorPerformance holds headline throughput figures. They are
// quantities so that decimals such as 47.9 are exact.
type AcceleratorPerformance struct {
	// +optional
	FP4TFLOPS *resource.Quantity `json:"fp4TFLOPS,omitempty"`
	// +optional
	FP8TFLOPS *resource.Quantity `json:"fp8TFLOPS,omitempty"`
	// +optional
	FP16TFLOPS *resource.Quantity `json:"fp16TFLOPS,omitempty"`
	// +optional
	BF16TFLOPS *resource.Quantity `json:"bf16TFLOPS,omitempty"`
	// +optional
	FP32TFLOPS *resource.Quantity `json:"fp32TFLOPS,omitempty"`
	// +optional
	FP64TFLOPS *resource.Quantity `json:"fp64TFLOPS,omitempty"`
	// +optional
	INT8TOPS *resource.Quantity `json:"int8TOPS,omitempty"`
	// +optional
	INT4TOPS *resource.Quantity `json:"int4TOPS,omitempty"`
}

// AcceleratorCapabilities describe an accelerator (in an AcceleratorClass) or
// the minimum a workload needs (in requiredCapabilities, where memoryGB,
// computeCapability and the performance figures are minimums and features
// must all be present).
type AcceleratorCapabilities struct {
	// MemoryGB is the memory per accelerator, e.g. 80Gi or 80 (read as GiB
	// when it has no unit).
	// +optional
	MemoryGB *resource.Quantity `json:"memoryGB,omitempty"`
	// ComputeCapability (NVIDIA) or equivalent, compared numerically: 10.0 > 9.0.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +optional
	ComputeCapability string `json:"computeCapability,omitempty"`
	// MinComputeCapability is the minimum compute capability (requirements).
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +optional
	MinComputeCapability string `json:"minComputeCapability,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	ClockSpeedMHz *int32 `json:"clockSpeedMHz,omitempty"`
	// +optional
	MemoryBandwidthGBps *resource.Quantity `json:"memoryBandwidthGBps,omitempty"`
	// Features of the accelerator, e.g. tensor-cores, fp8, nvlink.
	// +optional
	// +listType=atomic
	Features []string `json:"features,omitempty"`
	// RequiredFeatures must all be present (requirements).
	// +optional
	// +listType=atomic
	RequiredFeatures []string `json:"requiredFeatures,omitempty"`
	// +optional
	Performance *AcceleratorPerformance `json:"performance,omitempty"`
	// ROCmVersion for AMD accelerators.
	// +optional
	ROCmVersion string `json:"rocmVersion,omitempty"`
	// LevelZeroVersion for Intel accelerators.
	// +optional
	LevelZeroVersion string `json:"levelZeroVersion,omitempty"`
	// CUDAVersion supported by the installed driver.
	// +optional
	CUDAVersion string `json:"cudaVersion,omitempty"`
}

// AcceleratorDiscovery tells how to find the nodes that carry the accelerator.
// The nodeSelector (with the spec.nodeSelector shorthand) is one pattern and
// each of nodeSelectorTerms is an alternative one (OEP-0003): a node belongs
// to the class when it matches any of them, as Kubernetes ORs node selector
// terms. Pods of the class get the same rule as required node affinity.
// Operators and values are checked by the validating webhook
// (selection.ValidateDiscovery), which names the exact field, the value and
// the rewrite (OEP-0003's "Gte 32Gi" on nvidia.com/gpu.memory is "Gt
// 32767"); a CEL rule here could only name spec.discovery.
type AcceleratorDiscovery struct {
	// NodeSelector labels every node of the class carries.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// NodeSelectorTerms are alternative patterns (ORed). At most 3: pods
	// get them as required node affinity, and ANDing layers multiplies
	// terms. The webhook checks operators and values.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=3
	NodeSelectorTerms []corev1.NodeSelectorTerm `json:"nodeSelectorTerms,omitempty"`
	// PCIVendorID, e.g. 10de for NVIDIA. Informational.
	// +optional
	PCIVendorID string `json:"pciVendorID,omitempty"`
	// DeviceIDs lists PCI device IDs. Informational.
	// +optional
	// +listType=atomic
	DeviceIDs []string `json:"deviceIDs,omitempty"`
}

// AcceleratorResource is a device-plugin resource the accelerator exposes.
type AcceleratorResource struct {
	// Name of the resource, e.g. nvidia.com/gpu.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Quantity per accelerator. Defaults to 1.
	// +kubebuilder:default="1"
	// +optional
	Quantity resource.Quantity `json:"quantity,omitempty"`
	// Divisible resources can be subdivided (MIG slices).
	// +optional
	Divisible bool `json:"divisible,omitempty"`
}

// AcceleratorIntegration links the class to schedulers and queues.
type AcceleratorIntegration struct {
	// KueueResourceFlavor to keep in sync with.
	// +optional
	KueueResourceFlavor string `json:"kueueResourceFlavor,omitempty"`
	// VolcanoGPUType for Volcano.
	// +optional
	VolcanoGPUType string `json:"volcanoGPUType,omitempty"`
}

// AcceleratorCost informs the cost strategy.
type AcceleratorCost struct {
	// PerHour in dollars.
	// +optional
	PerHour *resource.Quantity `json:"perHour,omitempty"`
	// PerMillionTokens for usage-based pricing.
	// +optional
	PerMillionTokens *resource.Quantity `json:"perMillionTokens,omitempty"`
	// SpotPerHour in dollars.
	// +optional
	SpotPerHour *resource.Quantity `json:"spotPerHour,omitempty"`
	// Tier for simplified comparison.
	// +kubebuilder:validation:Enum=low;medium;high
	// +optional
	Tier string `json:"tier,omitempty"`
}

// AcceleratorClassSpec describes a class of accelerators with similar capabilities.
// +kubebuilder:validation:XValidation:rule="has(self.nodeSelector) || (has(self.discovery) && (has(self.discovery.nodeSelector) || has(self.discovery.nodeSelectorTerms)))",message="set discovery.nodeSelector or discovery.nodeSelectorTerms so berth can find the nodes of this class"
type AcceleratorClassSpec struct {
	// Vendor: nvidia, amd, intel, ...
	// +optional
	Vendor string `json:"vendor,omitempty"`
	// Family: ampere, hopper, blackwell, cdna2, ...
	// +optional
	Family string `json:"family,omitempty"`
	// Model: a100, h100, mi250x, ...
	// +optional
	Model string `json:"model,omitempty"`
	// Discovery finds the nodes of this class.
	// +optional
	Discovery AcceleratorDiscovery `json:"discovery,omitempty"`
	// NodeSelector is a shorthand for discovery.nodeSelector, as written by
	// Kueue ResourceFlavor sync (OEP-0003, Story 3). Both are ANDed.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Capabilities of one accelerator of this class.
	// +optional
	Capabilities AcceleratorCapabilities `json:"capabilities,omitempty"`
	// Resources the accelerator exposes. The first is the one GPU requests
	// are translated to when this class is chosen.
	// +optional
	// +listType=atomic
	Resources []AcceleratorResource `json:"resources,omitempty"`
	// +optional
	Integration *AcceleratorIntegration `json:"integration,omitempty"`
	// +optional
	Cost *AcceleratorCost `json:"cost,omitempty"`
}

// AcceleratorClassStatus is the observed fleet of a class, written by
// berth-reconciler (at most once per --accelerator-status-interval, and
// only when it changed) with the counts selection uses.
type AcceleratorClassStatus struct {
	// Nodes are the Ready, schedulable nodes discovery matches, sorted.
	// +optional
	// +listType=atomic
	Nodes []string `json:"nodes,omitempty"`
	// AvailableNodes is the number of nodes in status.nodes.
	// +optional
	AvailableNodes int32 `json:"availableNodes,omitempty"`
	// TotalAccelerators is the allocatable of the class's counted resource
	// (its first spec.resources entry, else its vendor's) on status.nodes.
	// +optional
	TotalAccelerators int32 `json:"totalAccelerators,omitempty"`
	// AvailableAccelerators is totalAccelerators minus the requests of
	// bound, non-terminated pods (per node, never below zero).
	// +optional
	AvailableAccelerators int32 `json:"availableAccelerators,omitempty"`
	// LastUpdated is when the figures or conditions last changed.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
	// Conditions: Ready (the class matches at least one Ready node) and
	// SelectorTooBroad (its nodes' product labels name another model than
	// spec.model, or several products).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ac;acc,categories=ome;berth
// +kubebuilder:printcolumn:name="Vendor",type=string,JSONPath=`.spec.vendor`
// +kubebuilder:printcolumn:name="Family",type=string,JSONPath=`.spec.family`
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=`.spec.capabilities.memoryGB`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.availableNodes`
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.totalAccelerators`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableAccelerators`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// AcceleratorClass defines a class of accelerators with similar capabilities
// (OEP-0003), how to find its nodes, and what it costs.
type AcceleratorClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AcceleratorClassSpec   `json:"spec,omitempty"`
	Status AcceleratorClassStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// AcceleratorClassList is a list of AcceleratorClasses.
type AcceleratorClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AcceleratorClass `json:"items"`
}
