package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
)

// ScaleMetric is the metric an autoscaler scales a component on.
// +kubebuilder:validation:Enum=concurrency;rps;cpu;memory
type ScaleMetric string

// The scale metrics of OME's Serving Runtime page.
const (
	ScaleMetricConcurrency ScaleMetric = "concurrency"
	ScaleMetricRPS         ScaleMetric = "rps"
	ScaleMetricCPU         ScaleMetric = "cpu"
	ScaleMetricMemory      ScaleMetric = "memory"
)

// ComponentExtensionSpec holds replica and scaling settings shared by the
// engine, decoder and router of runtimes and InferenceServices.
type ComponentExtensionSpec struct {
	// Replicas is the number of serving groups the reconciler keeps, within
	// [minReplicas, maxReplicas]. An autoscaler writes it for the engine
	// through the InferenceService's scale subresource; the decoder and
	// router are scaled by setting it directly. Defaults to minReplicas.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// MinReplicas is the minimum number of serving groups; 0 enables
	// scale-to-zero. Defaults to 1.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the maximum number of serving groups for autoscaling;
	// 0 means no upper bound.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// ScaleTarget is the integer target value of ScaleMetric.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ScaleTarget *int32 `json:"scaleTarget,omitempty"`
	// ScaleMetric is the metric the autoscaler follows.
	// +optional
	ScaleMetric *ScaleMetric `json:"scaleMetric,omitempty"`
	// Labels added to every pod of the component.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations added to every pod of the component.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// LeaderSpec configures the leader pod of a multi-node serving group.
type LeaderSpec struct {
	PodSpec `json:",inline"`
	// Runner is the leader's main container.
	// +optional
	Runner *RunnerSpec `json:"runner,omitempty"`
}

// WorkerSpec configures the worker pods of a multi-node serving group.
type WorkerSpec struct {
	PodSpec `json:",inline"`
	// Size is the number of worker pods per group (the leader not included).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Size *int32 `json:"size,omitempty"`
	// Runner is each worker's main container.
	// +optional
	Runner *RunnerSpec `json:"runner,omitempty"`
}

// AcceleratorConfigSelector chooses which AcceleratorClass an
// AcceleratorConfiguration applies to.
type AcceleratorConfigSelector struct {
	// AcceleratorClass is the name of the class this configuration applies to.
	// +kubebuilder:validation:MinLength=1
	AcceleratorClass string `json:"acceleratorClass"`
}

// AcceleratorConfiguration is what a component adds when a given
// AcceleratorClass is chosen: env, resources and runner overrides.
type AcceleratorConfiguration struct {
	// Selector says which class this configuration is for.
	Selector AcceleratorConfigSelector `json:"selector"`
	// Env is merged by name over the runtime's env (the user's env wins).
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty"`
	// Resources are merged per resource, keeping the larger of the user's and
	// this value (OEP-0003, Rule 4).
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Runner overrides; its args are merged by flag, and skipped when the
	// InferenceService sets a command.
	// +optional
	Runner *RunnerSpec `json:"runner,omitempty"`
}

// EngineRuntimeRef attaches a ClusterEngineRuntimeProfile's sidecars to a
// component, with per-component overrides (KEP-92).
type EngineRuntimeRef struct {
	// ProfileName is the ClusterEngineRuntimeProfile to attach.
	// +kubebuilder:validation:MinLength=1
	ProfileName string `json:"profileName"`
	// Containers override profile containers of the same name: their env and
	// args are appended.
	// +optional
	// +listType=atomic
	Containers []corev1.Container `json:"containers,omitempty"`
}

// EngineSpec configures the engine component (the prefill side in PD
// deployments). In a runtime it is the default; in an InferenceService it
// overrides the runtime's.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.maxReplicas == 0 || self.minReplicas <= self.maxReplicas",message="minReplicas must not be greater than maxReplicas"
type EngineSpec struct {
	PodSpec                `json:",inline"`
	ComponentExtensionSpec `json:",inline"`
	// Runner is the main container of single-pod groups.
	// +optional
	Runner *RunnerSpec `json:"runner,omitempty"`
	// Leader configures the leader of multi-node groups.
	// +optional
	Leader *LeaderSpec `json:"leader,omitempty"`
	// Worker configures the workers of multi-node groups.
	// +optional
	Worker *WorkerSpec `json:"worker,omitempty"`
	// AcceleratorConfigurations apply when the chosen AcceleratorClass matches.
	// +optional
	// +listType=atomic
	AcceleratorConfigurations []AcceleratorConfiguration `json:"acceleratorConfigurations,omitempty"`
	// EngineRuntimes attach ClusterEngineRuntimeProfile sidecars.
	// +optional
	// +listType=atomic
	EngineRuntimes []EngineRuntimeRef `json:"engineRuntimes,omitempty"`
	// AcceleratorOverride chooses the engine's AcceleratorClass instead of
	// spec.acceleratorSelector (and the ome.io/accelerator-class and
	// ome.io/selection-strategy annotations), so that engine and decoder may
	// run on different classes (OME's field name). Only on an
	// InferenceService: a runtime's engineConfig may not set it.
	// +optional
	AcceleratorOverride *AcceleratorSelector `json:"acceleratorOverride,omitempty"`
}

// DecoderSpec configures the decode side of prefill/decode disaggregated
// serving. It has the same shape as EngineSpec.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.maxReplicas == 0 || self.minReplicas <= self.maxReplicas",message="minReplicas must not be greater than maxReplicas"
type DecoderSpec struct {
	PodSpec                `json:",inline"`
	ComponentExtensionSpec `json:",inline"`
	// +optional
	Runner *RunnerSpec `json:"runner,omitempty"`
	// +optional
	Leader *LeaderSpec `json:"leader,omitempty"`
	// +optional
	Worker *WorkerSpec `json:"worker,omitempty"`
	// +optional
	// +listType=atomic
	AcceleratorConfigurations []AcceleratorConfiguration `json:"acceleratorConfigurations,omitempty"`
	// +optional
	// +listType=atomic
	EngineRuntimes []EngineRuntimeRef `json:"engineRuntimes,omitempty"`
	// AcceleratorOverride chooses the decoder's AcceleratorClass instead of
	// spec.acceleratorSelector (and the ome.io/accelerator-class and
	// ome.io/selection-strategy annotations); the class is pinned in
	// annotation ome.io/resolved-decoder-accelerator-class. Only on an
	// InferenceService: a runtime's decoderConfig may not set it.
	// +optional
	AcceleratorOverride *AcceleratorSelector `json:"acceleratorOverride,omitempty"`
}

// AcceleratorOverrideOf is a component's acceleratorOverride: nil when it
// has none, and always for the router, which never gets a class.
func (s *InferenceServiceSpec) AcceleratorOverrideOf(component string) *AcceleratorSelector {
	switch {
	case component == ComponentEngine && s.Engine != nil:
		return s.Engine.AcceleratorOverride
	case component == ComponentDecoder && s.Decoder != nil:
		return s.Decoder.AcceleratorOverride
	}
	return nil
}

// ForComponent is the service as one component's pods are composed from:
// when the component has an acceleratorOverride, a shallow copy whose
// spec.acceleratorSelector is that override (its nodeSelector narrows the
// component's nodes instead of the service's); otherwise the service
// itself. The result shares everything else with in: do not modify it.
func (in *InferenceService) ForComponent(component string) *InferenceService {
	o := in.Spec.AcceleratorOverrideOf(component)
	if o == nil {
		return in
	}
	v := *in
	v.Spec.AcceleratorSelector = o
	return &v
}

// RouterSpec configures the request router. The router is CPU-only: no
// AcceleratorClass constraint or configuration is ever applied to it.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.maxReplicas == 0 || self.minReplicas <= self.maxReplicas",message="minReplicas must not be greater than maxReplicas"
type RouterSpec struct {
	PodSpec                `json:",inline"`
	ComponentExtensionSpec `json:",inline"`
	// +optional
	Runner *RunnerSpec `json:"runner,omitempty"`
	// Config holds router parameters, passed to the router as given.
	// +optional
	Config map[string]string `json:"config,omitempty"`
	// +optional
	// +listType=atomic
	EngineRuntimes []EngineRuntimeRef `json:"engineRuntimes,omitempty"`
}
