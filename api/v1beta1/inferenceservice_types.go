package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ModelRef points an InferenceService at a BaseModel or ClusterBaseModel.
type ModelRef struct {
	// Name of the model.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Kind is BaseModel or ClusterBaseModel. When empty, a BaseModel in the
	// service's namespace is looked up first, then a ClusterBaseModel.
	// +kubebuilder:validation:Enum=BaseModel;ClusterBaseModel
	// +optional
	Kind *string `json:"kind,omitempty"`
	// APIGroup of the model kind; ome.io.
	// +optional
	APIGroup *string `json:"apiGroup,omitempty"`
	// FineTunedWeights to serve on top of the base model.
	// +optional
	// +listType=atomic
	FineTunedWeights []string `json:"fineTunedWeights,omitempty"`
}

// ServingRuntimeRef names the runtime explicitly.
type ServingRuntimeRef struct {
	// Name of the runtime. A ServingRuntime in the service's namespace is
	// looked up first, then a ClusterServingRuntime.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Kind is ServingRuntime or ClusterServingRuntime; restricts the lookup.
	// +kubebuilder:validation:Enum=ServingRuntime;ClusterServingRuntime
	// +optional
	Kind *string `json:"kind,omitempty"`
	// APIGroup of the runtime kind; ome.io.
	// +optional
	APIGroup *string `json:"apiGroup,omitempty"`
}

// AcceleratorSelector states what accelerators the service wants.
type AcceleratorSelector struct {
	// PreferredClasses in order of preference. The first one that exists and
	// meets the required capabilities is chosen.
	// +optional
	// +listType=atomic
	PreferredClasses []string `json:"preferredClasses,omitempty"`
	// RequiredCapabilities are merged over the runtime's (stricter wins).
	// +optional
	RequiredCapabilities *AcceleratorCapabilities `json:"requiredCapabilities,omitempty"`
	// Strategy ranks classes when none is named. Defaults to balanced.
	// +optional
	Strategy AcceleratorSelectionStrategy `json:"strategy,omitempty"`
	// NodeSelector narrows the nodes considered for availability and is
	// added to engine and decoder pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Annotations are free-form hints for the selection strategy, such as
	// ome.io/cost-threshold (OEP-0003, Story 6). berth accepts and keeps
	// them; no strategy reads them yet.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// AcceleratorClass names one class (OME's field). Folded at admission
	// into the front of preferredClasses.
	// +optional
	AcceleratorClass *string `json:"acceleratorClass,omitempty"`
	// Policy (OME's field) is folded at admission into strategy:
	// MostCapable is performance, Cheapest is cost, BestFit and
	// FirstAvailable are balanced.
	// +optional
	Policy AcceleratorSelectionPolicy `json:"policy,omitempty"`
	// Constraints (OME's field) are folded at admission into
	// requiredCapabilities where berth has a field for them; the rest
	// (excludedClasses, architectureFamilies, maxMemory,
	// preferredPrecisions) filter candidate classes.
	// +optional
	Constraints *AcceleratorConstraints `json:"constraints,omitempty"`
}

// AcceleratorSelectionPolicy is OME's name for a selection strategy.
// +kubebuilder:validation:Enum=BestFit;Cheapest;MostCapable;FirstAvailable
type AcceleratorSelectionPolicy string

// OME's selection policies.
const (
	PolicyBestFit        AcceleratorSelectionPolicy = "BestFit"
	PolicyCheapest       AcceleratorSelectionPolicy = "Cheapest"
	PolicyMostCapable    AcceleratorSelectionPolicy = "MostCapable"
	PolicyFirstAvailable AcceleratorSelectionPolicy = "FirstAvailable"
)

// AcceleratorConstraints are OME's requirements on a class. Memory is in
// GB (read as GiB, as OME does), compute performance in TFLOPS.
type AcceleratorConstraints struct {
	// MinMemory per accelerator in GB; folds into
	// requiredCapabilities.memoryGB.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinMemory *int64 `json:"minMemory,omitempty"`
	// MaxMemory per accelerator in GB; filters classes with more.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxMemory *int64 `json:"maxMemory,omitempty"`
	// MinComputePerformanceTFLOPS folds into
	// requiredCapabilities.performance.fp16TFLOPS.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinComputePerformanceTFLOPS *int64 `json:"minComputePerformanceTFLOPS,omitempty"`
	// MinArchitectureVersion folds into
	// requiredCapabilities.minComputeCapability.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +optional
	MinArchitectureVersion *string `json:"minArchitectureVersion,omitempty"`
	// RequiredFeatures fold into requiredCapabilities.requiredFeatures.
	// +optional
	// +listType=atomic
	RequiredFeatures []string `json:"requiredFeatures,omitempty"`
	// ExcludedClasses are never chosen.
	// +optional
	// +listType=atomic
	ExcludedClasses []string `json:"excludedClasses,omitempty"`
	// ArchitectureFamilies keep only classes whose family, or
	// vendor-family, is listed (hopper or nvidia-hopper).
	// +optional
	// +listType=atomic
	ArchitectureFamilies []string `json:"architectureFamilies,omitempty"`
	// PreferredPrecisions keep only classes with a performance figure for
	// at least one listed precision (fp4, fp8, fp16, bf16, fp32, fp64,
	// int8, int4).
	// +optional
	// +listType=atomic
	PreferredPrecisions []string `json:"preferredPrecisions,omitempty"`
}

// PredictorExtensionSpec is a KServe predictor container plus its model
// location. Deprecated: use spec.model and spec.engine.
type PredictorExtensionSpec struct {
	// StorageURI of the model.
	// +optional
	StorageURI *string `json:"storageUri,omitempty"`
	// RuntimeVersion of the serving image.
	// +optional
	RuntimeVersion *string `json:"runtimeVersion,omitempty"`
	// ProtocolVersion the predictor speaks.
	// +optional
	ProtocolVersion *ProtocolVersion `json:"protocolVersion,omitempty"`
	// The container fields (all optional).
	RunnerSpec `json:",inline"`
}

// PredictorModelSpec is the KServe predictor.model shape.
type PredictorModelSpec struct {
	// ModelFormat of the model.
	// +optional
	ModelFormat ModelFormat `json:"modelFormat,omitzero"`
	// BaseModel names the model (OME's deprecated form); migrated at
	// admission into spec.model.name.
	// +optional
	BaseModel *string `json:"baseModel,omitempty"`
	// FineTunedWeights (OME's deprecated form); migrated at admission into
	// spec.model.fineTunedWeights.
	// +optional
	// +listType=atomic
	FineTunedWeights []string `json:"fineTunedWeights,omitempty"`
	// Runtime names the runtime explicitly.
	// +optional
	Runtime                *string `json:"runtime,omitempty"`
	PredictorExtensionSpec `json:",inline"`
}

// PredictorSpec is the deprecated KServe-shaped predictor. The mutating
// webhook migrates it into spec.model, spec.runtime and spec.engine.
type PredictorSpec struct {
	// Model is the KServe "new schema" predictor.
	// +optional
	Model *PredictorModelSpec `json:"model,omitempty"`
	// Framework keys of the KServe "previous schema"; exactly one may be set.
	// +optional
	SKLearn *PredictorExtensionSpec `json:"sklearn,omitempty"`
	// +optional
	XGBoost *PredictorExtensionSpec `json:"xgboost,omitempty"`
	// +optional
	Tensorflow *PredictorExtensionSpec `json:"tensorflow,omitempty"`
	// +optional
	PyTorch *PredictorExtensionSpec `json:"pytorch,omitempty"`
	// +optional
	Triton *PredictorExtensionSpec `json:"triton,omitempty"`
	// +optional
	ONNX *PredictorExtensionSpec `json:"onnx,omitempty"`
	// +optional
	HuggingFace *PredictorExtensionSpec `json:"huggingface,omitempty"`
	// +optional
	PMML *PredictorExtensionSpec `json:"pmml,omitempty"`
	// +optional
	LightGBM *PredictorExtensionSpec `json:"lightgbm,omitempty"`
	// +optional
	Paddle *PredictorExtensionSpec `json:"paddle,omitempty"`

	PodSpec                `json:",inline"`
	ComponentExtensionSpec `json:",inline"`

	// WorkerSpec is OME's deprecated multi-node worker template; migrated
	// at admission into spec.engine.worker.
	// +optional
	WorkerSpec *WorkerSpec `json:"workerSpec,omitempty"`
}

// InferenceServiceSpec is what the user asks to serve, and how.
// +kubebuilder:validation:XValidation:rule="!has(self.decoder) || has(self.engine)",message="decoder needs engine: prefill/decode serving runs the engine as the prefill side"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.gangPolicy) || has(self.gangPolicy)",message="spec.gangPolicy cannot be removed once set: PodGroups and the pods' scheduling follow it; delete and recreate the service to drop gang scheduling"
type InferenceServiceSpec struct {
	// Model to serve.
	// +optional
	Model *ModelRef `json:"model,omitempty"`
	// Runtime names the runtime; when empty one is auto-selected.
	// +optional
	Runtime *ServingRuntimeRef `json:"runtime,omitempty"`
	// Engine overrides the runtime's engineConfig.
	// +optional
	Engine *EngineSpec `json:"engine,omitempty"`
	// Decoder overrides the runtime's decoderConfig (PD serving).
	// +optional
	Decoder *DecoderSpec `json:"decoder,omitempty"`
	// Router overrides the runtime's routerConfig.
	// +optional
	Router *RouterSpec `json:"router,omitempty"`
	// AcceleratorSelector chooses the AcceleratorClass of engine and decoder;
	// spec.engine.acceleratorOverride and spec.decoder.acceleratorOverride
	// replace it for their component.
	// +optional
	AcceleratorSelector *AcceleratorSelector `json:"acceleratorSelector,omitempty"`
	// ProtocolVersion the service must speak. Defaults to openAI.
	// +optional
	ProtocolVersion *ProtocolVersion `json:"protocolVersion,omitempty"`
	// Predictor is the deprecated KServe shape, migrated at admission.
	// +optional
	Predictor *PredictorSpec `json:"predictor,omitempty"`
	// RolloutStrategy says how serving groups move to a new revision when the
	// service, its runtime, class or a RollingUpdate profile changes (seed
	// 003, Kthena's field names). Defaults to ServingGroupRollingUpdate with
	// maxUnavailable 1 and partition 0.
	// +optional
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`
	// RecoveryPolicy says what is recreated when a pod of a serving group
	// fails: ServingGroupRecreate (the whole group), RoleRecreate (only the
	// pod; the default) or None (a failed pod is replaced, restarts are left
	// to the kubelet).
	// +optional
	RecoveryPolicy *RecoveryPolicy `json:"recoveryPolicy,omitempty"`
	// RestartGracePeriodSeconds is how long a pod may stay failed or
	// restarting and not Ready before its recovery policy acts. Default 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RestartGracePeriodSeconds *int64 `json:"restartGracePeriodSeconds,omitempty"`
	// ProgressDeadlineSeconds is how long a component may move toward this
	// spec (roll, scale, start or recover its serving groups) without
	// progress before the service says it is stuck: Progressing=False with
	// reason ProgressDeadlineExceeded, and Ready=False unless every desired
	// group is Ready. Progress is a group rolled or removed, or one more
	// group Ready at the current revision. Default 600, as a Deployment's.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
	// GangPolicy turns on gang scheduling (Kthena's ModelServing): the reconciler keeps
	// a PodGroup per serving group, so a multi-node group or a
	// prefill/decode pair is placed whole or not at all. Pods whose
	// schedulerName is volcano or the coscheduling scheduler's are ganged
	// even without it. Once set it cannot be removed.
	// +optional
	GangPolicy *GangPolicy `json:"gangPolicy,omitempty"`
	// PrefillDecodeRatio keeps a prefill/decode service's engine and
	// decoder groups at a ratio: the decoder's replicas follow the
	// engine's (so scaling the service scales both), and rollouts and
	// scaling move the groups in steps that keep the Ready groups of each
	// pairing within maxSkew of the ratio. Only with spec.decoder.
	// +optional
	PrefillDecodeRatio *PrefillDecodeRatio `json:"prefillDecodeRatio,omitempty"`
	// Adapters are LoRA adapters the engine loads at run time through the
	// engine runtime sidecar (docs/engine-sidecar.md). They are not part of
	// the pods' revision: adding or removing one changes running pods
	// without a restart or a rollout.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Adapters []LoRAAdapter `json:"adapters,omitempty"`
}

// GangScheduler names the gang scheduling backend.
// +kubebuilder:validation:Enum=Volcano;Coscheduling
type GangScheduler string

// The gang scheduling backends: Volcano's PodGroup
// (scheduling.volcano.sh/v1beta1) and the scheduler-plugins coscheduling
// PodGroup (scheduling.x-k8s.io/v1alpha1).
const (
	GangSchedulerVolcano      GangScheduler = "Volcano"
	GangSchedulerCoscheduling GangScheduler = "Coscheduling"
)

// Gang roles. A prefill/decode service gangs its engine (prefill) and
// decoder (decode) in one PodGroup; Kthena's role names are accepted as
// aliases.
const (
	GangRolePrefill = "prefill" // = engine
	GangRoleDecode  = "decode"  // = decoder
)

// GangPolicy is Kthena ModelServing's gangPolicy.
type GangPolicy struct {
	// Scheduler is the backend: Volcano or Coscheduling. Empty: the one
	// the pods' schedulerName names, else Volcano.
	// +optional
	Scheduler GangScheduler `json:"scheduler,omitempty"`
	// MinRoleReplicas is, per role of a prefill/decode service (engine or
	// its alias prefill, decoder or its alias decode), how many of its
	// serving groups must be placeable together; a role not named needs
	// all its groups. Each value is at least 1 and at most the role's
	// replicas.
	// +optional
	MinRoleReplicas map[string]int32 `json:"minRoleReplicas,omitempty"`
}

// CanonicalGangRole maps a gang role name to its component: prefill to
// engine, decode to decoder; other names are returned as they are.
func CanonicalGangRole(role string) string {
	switch role {
	case GangRolePrefill:
		return ComponentEngine
	case GangRoleDecode:
		return ComponentDecoder
	}
	return role
}

// RolloutStrategyType names how serving groups are rolled.
// +kubebuilder:validation:Enum=ServingGroupRollingUpdate
type RolloutStrategyType string

// ServingGroupRollingUpdate deletes and recreates whole serving groups,
// highest ordinal first, honouring partition and maxUnavailable.
const ServingGroupRollingUpdate RolloutStrategyType = "ServingGroupRollingUpdate"

// RolloutStrategy is Kthena ModelServing's rolloutStrategy.
type RolloutStrategy struct {
	// Type of the rollout; only ServingGroupRollingUpdate exists.
	// +optional
	Type RolloutStrategyType `json:"type,omitempty"`
	// RollingUpdateConfiguration bounds the rollout.
	// +optional
	RollingUpdateConfiguration *RollingUpdateConfiguration `json:"rollingUpdateConfiguration,omitempty"`
}

// RollingUpdateConfiguration bounds a rolling update, per component.
type RollingUpdateConfiguration struct {
	// Partition: groups with an ordinal below it keep their revision. An
	// integer, or a percentage of the component's groups (rounded up).
	// Default 0: every group rolls.
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`
	// MaxUnavailable is how many groups of a component may be unavailable
	// during the roll. An integer, or a percentage of the component's
	// groups (rounded down, at least 1). Must not be 0. Default 1.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// RecoveryPolicy is what the reconciler recreates when a pod fails.
// +kubebuilder:validation:Enum=ServingGroupRecreate;RoleRecreate;None
type RecoveryPolicy string

// The recovery policies of Kthena's ModelServing.
const (
	ServingGroupRecreate RecoveryPolicy = "ServingGroupRecreate"
	RoleRecreate         RecoveryPolicy = "RoleRecreate"
	RecoveryNone         RecoveryPolicy = "None"
)

// ResolvedRef names a resolved object by kind and name.
type ResolvedRef struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// ComponentStatus is the observed state of one component.
type ComponentStatus struct {
	// Replicas is the number of serving groups.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the number of groups whose pods are all ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// UpdatedReplicas is the number of groups at the current revision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// Revision the component's pods are composed from now; pods stamped
	// with another revision are outdated and rolled.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Workers is the number of worker pods per group (0: single-pod groups).
	// +optional
	Workers int32 `json:"workers,omitempty"`
}

// InferenceServiceStatus is the observed state of a service.
type InferenceServiceStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Resolved, Ready, ...
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Runtime the service was pinned to at admission.
	// +optional
	Runtime *ResolvedRef `json:"runtime,omitempty"`
	// AcceleratorClass the service (its engine) was pinned to at admission;
	// a decoder with a class of its own is pinned in annotation
	// ome.io/resolved-decoder-accelerator-class.
	// +optional
	AcceleratorClass string `json:"acceleratorClass,omitempty"`
	// ReadyReplicas of the engine, for kubectl get.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Replicas is the number of engine serving groups (the scale
	// subresource's status).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Selector selects one pod per engine group (the leader, or the only
	// pod): what an autoscaler counts through the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// Ready is "<ready groups>/<desired groups>" over all components.
	// +optional
	Ready string `json:"ready,omitempty"`
	// URL of the service inside the cluster.
	// +optional
	URL string `json:"url,omitempty"`
	// Components maps engine, decoder and router to their state.
	// +optional
	Components map[string]ComponentStatus `json:"components,omitempty"`
	// Pairings lists, for a prefill/decode service, each pairing its engine
	// and decoder pods carry (label ome.io/pairing) with the Ready
	// groups of each role: two while a rollout runs, one at rest.
	// +optional
	// +listType=map
	// +listMapKey=pairing
	Pairings []PairingStatus `json:"pairings,omitempty"`
	// Adapters says, per pod with an engine runtime sidecar, which of
	// spec.adapters the engine has loaded and which failed to load, why.
	// +optional
	// +listType=map
	// +listMapKey=pod
	Adapters []PodAdapters `json:"adapters,omitempty"`
}

// PairingStatus counts the serving groups of one pairing.
type PairingStatus struct {
	// Pairing is the value of the pods' ome.io/pairing label.
	Pairing string `json:"pairing"`
	// Current: the pairing new groups are created at.
	// +optional
	Current bool `json:"current,omitempty"`
	// Prefill and Decode are the live engine and decoder groups of the
	// pairing; ReadyPrefill and ReadyDecode those that are Ready.
	// +optional
	Prefill int32 `json:"prefill,omitempty"`
	// +optional
	Decode int32 `json:"decode,omitempty"`
	// +optional
	ReadyPrefill int32 `json:"readyPrefill,omitempty"`
	// +optional
	ReadyDecode int32 `json:"readyDecode,omitempty"`
}

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.engine.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=isvc,categories=ome;berth
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model.name`
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.metadata.annotations.ome\.io/resolved-runtime`
// +kubebuilder:printcolumn:name="Accelerator",type=string,JSONPath=`.metadata.annotations.ome\.io/resolved-accelerator-class`
// +kubebuilder:printcolumn:name="Decoder-Accelerator",type=string,JSONPath=`.metadata.annotations.ome\.io/resolved-decoder-accelerator-class`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// InferenceService serves a model. At admission berth resolves its runtime
// and AcceleratorClass and pins them in annotations; its pods are completed
// from that decision.
type InferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InferenceServiceSpec   `json:"spec,omitempty"`
	Status InferenceServiceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// InferenceServiceList is a list of InferenceServices.
type InferenceServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []InferenceService `json:"items"`
}
