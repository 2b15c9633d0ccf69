package v1beta1

// AnnotationLoRAAdapters is the pod annotation berth writes with the
// service's spec.adapters as JSON ([{"name","source"}]); the engine runtime
// sidecar reads it through a downward API volume, so it reaches running
// pods without a restart.
const AnnotationLoRAAdapters = "ome.io/lora-adapters"

// LoRAAdapter is one LoRA adapter of an InferenceService. OME's
// spec.model.fineTunedWeights name FineTunedWeight objects, which berth
// does not serve; an adapter here names its files directly.
type LoRAAdapter struct {
	// Name is the adapter's name: the model name requests use.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// Source is where the engine loads the adapter from (its lora_path): a
	// path in the engine container, such as a folder under the model's
	// mount, or what the engine itself accepts (a Hugging Face repository
	// for SGLang).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Source string `json:"source"`
}

// PodAdapters is the LoRA state the sidecar of one pod reported.
type PodAdapters struct {
	// Pod is the pod's name.
	Pod string `json:"pod"`
	// Loaded are the adapters the engine serves, by name.
	// +optional
	// +listType=set
	Loaded []string `json:"loaded,omitempty"`
	// Failed are adapters whose load failed, with the engine's reason.
	// +optional
	// +listType=map
	// +listMapKey=name
	Failed []AdapterFailure `json:"failed,omitempty"`
	// Error is why the pod's adapter state could not be read, if so.
	// +optional
	Error string `json:"error,omitempty"`
}

// AdapterFailure is one adapter that failed to load on a pod.
type AdapterFailure struct {
	// Name of the adapter.
	Name string `json:"name"`
	// Reason is the engine's (or the sidecar's) message.
	Reason string `json:"reason"`
}
