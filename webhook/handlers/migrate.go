package handlers

import (
	"fmt"
	"reflect"
	"slices"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// kserveFramework maps a KServe "previous schema" predictor key to the model
// format it serves. KServe's defaulter gives Triton, ONNX and Hugging Face
// protocol v2 (KServe's Serving Runtimes page; kserve pkg/apis/serving/v1beta1
// inference_service_defaults.go); the runtime is auto-selected.
type kserveFramework struct {
	format   string
	protocol v1beta1.ProtocolVersion
}

var kserveFrameworks = []struct {
	key string
	get func(*v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec
	kserveFramework
}{
	{"sklearn", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.SKLearn }, kserveFramework{"sklearn", ""}},
	{"xgboost", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.XGBoost }, kserveFramework{"xgboost", ""}},
	{"tensorflow", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.Tensorflow }, kserveFramework{"tensorflow", ""}},
	{"pytorch", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.PyTorch }, kserveFramework{"pytorch", ""}},
	{"triton", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.Triton }, kserveFramework{"triton", v1beta1.ProtocolKServeV2}},
	{"onnx", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.ONNX }, kserveFramework{"onnx", v1beta1.ProtocolKServeV2}},
	{"huggingface", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.HuggingFace }, kserveFramework{"huggingface", v1beta1.ProtocolKServeV2}},
	{"pmml", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.PMML }, kserveFramework{"pmml", ""}},
	{"lightgbm", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.LightGBM }, kserveFramework{"lightgbm", ""}},
	{"paddle", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.Paddle }, kserveFramework{"paddle", ""}},
}

// kserveV2Runtimes are the out-of-box KServe runtimes whose defaults set
// protocol v2 when they are named (KServe SetRuntimeDefaults).
var kserveV2Runtimes = map[string]bool{"kserve-mlserver": true, "kserve-tritonserver": true}

// kserveProtocol is the protocol KServe serves a migrated predictor with
// when none is set: v2 for the triton format and the runtimes above, v1
// otherwise (KServe's ModelSpec.GetProtocol). The framework keys that
// default to v2 have set it on predictor.model already.
func kserveProtocol(isvc *v1beta1.InferenceService) v1beta1.ProtocolVersion {
	m := isvc.Spec.Predictor.Model
	if m != nil && m.ModelFormat.Name == "triton" {
		return v1beta1.ProtocolKServeV2
	}
	if r := isvc.Spec.Runtime; r != nil && kserveV2Runtimes[r.Name] {
		return v1beta1.ProtocolKServeV2
	}
	return v1beta1.ProtocolKServeV1
}

// userProtocol reports whether the request names a protocol anywhere:
// spec.protocolVersion, predictor.model or a framework key.
func userProtocol(isvc *v1beta1.InferenceService) bool {
	if isvc.Spec.ProtocolVersion != nil {
		return true
	}
	p := isvc.Spec.Predictor
	if p == nil {
		return false
	}
	if p.Model != nil && p.Model.ProtocolVersion != nil {
		return true
	}
	for _, f := range kserveFrameworks {
		if ext := *f.get(p); ext != nil && ext.ProtocolVersion != nil {
			return true
		}
	}
	return false
}

// MigratePredictor rewrites the deprecated KServe predictor in place:
//
//  1. the previous schema (predictor.sklearn, ...) becomes predictor.model with
//     the format named, as KServe's defaulter does: no runtime is named, so
//     selection chooses among the runtimes that serve the format, by
//     priority (KServe's sklearn with protocol v2 goes to mlserver);
//
//  2. predictor.model becomes berth's shape: spec.runtime, spec.protocolVersion
//     and spec.engine (replicas, pod settings, and the container as the
//     engine runner), with the storage URI as the runner's STORAGE_URI env.
//     A predictor that names no protocol gets KServe's default
//     (kserveProtocol), not berth's openAI: KServe runtimes list v1 and v2.
//
//  3. OME's deprecated predictor.model.baseModel and fineTunedWeights become
//     spec.model (migrateBaseModel), predictor.workerSpec becomes
//     spec.engine.worker, and a predictor left empty is removed. A
//     baseModel predictor that names no protocol gets berth's (openAI),
//     not KServe's: OME's runtimes list openAI.
//
// predictor.model.modelFormat stays, as the model description of services
// that reference no BaseModel. It returns what it did, for warnings, and an
// error when the predictor is ambiguous.
func MigratePredictor(isvc *v1beta1.InferenceService) (notes []string, err error) {
	p := isvc.Spec.Predictor
	if p == nil {
		return nil, nil
	}
	if reflect.DeepEqual(*p, v1beta1.PredictorSpec{}) {
		isvc.Spec.Predictor = nil // OME's predictor is not a pointer: exports carry "predictor: {}"
		return nil, nil
	}
	notes, err = migrateFrameworkKey(p)
	if err != nil {
		return nil, err
	}
	m := p.Model
	if m == nil {
		return notes, nil
	}
	omeForm := m.BaseModel != nil && *m.BaseModel != ""
	note, err := migrateBaseModel(isvc, m)
	if err != nil {
		return nil, err
	}
	notes = append(notes, note...)
	migrateRuntimeAndProtocol(isvc, m, omeForm)
	note, err = migratePredictorPod(isvc, p)
	if err != nil {
		return nil, err
	}
	notes = append(notes, note...)
	migrateStorageURI(isvc, m)
	// The runtime, protocol, container and pod settings now live in berth's
	// fields; the predictor keeps only the model description (format, storage).
	p.PodSpec = v1beta1.PodSpec{}
	p.ComponentExtensionSpec = v1beta1.ComponentExtensionSpec{}
	p.WorkerSpec = nil
	m.RunnerSpec = v1beta1.RunnerSpec{}
	m.Runtime = nil
	m.ProtocolVersion = nil
	if reflect.DeepEqual(*p, v1beta1.PredictorSpec{Model: &v1beta1.PredictorModelSpec{}}) {
		isvc.Spec.Predictor = nil // OME's form: everything moved
	}
	return notes, nil
}

// migrateFrameworkKey is step 1: KServe's previous schema
// (predictor.sklearn, ...) becomes predictor.model with the format named.
// At most one of predictor.model and the framework keys may be set.
func migrateFrameworkKey(p *v1beta1.PredictorSpec) (notes []string, err error) {
	var set []string
	for _, f := range kserveFrameworks {
		if *f.get(p) != nil {
			set = append(set, "spec.predictor."+f.key)
		}
	}
	if len(set) > 1 || (len(set) == 1 && p.Model != nil) {
		if p.Model != nil {
			set = append(set, "spec.predictor.model")
		}
		return nil, fmt.Errorf("exactly one of spec.predictor.model or a framework key may be set, found %v; keep one", set)
	}
	for _, f := range kserveFrameworks {
		field := f.get(p)
		if *field == nil {
			continue
		}
		ext := **field
		*field = nil
		p.Model = &v1beta1.PredictorModelSpec{ModelFormat: v1beta1.ModelFormat{Name: f.format}, PredictorExtensionSpec: ext}
		if p.Model.ProtocolVersion == nil && f.protocol != "" {
			proto := f.protocol
			p.Model.ProtocolVersion = &proto
		}
		notes = append(notes, fmt.Sprintf("spec.predictor.%s is deprecated: migrated to spec.predictor.model with format %s; berth selects the runtime", f.key, f.format))
	}
	return notes, nil
}

// migrateRuntimeAndProtocol moves predictor.model.runtime to spec.runtime
// and sets spec.protocolVersion: the predictor's, else KServe's default
// (kserveProtocol). OME's baseModel form names no protocol and keeps
// berth's default.
func migrateRuntimeAndProtocol(isvc *v1beta1.InferenceService, m *v1beta1.PredictorModelSpec, omeForm bool) {
	if isvc.Spec.Runtime == nil && m.Runtime != nil && *m.Runtime != "" {
		isvc.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: *m.Runtime}
	}
	if isvc.Spec.ProtocolVersion == nil && (m.ProtocolVersion != nil || !omeForm) {
		proto := kserveProtocol(isvc)
		if m.ProtocolVersion != nil {
			proto = *m.ProtocolVersion
		}
		isvc.Spec.ProtocolVersion = &proto
	}
}

// migratePredictorPod moves the predictor's container, pod, replica and
// worker settings to spec.engine; both set is an error.
func migratePredictorPod(isvc *v1beta1.InferenceService, p *v1beta1.PredictorSpec) ([]string, error) {
	m := p.Model
	workers := p.WorkerSpec != nil && !reflect.DeepEqual(*p.WorkerSpec, v1beta1.WorkerSpec{})
	predictorPod := !isZeroRunner(&m.RunnerSpec) || !reflect.DeepEqual(p.PodSpec, v1beta1.PodSpec{}) ||
		!reflect.DeepEqual(p.ComponentExtensionSpec, v1beta1.ComponentExtensionSpec{}) || workers
	if !predictorPod {
		return nil, nil
	}
	if isvc.Spec.Engine != nil {
		return nil, fmt.Errorf("spec.engine and the deprecated spec.predictor both set container or replica settings; move the predictor's into spec.engine")
	}
	isvc.Spec.Engine = &v1beta1.EngineSpec{
		PodSpec:                *p.PodSpec.DeepCopy(),
		ComponentExtensionSpec: *p.ComponentExtensionSpec.DeepCopy(),
	}
	if !isZeroRunner(&m.RunnerSpec) {
		runner := *m.RunnerSpec.DeepCopy()
		isvc.Spec.Engine.Runner = &runner
	}
	if workers {
		isvc.Spec.Engine.Worker = p.WorkerSpec.DeepCopy()
	}
	return []string{"spec.predictor is deprecated: its container and replica settings were moved to spec.engine"}, nil
}

// migrateStorageURI gives the engine runner the predictor's storage URI as
// STORAGE_URI, unless it sets one.
func migrateStorageURI(isvc *v1beta1.InferenceService, m *v1beta1.PredictorModelSpec) {
	if m.StorageURI == nil || *m.StorageURI == "" {
		return
	}
	if isvc.Spec.Engine == nil {
		isvc.Spec.Engine = &v1beta1.EngineSpec{}
	}
	if isvc.Spec.Engine.Runner == nil {
		isvc.Spec.Engine.Runner = &v1beta1.RunnerSpec{}
	}
	if !hasEnv(isvc.Spec.Engine.Runner.Env, "STORAGE_URI") {
		isvc.Spec.Engine.Runner.Env = append(isvc.Spec.Engine.Runner.Env, envVar("STORAGE_URI", *m.StorageURI))
	}
}

// migrateBaseModel moves OME's deprecated predictor.model.baseModel and
// fineTunedWeights into spec.model. The model is looked up as spec.model
// without a kind is: a BaseModel of the namespace, then a ClusterBaseModel
// (OME's order too). Naming another model, or other weights, in spec.model
// is an error.
func migrateBaseModel(isvc *v1beta1.InferenceService, m *v1beta1.PredictorModelSpec) ([]string, error) {
	if m.BaseModel == nil || *m.BaseModel == "" {
		m.BaseModel = nil
		return nil, nil
	}
	name := *m.BaseModel
	ref := isvc.Spec.Model
	switch {
	case ref == nil:
		isvc.Spec.Model = &v1beta1.ModelRef{Name: name, FineTunedWeights: slices.Clone(m.FineTunedWeights)}
	case ref.Name != name:
		return nil, fmt.Errorf("spec.predictor.model.baseModel %q and spec.model.name %q name different models; keep spec.model", name, ref.Name)
	case len(m.FineTunedWeights) == 0:
	case len(ref.FineTunedWeights) == 0:
		ref.FineTunedWeights = slices.Clone(m.FineTunedWeights)
	case !slices.Equal(ref.FineTunedWeights, m.FineTunedWeights):
		return nil, fmt.Errorf("spec.predictor.model.fineTunedWeights %v and spec.model.fineTunedWeights %v differ; keep spec.model", m.FineTunedWeights, ref.FineTunedWeights)
	}
	m.BaseModel, m.FineTunedWeights = nil, nil
	return []string{"spec.predictor.model.baseModel is deprecated: migrated to spec.model.name " + name}, nil
}
