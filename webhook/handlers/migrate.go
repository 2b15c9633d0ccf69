package handlers

import (
	"fmt"
	"reflect"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// kserveFramework maps a KServe "previous schema" predictor key to the model
// format it serves and the out-of-box runtime KServe mapped it to (seed 001,
// "Previous schema"). Triton, ONNX and HuggingFace speak v2 by default.
type kserveFramework struct {
	format, runtime string
	protocol        v1beta1.ProtocolVersion
}

var kserveFrameworks = []struct {
	key string
	get func(*v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec
	kserveFramework
}{
	{"sklearn", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.SKLearn }, kserveFramework{"sklearn", "kserve-sklearnserver", ""}},
	{"xgboost", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.XGBoost }, kserveFramework{"xgboost", "kserve-xgbserver", ""}},
	{"tensorflow", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.Tensorflow }, kserveFramework{"tensorflow", "kserve-tensorflow-serving", ""}},
	{"pytorch", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.PyTorch }, kserveFramework{"pytorch", "kserve-torchserve", ""}},
	{"triton", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.Triton }, kserveFramework{"triton", "kserve-tritonserver", v1beta1.ProtocolKServeV2}},
	{"onnx", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.ONNX }, kserveFramework{"onnx", "kserve-tritonserver", v1beta1.ProtocolKServeV2}},
	{"huggingface", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.HuggingFace }, kserveFramework{"huggingface", "kserve-huggingfaceserver", v1beta1.ProtocolKServeV2}},
	{"pmml", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.PMML }, kserveFramework{"pmml", "kserve-pmmlserver", ""}},
	{"lightgbm", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.LightGBM }, kserveFramework{"lightgbm", "kserve-lgbserver", ""}},
	{"paddle", func(p *v1beta1.PredictorSpec) **v1beta1.PredictorExtensionSpec { return &p.Paddle }, kserveFramework{"paddle", "kserve-paddleserver", ""}},
}

// MigratePredictor rewrites the deprecated KServe predictor in place:
//
//  1. the previous schema (predictor.sklearn, ...) becomes predictor.model with
//     the format named and the out-of-box runtime pinned, as KServe did;
//  2. predictor.model becomes berth's shape: spec.runtime, spec.protocolVersion
//     and spec.engine (replicas, pod settings, and the container as the
//     engine runner), with the storage URI as the runner's STORAGE_URI env.
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
		runtime := f.runtime
		p.Model = &v1beta1.PredictorModelSpec{ModelFormat: v1beta1.ModelFormat{Name: f.format}, Runtime: &runtime, PredictorExtensionSpec: ext}
		if p.Model.ProtocolVersion == nil && f.protocol != "" {
			proto := f.protocol
			p.Model.ProtocolVersion = &proto
		}
		notes = append(notes, fmt.Sprintf("spec.predictor.%s is deprecated: migrated to spec.predictor.model with format %s and runtime %s", f.key, f.format, f.runtime))
	}
	m := p.Model
	if m == nil {
		return notes, nil
	}
	if isvc.Spec.Runtime == nil && m.Runtime != nil && *m.Runtime != "" {
		isvc.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: *m.Runtime}
	}
	if isvc.Spec.ProtocolVersion == nil && m.ProtocolVersion != nil {
		proto := *m.ProtocolVersion
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
