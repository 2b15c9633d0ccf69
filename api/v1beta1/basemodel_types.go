package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StorageSpec says where a model's weights live.
type StorageSpec struct {
	// StorageURI, e.g. hf://meta-llama/Llama-3.1-8B-Instruct or oci://...
	// +optional
	StorageURI *string `json:"storageUri,omitempty"`
	// Path on the node where the weights are (or will be) stored.
	// +optional
	Path *string `json:"path,omitempty"`
	// Key of a secret with credentials for the storage.
	// +optional
	Key *string `json:"key,omitempty"`
	// Parameters passed to the downloader.
	// +optional
	Parameters map[string]string `json:"parameters,omitempty"`
	// NodeSelector restricts which nodes keep a copy of the weights.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// BaseModelSpec describes a model: what runtimes must understand to serve it.
type BaseModelSpec struct {
	// ModelFormat, e.g. safetensors 1.0.0.
	ModelFormat ModelFormat `json:"modelFormat"`
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
}

// ModelStatus is the observed state of a model.
type ModelStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bm,categories=ome;berth
// +kubebuilder:printcolumn:name="Format",type=string,JSONPath=`.spec.modelFormat.name`
// +kubebuilder:printcolumn:name="Architecture",type=string,JSONPath=`.spec.modelArchitecture`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.spec.modelParameterSize`
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
