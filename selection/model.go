package selection

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Model is the resolved BaseModel or ClusterBaseModel.
type Model struct {
	Kind      string // "BaseModel" or "ClusterBaseModel"
	Name      string
	Namespace string // empty for ClusterBaseModel
	// Spec is the merged view (v1beta1.EffectiveModelSpec): what the admin
	// wrote, with every field left unset filled from status.discovered.
	Spec v1beta1.BaseModelSpec
	Size int64 // parameters; 0 if unknown
	// Pending says what the model still lacks while it awaits metadata
	// (v1beta1.ModelAwaitsMetadata), "" when its metadata is known. A
	// Decision's model is never pending; Index.Model reports it.
	Pending string
	// ResourceVersion of the model object, "" for inline models; it
	// identifies the version (discovery writes status) for caches keyed
	// by the decision's inputs.
	ResourceVersion string
	// Discovered is the model's status.discovered (shared, read-only): with
	// Spec it is what merge.NewModelMount needs to mount the model.
	Discovered *v1beta1.ModelMetadata
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
	// fwDiscovered: fwVersion came from status.discovered (the admin wrote
	// none), so runtimes compare it as a floor (versionRule.matchesFloor).
	fwDiscovered bool
	quant        string // spec.quantization, "" when none
	// err is the first field that could not be parsed; a decision for this
	// model reports it instead of silently mismatching.
	err string
}

// compileObject compiles a model object from its merged view and says
// whether it awaits metadata.
func compileObject(kind string, meta *metav1.ObjectMeta, spec v1beta1.BaseModelSpec, st v1beta1.ModelStatus) *modelEntry {
	e := compileModel(kind, meta.Namespace, meta.Name, v1beta1.EffectiveModelSpec(spec, st))
	e.model.ResourceVersion = meta.ResourceVersion
	e.model.Discovered = st.Discovered
	e.fwDiscovered = e.fwVersion != nil && (spec.ModelFramework == nil || spec.ModelFramework.Version == nil)
	if waiting, what := v1beta1.ModelAwaitsMetadata(spec, st, meta.Generation); waiting {
		e.model.Pending = what
		if e.model.Pending == "" {
			e.model.Pending = "its metadata has not been discovered yet"
		}
	}
	return e
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
		e.err = ref + ": " + noFormat(spec.Storage)
	}
	return e
}

// noFormat explains a model without a format. A model berth reads no
// metadata from (StorageLocation.Discoverable is false: a node-local path,
// gs://, oci://) never waits for discovery, so the admin must declare
// what discovery would have read.
func noFormat(st *v1beta1.StorageSpec) string {
	if st != nil && st.StorageURI != nil {
		if loc, err := v1beta1.ParseStorageURI(*st.StorageURI); err == nil && !loc.Discoverable() {
			where := string(loc.Scheme) + "://"
			if loc.Scheme == v1beta1.SchemeLocal {
				where = "a node-local path"
			}
			return "spec.modelFormat.name is empty, and berth cannot read it from the model's files: storage.storageUri " + quote(*st.StorageURI) +
				" is " + where + ", and berth reads model metadata only from hf://, s3:// and pvc:// models; declare modelFormat (e.g. safetensors), modelArchitecture and modelParameterSize in the model's spec"
		}
	}
	return "spec.modelFormat.name is empty; set the format (e.g. safetensors) so a runtime can be matched"
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

// CodeModelMetadataPending: the model names no format, architecture or
// size, and berth has not read them from its files yet (or failed to). The
// webhook admits such a service unpinned and decides once the metadata is
// known; it is never a denial.
const CodeModelMetadataPending = "ModelMetadataPending"

// Model finds the model a service names as Select does and returns its
// merged view, with Pending set when it awaits metadata (Select fails with
// CodeModelMetadataPending then). A model that is not found, disabled or
// unparseable is an *Error, as in Select.
func (x *Index) Model(isvc *v1beta1.InferenceService) (Model, error) {
	if isvc == nil {
		return Model{}, &Error{Code: CodeInvalidInput, Reason: "no InferenceService given"}
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, err := x.findModelLocked(isvc, true)
	if err != nil {
		return Model{}, err
	}
	return e.model, nil
}

// selectModelLocked is the model a decision is made for: found, and with
// its metadata known.
func (x *Index) selectModelLocked(isvc *v1beta1.InferenceService) (*modelEntry, *Error) {
	return x.findModelLocked(isvc, false)
}

// pendingReason names the service, the model, what it lacks (with the
// discovery failure, if any) and what happens next.
func pendingReason(isvc *v1beta1.InferenceService, m Model) string {
	return serviceRef(isvc) + ": spec.model.name: " + m.Ref() + ": " + m.Pending +
		"; a runtime is chosen once " + m.Ref() + "'s metadata is known"
}

// resolveModelLocked finds the model of a pinned decision (Resolve). A
// model that awaits metadata again (its spec changed and discovery runs
// anew) still resolves, with the merged view it has: a pin never breaks
// while metadata is re-read.
func (x *Index) resolveModelLocked(isvc *v1beta1.InferenceService) (*modelEntry, *Error) {
	return x.findModelLocked(isvc, true)
}

// findModelLocked finds the model an InferenceService names:
// spec.model.kind if set, else a BaseModel in the namespace, else a
// ClusterBaseModel. A service migrated from the KServe predictor shape,
// with no spec.model, is served by the format its predictor describes.
// A model awaiting metadata is returned as it is (Pending set) and is not
// checked for a missing format: what it lacks is being discovered.
func (x *Index) findModelLocked(isvc *v1beta1.InferenceService, pendingOK bool) (*modelEntry, *Error) {
	svc := serviceRef(isvc)
	ref := isvc.Spec.Model
	if (ref == nil || ref.Name == "") && isvc.Spec.Predictor != nil && isvc.Spec.Predictor.Model != nil {
		e := compileModel(KindPredictorModel, isvc.Namespace, isvc.Name, v1beta1.BaseModelSpec{ModelFormat: isvc.Spec.Predictor.Model.ModelFormat})
		if e.err != "" {
			return nil, &Error{Code: CodeModelInvalid, Service: serviceRef(isvc), Field: fieldPredictor, Reason: svc + ": spec.predictor.model: " + e.err}
		}
		return e, nil
	}
	if ref == nil || ref.Name == "" {
		return nil, &Error{Code: CodeModelNotFound, Service: serviceRef(isvc), Field: fieldModel, Reason: svc + ": spec.model is required: set spec.model.name to a BaseModel in namespace " + quoteNS(isvc.Namespace) + " or a ClusterBaseModel"}
	}
	kind := ""
	if ref.Kind != nil {
		kind = *ref.Kind
	}
	e, where, ok := x.lookupModelLocked(isvc.Namespace, ref.Name, kind)
	if !ok {
		return nil, &Error{Code: CodeInvalidInput, Service: serviceRef(isvc), Field: fieldModelKind, Reason: svc + ": spec.model.kind " + quote(kind) + " is not BaseModel or ClusterBaseModel"}
	}
	if e == nil {
		return nil, &Error{Code: CodeModelNotFound, Service: serviceRef(isvc), Field: fieldModelName, Reason: svc + ": spec.model.name: " + where + "; create the model or fix the name"}
	}
	if d := e.model.Spec.Disabled; d != nil && *d {
		return nil, &Error{Code: CodeModelInvalid, Service: serviceRef(isvc), Field: fieldModelName, Reason: svc + ": spec.model.name: " + e.model.Ref() + " is disabled; enable it or choose another model"}
	}
	if e.model.Pending != "" {
		if pendingOK {
			return e, nil
		}
		return nil, &Error{Code: CodeModelMetadataPending, Service: serviceRef(isvc), Field: fieldModelName, Reason: pendingReason(isvc, e.model)}
	}
	if e.err != "" {
		return nil, &Error{Code: CodeModelInvalid, Service: serviceRef(isvc), Field: fieldModelName, Reason: svc + ": model " + e.err}
	}
	return e, nil
}

// lookupModelLocked finds a model by name as spec.model names it: kind
// BaseModel (in namespace), ClusterBaseModel, or "" (the BaseModel, else
// the ClusterBaseModel). where says what does not exist when e is nil; ok
// is false for an unknown kind.
func (x *Index) lookupModelLocked(namespace, name, kind string) (e *modelEntry, where string, ok bool) {
	switch kind {
	case KindBaseModel:
		return x.models[objKey(namespace, name)], "no BaseModel " + quote(name) + " in namespace " + quoteNS(namespace), true
	case KindClusterBaseModel:
		return x.models[objKey("", name)], "no ClusterBaseModel " + quote(name), true
	case "":
		if e = x.models[objKey(namespace, name)]; e == nil {
			e = x.models[objKey("", name)]
		}
		return e, "no BaseModel " + quote(name) + " in namespace " + quoteNS(namespace) + " and no ClusterBaseModel " + quote(name), true
	}
	return nil, "", false
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
