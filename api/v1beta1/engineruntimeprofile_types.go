package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProfileUpdateStrategy says whether running pods follow profile changes.
// +kubebuilder:validation:Enum=NoUpdate;RollingUpdate
type ProfileUpdateStrategy string

// Profile update strategies.
const (
	// ProfileNoUpdate: a changed profile applies to new pods only.
	ProfileNoUpdate ProfileUpdateStrategy = "NoUpdate"
	// ProfileRollingUpdate: a changed profile changes the revision and rolls groups.
	ProfileRollingUpdate ProfileUpdateStrategy = "RollingUpdate"
)

// ClusterEngineRuntimeProfileSpec is a reusable set of engine sidecars (seed
// 004): topology registration with a router, dynamic LoRA, profiling.
type ClusterEngineRuntimeProfileSpec struct {
	// Containers added to each pod of a component that references the
	// profile, unless the pod already has a container of that name.
	// +optional
	// +listType=atomic
	Containers []corev1.Container `json:"containers,omitempty"`
	// InitContainers added likewise.
	// +optional
	// +listType=atomic
	InitContainers []corev1.Container `json:"initContainers,omitempty"`
	// Volumes added unless the pod has a volume of that name.
	// +optional
	// +listType=atomic
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// UpdateStrategy, NoUpdate by default.
	// +optional
	UpdateStrategy ProfileUpdateStrategy `json:"updateStrategy,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cerp,categories=ome;berth
// +kubebuilder:printcolumn:name="Update",type=string,JSONPath=`.spec.updateStrategy`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterEngineRuntimeProfile is a cluster-wide set of engine sidecars that
// components reference by name.
type ClusterEngineRuntimeProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterEngineRuntimeProfileSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterEngineRuntimeProfileList is a list of ClusterEngineRuntimeProfiles.
type ClusterEngineRuntimeProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterEngineRuntimeProfile `json:"items"`
}
