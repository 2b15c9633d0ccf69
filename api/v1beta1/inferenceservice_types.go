package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// ome.io/cost-threshold (seed 002, Story 6). berth accepts and keeps
	// them; no strategy reads them yet.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
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
	ModelFormat ModelFormat `json:"modelFormat"`
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
}

// InferenceServiceSpec is what the user asks to serve, and how.
// +kubebuilder:validation:XValidation:rule="!has(self.decoder) || has(self.engine)",message="decoder needs engine: prefill/decode serving runs the engine as the prefill side"
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
	// AcceleratorSelector chooses the AcceleratorClass of engine and decoder.
	// +optional
	AcceleratorSelector *AcceleratorSelector `json:"acceleratorSelector,omitempty"`
	// ProtocolVersion the service must speak. Defaults to openAI.
	// +optional
	ProtocolVersion *ProtocolVersion `json:"protocolVersion,omitempty"`
	// Predictor is the deprecated KServe shape, migrated at admission.
	// +optional
	Predictor *PredictorSpec `json:"predictor,omitempty"`
}

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
	// Revision the component's pods are composed from.
	// +optional
	Revision string `json:"revision,omitempty"`
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
	// AcceleratorClass the service was pinned to at admission.
	// +optional
	AcceleratorClass string `json:"acceleratorClass,omitempty"`
	// ReadyReplicas of the engine, for kubectl get.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Components maps engine, decoder and router to their state.
	// +optional
	Components map[string]ComponentStatus `json:"components,omitempty"`
}

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=isvc,categories=ome;berth
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model.name`
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.metadata.annotations.ome\.io/resolved-runtime`
// +kubebuilder:printcolumn:name="Accelerator",type=string,JSONPath=`.metadata.annotations.ome\.io/resolved-accelerator-class`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
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
