package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DownloadPolicy says whether a node keeps reusing weights it already holds.
// +kubebuilder:validation:Enum=AlwaysDownload;ReuseIfExists
type DownloadPolicy string

// Download policies (OME's).
const (
	// AlwaysDownload fetches a fresh copy for every pod: no node cache.
	AlwaysDownload DownloadPolicy = "AlwaysDownload"
	// ReuseIfExists reuses weights a node already holds at storage.path.
	ReuseIfExists DownloadPolicy = "ReuseIfExists"
)

// StorageSpec says where a model's weights live.
type StorageSpec struct {
	// StorageURI, e.g. hf://meta-llama/Llama-3.1-8B-Instruct,
	// s3://bucket/prefix, gs://bucket/prefix,
	// oci://n/{namespace}/b/{bucket}/o/{prefix}, pvc://{claim}/{sub-path},
	// pvc://{namespace}:{claim}/{sub-path} (OME's form for ClusterBaseModels)
	// or an absolute local path.
	// +optional
	StorageURI *string `json:"storageUri,omitempty"`
	// Path on the node where the weights are (or will be) stored.
	// +optional
	Path *string `json:"path,omitempty"`
	// SchemaPath is the path of the model's schema or configuration file
	// inside the storage (OME's field; informational in berth).
	// +optional
	SchemaPath *string `json:"schemaPath,omitempty"`
	// Key is the name of the Secret with credentials for the storage.
	// +optional
	Key *string `json:"key,omitempty"`
	// StorageKey is the key inside that Secret holding the credentials.
	// +optional
	StorageKey *string `json:"storageKey,omitempty"`
	// Parameters passed to the downloader.
	// +optional
	Parameters map[string]string `json:"parameters,omitempty"`
	// NodeSelector restricts which nodes keep a copy of the weights.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// NodeAffinity further restricts which nodes keep a copy.
	// +optional
	NodeAffinity *corev1.NodeAffinity `json:"nodeAffinity,omitempty"`
	// DownloadPolicy: AlwaysDownload or ReuseIfExists (the default).
	// +optional
	DownloadPolicy *DownloadPolicy `json:"downloadPolicy,omitempty"`
}

// DiffusionComponentSpec is one component of a diffusers pipeline, as in
// its model_index.json (OME's field; informational in berth).
type DiffusionComponentSpec struct {
	// +optional
	Library string `json:"library,omitempty"`
	// +optional
	Type string `json:"type,omitempty"`
}

// DiffusionPipelineSpec describes a diffusers pipeline (OME's field,
// mirroring model_index.json; informational in berth).
type DiffusionPipelineSpec struct {
	// +optional
	ClassName *string `json:"className,omitempty"`
	// +optional
	Scheduler *DiffusionComponentSpec `json:"scheduler,omitempty"`
	// +optional
	TextEncoder *DiffusionComponentSpec `json:"textEncoder,omitempty"`
	// +optional
	Tokenizer *DiffusionComponentSpec `json:"tokenizer,omitempty"`
	// +optional
	Transformer *DiffusionComponentSpec `json:"transformer,omitempty"`
	// +optional
	VAE *DiffusionComponentSpec `json:"vae,omitempty"`
	// +optional
	AdditionalComponents map[string]DiffusionComponentSpec `json:"additionalComponents,omitempty"`
}

// BaseModelSpec describes a model: what runtimes must understand to serve it.
type BaseModelSpec struct {
	// ModelFormat, e.g. safetensors 1.0.0. When absent (OME's catalogue
	// gives only storage), berth discovers it from the model's files into
	// status.discovered.
	// +optional
	ModelFormat ModelFormat `json:"modelFormat,omitzero"`
	// ModelType, e.g. llama, mistral.
	// +optional
	ModelType *string `json:"modelType,omitempty"`
	// ModelFramework, e.g. transformers 4.36.2.
	// +optional
	ModelFramework *ModelFrameworkSpec `json:"modelFramework,omitempty"`
	// ModelArchitecture, e.g. MistralForCausalLM.
	// +optional
	ModelArchitecture *string `json:"modelArchitecture,omitempty"`
	// Quantization, e.g. fp8.
	// +optional
	Quantization *ModelQuantization `json:"quantization,omitempty"`
	// ModelParameterSize, e.g. 7B, 7.6B, 500M, 1.5T.
	// +kubebuilder:validation:Pattern=`^\s*[0-9]+(\.[0-9]+)?\s*[kKmMbBtT]?\s*$`
	// +optional
	ModelParameterSize *string `json:"modelParameterSize,omitempty"`
	// ModelCapabilities, e.g. TEXT_GENERATION, EMBEDDING.
	// +optional
	// +listType=atomic
	ModelCapabilities []string `json:"modelCapabilities,omitempty"`
	// APICapabilities, e.g. OPENAI_V1_CHAT_COMPLETIONS (OME's field;
	// informational in berth).
	// +optional
	// +listType=atomic
	APICapabilities []string `json:"apiCapabilities,omitempty"`
	// MaxTokens the model supports.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxTokens *int32 `json:"maxTokens,omitempty"`
	// Storage of the weights.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`
	// Disabled models cannot be served.
	// +optional
	Disabled *bool `json:"disabled,omitempty"`
	// DisplayName is a human-friendly name (OME's field; informational).
	// +optional
	DisplayName *string `json:"displayName,omitempty"`
	// Version of the model (OME's field; informational).
	// +optional
	Version *string `json:"version,omitempty"`
	// Vendor of the model, e.g. meta (OME's field; informational).
	// +optional
	Vendor *string `json:"vendor,omitempty"`
	// CompartmentID (OME's deprecated field; informational).
	// +optional
	CompartmentID *string `json:"compartmentID,omitempty"`
	// ServingMode, e.g. On-demand, Dedicated (OME's field; informational).
	// +optional
	// +listType=atomic
	ServingMode []string `json:"servingMode,omitempty"`
	// ModelConfiguration is the model's configuration as free-form JSON,
	// e.g. its config.json (OME's field; informational).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	ModelConfiguration runtime.RawExtension `json:"modelConfiguration,omitzero"`
	// DiffusionPipeline describes a diffusers pipeline (OME's field;
	// informational).
	// +optional
	DiffusionPipeline *DiffusionPipelineSpec `json:"diffusionPipeline,omitempty"`
	// AdditionalMetadata is free-form (OME's field; informational).
	// +optional
	AdditionalMetadata map[string]string `json:"additionalMetadata,omitempty"`
}

// ModelMetadata is what berth learned from the model's own files
// (config.json, safetensors headers, the file listing). Every field the
// admin wrote in the spec wins over it (see EffectiveModelSpec).
type ModelMetadata struct {
	// +optional
	ModelFormat *ModelFormat `json:"modelFormat,omitempty"`
	// +optional
	ModelFramework *ModelFrameworkSpec `json:"modelFramework,omitempty"`
	// ModelType is config.json's model_type, e.g. llama.
	// +optional
	ModelType *string `json:"modelType,omitempty"`
	// ModelArchitecture is config.json's architectures[0].
	// +optional
	ModelArchitecture *string `json:"modelArchitecture,omitempty"`
	// Quantization from config.json's quantization_config.
	// +optional
	Quantization *ModelQuantization `json:"quantization,omitempty"`
	// ModelParameterSize in human form, e.g. 8.03B.
	// +optional
	ModelParameterSize *string `json:"modelParameterSize,omitempty"`
	// ParameterCount is exact, from the safetensors tensor shapes.
	// +optional
	ParameterCount *int64 `json:"parameterCount,omitempty"`
	// MaxTokens is config.json's max_position_embeddings.
	// +optional
	MaxTokens *int32 `json:"maxTokens,omitempty"`
	// DType is config.json's torch_dtype, e.g. bfloat16.
	// +optional
	DType string `json:"dtype,omitempty"`
	// WeightsBytes is the sum of the weight files' sizes.
	// +optional
	WeightsBytes *int64 `json:"weightsBytes,omitempty"`
	// DownloadBytes is the sum of the sizes of every file of the
	// repository or prefix, what a downloader fetches (weights, tokenizer,
	// configs, and any other copy the repository holds). It sizes the
	// download volume of pods that download the model.
	// +optional
	DownloadBytes *int64 `json:"downloadBytes,omitempty"`
	// Source is what was read, e.g. hf://org/repo@<commit sha>.
	// +optional
	Source string `json:"source,omitempty"`
	// ResolvedAt is when the metadata was read.
	// +optional
	ResolvedAt *metav1.Time `json:"resolvedAt,omitempty"`
}

// LifeCycleState is OME's model state.
// +kubebuilder:validation:Enum=Creating;Importing;In_Transit;In_Training;Ready;Failed
type LifeCycleState string

// Model states berth writes.
const (
	ModelStateCreating LifeCycleState = "Creating"
	ModelStateReady    LifeCycleState = "Ready"
	ModelStateFailed   LifeCycleState = "Failed"
)

// ModelStatus is the observed state of a model.
type ModelStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Discovered is the metadata read from the model's files.
	// +optional
	Discovered *ModelMetadata `json:"discovered,omitempty"`
	// State is OME's summary: Creating, Ready or Failed in berth.
	// +optional
	State LifeCycleState `json:"state,omitempty"`
	// Lifecycle (OME's field; informational).
	// +optional
	Lifecycle *string `json:"lifecycle,omitempty"`
	// NodesReady lists nodes holding the weights (OME's node cache).
	// +optional
	// +listType=atomic
	NodesReady []string `json:"nodesReady,omitempty"`
	// NodesFailed lists nodes that failed to fetch the weights.
	// +optional
	// +listType=atomic
	NodesFailed []string `json:"nodesFailed,omitempty"`
}

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bm,categories=ome;berth
// +kubebuilder:printcolumn:name="Format",type=string,JSONPath=`.spec.modelFormat.name`
// +kubebuilder:printcolumn:name="Architecture",type=string,JSONPath=`.spec.modelArchitecture`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.spec.modelParameterSize`
// +kubebuilder:printcolumn:name="Discovered-Architecture",type=string,JSONPath=`.status.discovered.modelArchitecture`,priority=1
// +kubebuilder:printcolumn:name="Discovered-Size",type=string,JSONPath=`.status.discovered.modelParameterSize`,priority=1
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// BaseModel is a model available to InferenceServices of its namespace.
type BaseModel struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BaseModelSpec `json:"spec,omitempty"`
	Status ModelStatus   `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BaseModelList is a list of BaseModels.
type BaseModelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BaseModel `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cbm,categories=ome;berth
// +kubebuilder:printcolumn:name="Format",type=string,JSONPath=`.spec.modelFormat.name`
// +kubebuilder:printcolumn:name="Architecture",type=string,JSONPath=`.spec.modelArchitecture`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.spec.modelParameterSize`
// +kubebuilder:printcolumn:name="Discovered-Architecture",type=string,JSONPath=`.status.discovered.modelArchitecture`,priority=1
// +kubebuilder:printcolumn:name="Discovered-Size",type=string,JSONPath=`.status.discovered.modelParameterSize`,priority=1
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterBaseModel is a model available to InferenceServices of every namespace.
type ClusterBaseModel struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BaseModelSpec `json:"spec,omitempty"`
	Status ModelStatus   `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterBaseModelList is a list of ClusterBaseModels.
type ClusterBaseModelList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterBaseModel `json:"items"`
}
