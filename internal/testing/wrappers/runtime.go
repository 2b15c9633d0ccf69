package wrappers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// runtimeSetters are the setters ServingRuntime and ClusterServingRuntime
// share (they have the one spec); each returns the outer wrapper W.
type runtimeSetters[W any] struct {
	self *W
	meta *metav1.ObjectMeta
	spec *v1beta1.ServingRuntimeSpec
}

// Label sets metadata label k to v.
func (s runtimeSetters[W]) Label(k, v string) *W {
	s.meta.Labels = withEntry(s.meta.Labels, k, v)
	return s.self
}

// Created sets metadata.creationTimestamp.
func (s runtimeSetters[W]) Created(at time.Time) *W {
	s.meta.CreationTimestamp = metav1.NewTime(at)
	return s.self
}

// Formats sets spec.supportedModelFormats.
func (s runtimeSetters[W]) Formats(fs ...v1beta1.SupportedModelFormat) *W {
	s.spec.SupportedModelFormats = fs
	return s.self
}

// AutoSelect is one supportedModelFormats entry for format name (version
// when not ""), autoSelect true, at priority p.
func AutoSelect(name, version string, p int32) v1beta1.SupportedModelFormat {
	f := v1beta1.SupportedModelFormat{ModelFormat: &v1beta1.ModelFormat{Name: name}, AutoSelect: ptr(true), Priority: ptr(p)}
	if version != "" {
		f.ModelFormat.Version = ptr(version)
	}
	return f
}

// Protocols sets spec.protocolVersions.
func (s runtimeSetters[W]) Protocols(ps ...v1beta1.ProtocolVersion) *W {
	s.spec.ProtocolVersions = ps
	return s.self
}

// Disabled sets spec.disabled.
func (s runtimeSetters[W]) Disabled() *W {
	s.spec.Disabled = ptr(true)
	return s.self
}

// SizeRange sets spec.modelSizeRange ("" leaves a bound unset).
func (s runtimeSetters[W]) SizeRange(minSize, maxSize string) *W {
	s.spec.ModelSizeRange = &v1beta1.ModelSizeRangeSpec{}
	if minSize != "" {
		s.spec.ModelSizeRange.Min = ptr(minSize)
	}
	if maxSize != "" {
		s.spec.ModelSizeRange.Max = ptr(maxSize)
	}
	return s.self
}

// Accelerators sets spec.acceleratorRequirements.
func (s runtimeSetters[W]) Accelerators(r v1beta1.AcceleratorRequirements) *W {
	s.spec.AcceleratorRequirements = &r
	return s.self
}

func (s runtimeSetters[W]) engine() *v1beta1.EngineSpec {
	if s.spec.EngineConfig == nil {
		s.spec.EngineConfig = &v1beta1.EngineSpec{}
	}
	return s.spec.EngineConfig
}

// EngineRunner sets spec.engineConfig.runner.
func (s runtimeSetters[W]) EngineRunner(r v1beta1.RunnerSpec) *W {
	s.engine().Runner = &r
	return s.self
}

// Image sets the image of spec.engineConfig.runner.
func (s runtimeSetters[W]) Image(image string) *W {
	e := s.engine()
	if e.Runner == nil {
		e.Runner = &v1beta1.RunnerSpec{}
	}
	e.Runner.Image = image
	return s.self
}

// GPUs sets the engine runner's nvidia.com/gpu request and limit to n.
func (s runtimeSetters[W]) GPUs(n int64) *W {
	e := s.engine()
	if e.Runner == nil {
		e.Runner = &v1beta1.RunnerSpec{}
	}
	e.Runner.Resources = corev1.ResourceRequirements{Requests: count("nvidia.com/gpu", n), Limits: count("nvidia.com/gpu", n)}
	return s.self
}

// Workers makes the engine multi-node: a leader and size workers.
func (s runtimeSetters[W]) Workers(size int32) *W {
	s.engine().Worker = &v1beta1.WorkerSpec{Size: ptr(size)}
	return s.self
}

// Decoder sets spec.decoderConfig.runner.
func (s runtimeSetters[W]) Decoder(r v1beta1.RunnerSpec) *W {
	s.spec.DecoderConfig = &v1beta1.DecoderSpec{Runner: &r}
	return s.self
}

// Router sets spec.routerConfig.runner.
func (s runtimeSetters[W]) Router(r v1beta1.RunnerSpec) *W {
	s.spec.RouterConfig = &v1beta1.RouterSpec{Runner: &r}
	return s.self
}

// ClassImage appends an acceleratorConfigurations entry running image on
// AcceleratorClass class.
func (s runtimeSetters[W]) ClassImage(class, image string) *W {
	s.spec.AcceleratorConfigurations = append(s.spec.AcceleratorConfigurations, v1beta1.AcceleratorConfiguration{
		Selector: v1beta1.AcceleratorConfigSelector{AcceleratorClass: class}, Runner: &v1beta1.RunnerSpec{Image: image}})
	return s.self
}

// ClusterServingRuntimeWrapper builds a ClusterServingRuntime.
type ClusterServingRuntimeWrapper struct {
	runtimeSetters[ClusterServingRuntimeWrapper]
	rt v1beta1.ClusterServingRuntime
}

// MakeClusterServingRuntime starts a ClusterServingRuntime with only its
// name.
func MakeClusterServingRuntime(name string) *ClusterServingRuntimeWrapper {
	w := &ClusterServingRuntimeWrapper{rt: v1beta1.ClusterServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	w.runtimeSetters = runtimeSetters[ClusterServingRuntimeWrapper]{self: w, meta: &w.rt.ObjectMeta, spec: &w.rt.Spec}
	return w
}

// Obj returns a copy of the runtime.
func (w *ClusterServingRuntimeWrapper) Obj() *v1beta1.ClusterServingRuntime { return w.rt.DeepCopy() }

// ServingRuntimeWrapper builds a namespaced ServingRuntime.
type ServingRuntimeWrapper struct {
	runtimeSetters[ServingRuntimeWrapper]
	rt v1beta1.ServingRuntime
}

// MakeServingRuntime starts a ServingRuntime ns/name.
func MakeServingRuntime(ns, name string) *ServingRuntimeWrapper {
	w := &ServingRuntimeWrapper{rt: v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
	w.runtimeSetters = runtimeSetters[ServingRuntimeWrapper]{self: w, meta: &w.rt.ObjectMeta, spec: &w.rt.Spec}
	return w
}

// Obj returns a copy of the runtime.
func (w *ServingRuntimeWrapper) Obj() *v1beta1.ServingRuntime { return w.rt.DeepCopy() }
