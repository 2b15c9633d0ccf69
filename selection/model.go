package selection

import (
	"strings"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Model is the resolved BaseModel or ClusterBaseModel.
type Model struct {
	Kind      string // "BaseModel" or "ClusterBaseModel"
	Name      string
	Namespace string // empty for ClusterBaseModel
	Spec      v1beta1.BaseModelSpec
	Size      int64 // parameters; 0 if unknown
}

// Ref is "BaseModel/<name>" or "ClusterBaseModel/<name>".
func (m Model) Ref() string { return m.Kind + "/" + m.Name }

// modelEntry is a model with its strings parsed once, at upsert.
type modelEntry struct {
	model         Model
	formatName    string // lower case
	formatVersion *Version
	// texts computed once for explanations
	formatVersionText, fwVersionText, sizeText string
	fwName                                     string // lower case, "" when the model names no framework
	fwVersion                                  *Version
	quant                                      string // spec.quantization, "" when none
	// err is the first field that could not be parsed; a decision for this
	// model reports it instead of silently mismatching.
	err string
}

func compileModel(kind, namespace, name string, spec v1beta1.BaseModelSpec) *modelEntry {
	e := &modelEntry{model: Model{Kind: kind, Name: name, Namespace: namespace, Spec: spec}}
	e.formatName = strings.ToLower(strings.TrimSpace(spec.ModelFormat.Name))
	ref := kind + "/" + name
	if spec.ModelFormat.Version != nil {
		v, err := ParseVersion(*spec.ModelFormat.Version)
		if err != nil {
			e.err = ref + ": spec.modelFormat.version: " + err.Error()
		} else {
			e.formatVersion = &v
		}
	}
	if fw := spec.ModelFramework; fw != nil {
		e.fwName = strings.ToLower(strings.TrimSpace(fw.Name))
		if fw.Version != nil {
			v, err := ParseVersion(*fw.Version)
			if err != nil && e.err == "" {
				e.err = ref + ": spec.modelFramework.version: " + err.Error()
			} else if err == nil {
				e.fwVersion = &v
			}
		}
	}
	if spec.Quantization != nil {
		e.quant = string(*spec.Quantization)
	}
	if spec.ModelParameterSize != nil {
		n, err := ParseSize(*spec.ModelParameterSize)
		if err != nil && e.err == "" {
			e.err = ref + ": spec.modelParameterSize: " + err.Error()
		} else if err == nil {
			e.model.Size = n
		}
	}
	if e.formatVersion != nil {
		e.formatVersionText = e.formatVersion.String()
	}
	if e.fwVersion != nil {
		e.fwVersionText = e.fwVersion.String()
	}
	e.sizeText = FormatSize(e.model.Size)
	if e.formatName == "" && e.err == "" {
		e.err = ref + ": spec.modelFormat.name is empty; set the format (e.g. safetensors) so a runtime can be matched"
	}
	return e
}

// describe is what the model asks of a runtime, for error messages.
func (e *modelEntry) describe() string {
	s := e.model.Spec
	var b strings.Builder
	b.WriteString("format ")
	b.WriteString(s.ModelFormat.Name)
	if e.formatVersion != nil {
		b.WriteString(" " + e.formatVersion.String())
	}
	if s.ModelFramework != nil {
		b.WriteString(", framework " + s.ModelFramework.Name)
		if e.fwVersion != nil {
			b.WriteString(" " + e.fwVersion.String())
		}
	}
	if s.ModelArchitecture != nil {
		b.WriteString(", architecture " + *s.ModelArchitecture)
	}
	if s.Quantization != nil {
		b.WriteString(", quantization " + string(*s.Quantization))
	}
	if e.model.Size > 0 {
		b.WriteString(", size " + FormatSize(e.model.Size))
	}
	return b.String()
}

// KindPredictorModel names the model a KServe-shaped service describes
// inline (spec.predictor.model.modelFormat) instead of referencing a
// BaseModel; it has a format and no size.
const KindPredictorModel = "PredictorModel"

// resolveModelLocked finds the model an InferenceService names:
// spec.model.kind if set, else a BaseModel in the namespace, else a
// ClusterBaseModel. A service migrated from the KServe predictor shape,
// with no spec.model, is served by the format its predictor describes.
func (x *Index) resolveModelLocked(isvc *v1beta1.InferenceService) (*modelEntry, *Error) {
	svc := serviceRef(isvc)
	ref := isvc.Spec.Model
	if (ref == nil || ref.Name == "") && isvc.Spec.Predictor != nil && isvc.Spec.Predictor.Model != nil {
		e := compileModel(KindPredictorModel, isvc.Namespace, isvc.Name, v1beta1.BaseModelSpec{ModelFormat: isvc.Spec.Predictor.Model.ModelFormat})
		if e.err != "" {
			return nil, &Error{Code: CodeModelInvalid, Reason: svc + ": spec.predictor.model: " + e.err}
		}
		return e, nil
	}
	if ref == nil || ref.Name == "" {
		return nil, &Error{Code: CodeModelNotFound, Reason: svc + ": spec.model is required: set spec.model.name to a BaseModel in namespace " + quoteNS(isvc.Namespace) + " or a ClusterBaseModel"}
	}
	kind := ""
	if ref.Kind != nil {
		kind = *ref.Kind
	}
	var e *modelEntry
	switch kind {
	case KindBaseModel:
		e = x.models[objKey(isvc.Namespace, ref.Name)]
	case KindClusterBaseModel:
		e = x.models[objKey("", ref.Name)]
	case "":
		if e = x.models[objKey(isvc.Namespace, ref.Name)]; e == nil {
			e = x.models[objKey("", ref.Name)]
		}
	default:
		return nil, &Error{Code: CodeInvalidInput, Reason: svc + ": spec.model.kind " + quote(kind) + " is not BaseModel or ClusterBaseModel"}
	}
	if e == nil {
		where := "no BaseModel " + quote(ref.Name) + " in namespace " + quoteNS(isvc.Namespace) + " and no ClusterBaseModel " + quote(ref.Name)
		switch kind {
		case KindBaseModel:
			where = "no BaseModel " + quote(ref.Name) + " in namespace " + quoteNS(isvc.Namespace)
		case KindClusterBaseModel:
			where = "no ClusterBaseModel " + quote(ref.Name)
		}
		return nil, &Error{Code: CodeModelNotFound, Reason: svc + ": spec.model.name: " + where + "; create the model or fix the name"}
	}
	if e.err != "" {
		return nil, &Error{Code: CodeModelInvalid, Reason: svc + ": model " + e.err}
	}
	if d := e.model.Spec.Disabled; d != nil && *d {
		return nil, &Error{Code: CodeModelInvalid, Reason: svc + ": spec.model.name: " + e.model.Ref() + " is disabled; enable it or choose another model"}
	}
	return e, nil
}

func serviceRef(isvc *v1beta1.InferenceService) string {
	return "InferenceService " + isvc.Namespace + "/" + isvc.Name
}

func quote(s string) string { return `"` + s + `"` }

func quoteNS(ns string) string {
	if ns == "" {
		return `""`
	}
	return ns
}
