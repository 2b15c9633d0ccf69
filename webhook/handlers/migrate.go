package handlers

import (
	"fmt"
	"reflect"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// kserveFramework maps a KServe "previous schema" predictor key to the model
// format it serves. KServe's defaulter gives Triton, ONNX and Hugging Face
// protocol v2 (seed 001; kserve pkg/apis/serving/v1beta1
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
//     priority (seed 001's sklearn with protocol v2 goes to mlserver);
//  2. predictor.model becomes berth's shape: spec.runtime, spec.protocolVersion
//     and spec.engine (replicas, pod settings, and the container as the
//     engine runner), with the storage URI as the runner's STORAGE_URI env.
//     A predictor that names no protocol gets KServe's default
//     (kserveProtocol), not berth's openAI: KServe runtimes list v1 and v2.
//
// predictor.model.modelFormat stays, as the model description of services
// that reference no BaseModel. It returns what it did, for warnings, and an
// error when the predictor is ambiguous.
func MigratePredictor(isvc *v1beta1.InferenceService) (notes []string, err error) {
	p := isvc.Spec.Predictor
	if p == nil {
		return nil, nil
	}
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
	m := p.Model
	if m == nil {
		return notes, nil
	}
	if isvc.Spec.Runtime == nil && m.Runtime != nil && *m.Runtime != "" {
		isvc.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: *m.Runtime}
	}
	if isvc.Spec.ProtocolVersion == nil {
		proto := kserveProtocol(isvc)
		if m.ProtocolVersion != nil {
			proto = *m.ProtocolVersion
		}
		isvc.Spec.ProtocolVersion = &proto
	}
	predictorPod := !isZeroRunner(&m.RunnerSpec) || !reflect.DeepEqual(p.PodSpec, v1beta1.PodSpec{}) ||
		!reflect.DeepEqual(p.ComponentExtensionSpec, v1beta1.ComponentExtensionSpec{})
	if predictorPod {
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
		notes = append(notes, "spec.predictor is deprecated: its container and replica settings were moved to spec.engine")
	}
	if m.StorageURI != nil && *m.StorageURI != "" {
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
	// The runtime, protocol, container and pod settings now live in berth's
	// fields; the predictor keeps only the model description (format, storage).
	p.PodSpec = v1beta1.PodSpec{}
	p.ComponentExtensionSpec = v1beta1.ComponentExtensionSpec{}
	m.RunnerSpec = v1beta1.RunnerSpec{}
	m.Runtime = nil
	m.ProtocolVersion = nil
	return notes, nil
}
