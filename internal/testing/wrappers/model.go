package wrappers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// modelSetters are the setters BaseModel and ClusterBaseModel share (they
// have the one spec); each returns the outer wrapper W.
type modelSetters[W any] struct {
	self *W
	spec *v1beta1.BaseModelSpec
}

// Format sets spec.modelFormat (version when not "").
func (s modelSetters[W]) Format(name, version string) *W {
	s.spec.ModelFormat = v1beta1.ModelFormat{Name: name}
	if version != "" {
		s.spec.ModelFormat.Version = ptr(version)
	}
	return s.self
}

// Framework sets spec.modelFramework (version when not "").
func (s modelSetters[W]) Framework(name, version string) *W {
	s.spec.ModelFramework = &v1beta1.ModelFrameworkSpec{Name: name}
	if version != "" {
		s.spec.ModelFramework.Version = ptr(version)
	}
	return s.self
}

// Architecture sets spec.modelArchitecture.
func (s modelSetters[W]) Architecture(a string) *W {
	s.spec.ModelArchitecture = ptr(a)
	return s.self
}

// Size sets spec.modelParameterSize.
func (s modelSetters[W]) Size(size string) *W {
	s.spec.ModelParameterSize = ptr(size)
	return s.self
}

// Quantization sets spec.quantization.
func (s modelSetters[W]) Quantization(q string) *W {
	s.spec.Quantization = ptr(v1beta1.ModelQuantization(q))
	return s.self
}

// StorageURI sets spec.storage.storageUri.
func (s modelSetters[W]) StorageURI(uri string) *W {
	if s.spec.Storage == nil {
		s.spec.Storage = &v1beta1.StorageSpec{}
	}
	s.spec.Storage.StorageURI = ptr(uri)
	return s.self
}

// BaseModelWrapper builds a namespaced BaseModel.
type BaseModelWrapper struct {
	modelSetters[BaseModelWrapper]
	m v1beta1.BaseModel
}

// MakeBaseModel starts a BaseModel ns/name with an empty spec.
func MakeBaseModel(ns, name string) *BaseModelWrapper {
	w := &BaseModelWrapper{m: v1beta1.BaseModel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
	w.modelSetters = modelSetters[BaseModelWrapper]{self: w, spec: &w.m.Spec}
	return w
}

// Obj returns a copy of the model.
func (w *BaseModelWrapper) Obj() *v1beta1.BaseModel { return w.m.DeepCopy() }

// ClusterBaseModelWrapper builds a ClusterBaseModel.
type ClusterBaseModelWrapper struct {
	modelSetters[ClusterBaseModelWrapper]
	m v1beta1.ClusterBaseModel
}

// MakeClusterBaseModel starts a ClusterBaseModel with an empty spec.
func MakeClusterBaseModel(name string) *ClusterBaseModelWrapper {
	w := &ClusterBaseModelWrapper{m: v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	w.modelSetters = modelSetters[ClusterBaseModelWrapper]{self: w, spec: &w.m.Spec}
	return w
}

// Obj returns a copy of the model.
func (w *ClusterBaseModelWrapper) Obj() *v1beta1.ClusterBaseModel { return w.m.DeepCopy() }
