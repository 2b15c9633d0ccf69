package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ProfileWrapper builds a ClusterEngineRuntimeProfile.
type ProfileWrapper struct {
	p v1beta1.ClusterEngineRuntimeProfile
}

// MakeProfile starts a ClusterEngineRuntimeProfile with an empty spec.
func MakeProfile(name string) *ProfileWrapper {
	return &ProfileWrapper{p: v1beta1.ClusterEngineRuntimeProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Obj returns a copy of the profile.
func (w *ProfileWrapper) Obj() *v1beta1.ClusterEngineRuntimeProfile { return w.p.DeepCopy() }

// Container appends a container to spec.containers.
func (w *ProfileWrapper) Container(c corev1.Container) *ProfileWrapper {
	w.p.Spec.Containers = append(w.p.Spec.Containers, c)
	return w
}

// InitContainer appends a container to spec.initContainers.
func (w *ProfileWrapper) InitContainer(c corev1.Container) *ProfileWrapper {
	w.p.Spec.InitContainers = append(w.p.Spec.InitContainers, c)
	return w
}

// Volume appends a volume to spec.volumes.
func (w *ProfileWrapper) Volume(v corev1.Volume) *ProfileWrapper {
	w.p.Spec.Volumes = append(w.p.Spec.Volumes, v)
	return w
}
