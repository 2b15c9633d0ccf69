package selection

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

// Builders keep the tables short: each test states only what it is about.

func ptr[T any](v T) *T { return &v }

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type rtOpt func(*v1beta1.ServingRuntimeSpec, *metav1.ObjectMeta)

// format is an autoSelect entry for name+version.
func format(name, version string, opts ...func(*v1beta1.SupportedModelFormat)) v1beta1.SupportedModelFormat {
	f := v1beta1.SupportedModelFormat{ModelFormat: &v1beta1.ModelFormat{Name: name}, AutoSelect: ptr(true)}
	if version != "" {
		f.ModelFormat.Version = ptr(version)
	}
	for _, o := range opts {
		o(&f)
	}
	return f
}

func prio(p int32) func(*v1beta1.SupportedModelFormat) {
	return func(f *v1beta1.SupportedModelFormat) { f.Priority = ptr(p) }
}
func arch(a string) func(*v1beta1.SupportedModelFormat) {
	return func(f *v1beta1.SupportedModelFormat) { f.ModelArchitecture = ptr(a) }
}
func quant(q string) func(*v1beta1.SupportedModelFormat) {
	return func(f *v1beta1.SupportedModelFormat) { f.Quantization = ptr(v1beta1.ModelQuantization(q)) }
}
func framework(name, version string, op v1beta1.RuleOperator) func(*v1beta1.SupportedModelFormat) {
	return func(f *v1beta1.SupportedModelFormat) {
		f.ModelFramework = &v1beta1.ModelFrameworkSpec{Name: name}
		if version != "" {
			f.ModelFramework.Version = ptr(version)
		}
		if op != "" {
			f.ModelFramework.Operator = ptr(op)
		}
	}
}
func formatOp(op v1beta1.RuleOperator) func(*v1beta1.SupportedModelFormat) {
	return func(f *v1beta1.SupportedModelFormat) { f.ModelFormat.Operator = ptr(op) }
}
func manual() func(*v1beta1.SupportedModelFormat) {
	return func(f *v1beta1.SupportedModelFormat) { f.AutoSelect = nil }
}

func formats(fs ...v1beta1.SupportedModelFormat) rtOpt {
	return func(s *v1beta1.ServingRuntimeSpec, _ *metav1.ObjectMeta) { s.SupportedModelFormats = fs }
}
func sizes(min, max string) rtOpt {
	return func(s *v1beta1.ServingRuntimeSpec, _ *metav1.ObjectMeta) {
		s.ModelSizeRange = &v1beta1.ModelSizeRangeSpec{}
		if min != "" {
			s.ModelSizeRange.Min = ptr(min)
		}
		if max != "" {
			s.ModelSizeRange.Max = ptr(max)
		}
	}
}
func protocols(ps ...v1beta1.ProtocolVersion) rtOpt {
	return func(s *v1beta1.ServingRuntimeSpec, _ *metav1.ObjectMeta) { s.ProtocolVersions = ps }
}
func disabled() rtOpt {
	return func(s *v1beta1.ServingRuntimeSpec, _ *metav1.ObjectMeta) { s.Disabled = ptr(true) }
}
func created(minutes int) rtOpt {
	return func(_ *v1beta1.ServingRuntimeSpec, m *metav1.ObjectMeta) {
		m.CreationTimestamp = metav1.NewTime(epoch.Add(time.Duration(minutes) * time.Minute))
	}
}
func accel(r *v1beta1.AcceleratorRequirements) rtOpt {
	return func(s *v1beta1.ServingRuntimeSpec, _ *metav1.ObjectMeta) { s.AcceleratorRequirements = r }
}
func gpus(n int64, workers int32) rtOpt {
	return func(s *v1beta1.ServingRuntimeSpec, _ *metav1.ObjectMeta) {
		q := *resource.NewQuantity(n, resource.DecimalSI)
		s.EngineConfig = &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Name: "engine", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"nvidia.com/gpu": q}, Requests: corev1.ResourceList{"nvidia.com/gpu": q}}}}
		if workers > 0 {
			s.EngineConfig.Worker = &v1beta1.WorkerSpec{Size: ptr(workers)}
		}
	}
}

func csr(name string, opts ...rtOpt) *v1beta1.ClusterServingRuntime {
	o := &v1beta1.ClusterServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(epoch)}}
	for _, f := range opts {
		f(&o.Spec, &o.ObjectMeta)
	}
	return o
}

func sr(ns, name string, opts ...rtOpt) *v1beta1.ServingRuntime {
	o := &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(epoch)}}
	for _, f := range opts {
		f(&o.Spec, &o.ObjectMeta)
	}
	return o
}

type modelOpt func(*v1beta1.BaseModelSpec)

func mSize(s string) modelOpt {
	return func(m *v1beta1.BaseModelSpec) { m.ModelParameterSize = ptr(s) }
}
func mArch(a string) modelOpt { return func(m *v1beta1.BaseModelSpec) { m.ModelArchitecture = ptr(a) } }
func mQuant(q string) modelOpt {
	return func(m *v1beta1.BaseModelSpec) { m.Quantization = ptr(v1beta1.ModelQuantization(q)) }
}
func mFormat(n, v string) modelOpt {
	return func(m *v1beta1.BaseModelSpec) {
		m.ModelFormat = v1beta1.ModelFormat{Name: n}
		if v != "" {
			m.ModelFormat.Version = ptr(v)
		}
	}
}
func mFramework(n, v string) modelOpt {
	return func(m *v1beta1.BaseModelSpec) {
		m.ModelFramework = &v1beta1.ModelFrameworkSpec{Name: n}
		if v != "" {
			m.ModelFramework.Version = ptr(v)
		}
	}
}

func cbm(name string, opts ...modelOpt) *v1beta1.ClusterBaseModel {
	o := &v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: name}}
	o.Spec.ModelFormat = v1beta1.ModelFormat{Name: "safetensors", Version: ptr("1.0.0")}
	for _, f := range opts {
		f(&o.Spec)
	}
	return o
}

func bm(ns, name string, opts ...modelOpt) *v1beta1.BaseModel {
	o := &v1beta1.BaseModel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	o.Spec.ModelFormat = v1beta1.ModelFormat{Name: "safetensors", Version: ptr("1.0.0")}
	for _, f := range opts {
		f(&o.Spec)
	}
	return o
}

type isvcOpt func(*v1beta1.InferenceService)

func isvc(model string, opts ...isvcOpt) *v1beta1.InferenceService {
	o := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "svc"}}
	if model != "" {
		o.Spec.Model = &v1beta1.ModelRef{Name: model}
	}
	for _, f := range opts {
		f(o)
	}
	return o
}

func withRuntime(name, kind string) isvcOpt {
	return func(i *v1beta1.InferenceService) {
		i.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: name}
		if kind != "" {
			i.Spec.Runtime.Kind = ptr(kind)
		}
	}
}
func withProtocol(p v1beta1.ProtocolVersion) isvcOpt {
	return func(i *v1beta1.InferenceService) { i.Spec.ProtocolVersion = ptr(p) }
}
func withAnnotation(k, v string) isvcOpt {
	return func(i *v1beta1.InferenceService) {
		if i.Annotations == nil {
			i.Annotations = map[string]string{}
		}
		i.Annotations[k] = v
	}
}
func withSelector(s v1beta1.AcceleratorSelector) isvcOpt {
	return func(i *v1beta1.InferenceService) { i.Spec.AcceleratorSelector = &s }
}

// class is a class of nvidia.com/gpu (quantity 1) on the nodes labelled
// gpu=<name>.
func class(name string) *wrappers.ClassWrapper {
	return wrappers.MakeAcceleratorClass(name).NodeSelector("gpu", name).ResourceQuantity("nvidia.com/gpu", "1")
}

// gpuNode is a Ready node of a class with n free nvidia.com/gpu.
func gpuNode(name, class string, n int64) NodeInfo {
	return NodeInfo{Name: name, Labels: map[string]string{"gpu": class}, Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": n}, Ready: true}
}

// objects is a snapshot; load inserts it into a fresh index.
type objects struct {
	srs     []*v1beta1.ServingRuntime
	csrs    []*v1beta1.ClusterServingRuntime
	bms     []*v1beta1.BaseModel
	cbms    []*v1beta1.ClusterBaseModel
	classes []*v1beta1.AcceleratorClass
	nodes   []NodeInfo
}

func (o objects) load() *Index {
	x := NewIndex()
	for _, r := range o.srs {
		x.UpsertServingRuntime(r)
	}
	for _, r := range o.csrs {
		x.UpsertClusterServingRuntime(r)
	}
	for _, m := range o.bms {
		x.UpsertBaseModel(m)
	}
	for _, m := range o.cbms {
		x.UpsertClusterBaseModel(m)
	}
	for _, c := range o.classes {
		x.UpsertAcceleratorClass(c)
	}
	for _, n := range o.nodes {
		x.UpsertNode(n)
	}
	return x
}
