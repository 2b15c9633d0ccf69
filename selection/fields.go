package selection

import (
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// The InferenceService's fields an Error is about (Error.Field,
// Error.CandidateFields); the package doc says which failure is where.
const (
	fieldModel       = "spec.model"
	fieldModelName   = "spec.model.name"
	fieldModelKind   = "spec.model.kind"
	fieldPredictor   = "spec.predictor.model"
	fieldRuntimeName = "spec.runtime.name"
	fieldRuntimeKind = "spec.runtime.kind"
	fieldProtocol    = "spec.protocolVersion"
	fieldSelector    = "spec.acceleratorSelector"
	fieldStrategy    = "spec.acceleratorSelector.strategy"
	fieldPreferred   = "spec.acceleratorSelector.preferredClasses"
)

var (
	fieldClassAnnotation    = annotationField(v1beta1.AnnotationAcceleratorClass)
	fieldStrategyAnnotation = annotationField(v1beta1.AnnotationSelectionStrategy)
	fieldPinnedRuntime      = v1beta1.FieldResolvedRuntime
	fieldPinnedClass        = v1beta1.FieldResolvedAcceleratorClass
)

func annotationField(key string) string {
	return field.NewPath("metadata", "annotations").Key(key).String()
}

// preferredField is spec.acceleratorSelector.preferredClasses[i].
func preferredField(i int) string { return fieldPreferred + "[" + strconv.Itoa(i) + "]" }

// modelField is the field that names the service's model: spec.model.name,
// or spec.predictor.model for a KServe-shaped service without spec.model.
func modelField(isvc *v1beta1.InferenceService) string {
	if ref := isvc.Spec.Model; (ref == nil || ref.Name == "") && isvc.Spec.Predictor != nil && isvc.Spec.Predictor.Model != nil {
		return fieldPredictor
	}
	return fieldModelName
}

// lossOn says which of the service's fields made a runtime lose: the
// model it names (what the runtime does not serve), its protocol, or the
// runtime choice itself (the runtime is disabled, invalid, not
// auto-selectable, forbidden or outranked: name another in spec.runtime).
type lossOn uint8

const (
	lossOnRuntime lossOn = iota
	lossOnModel
	lossOnProtocol
)

// path is the field l stands for, for the service's model field.
func (l lossOn) path(model string) string {
	switch l {
	case lossOnModel:
		return model
	case lossOnProtocol:
		return fieldProtocol
	}
	return fieldRuntimeName
}

// lossLine is a candidate's line and the service's field that made it lose.
type lossLine struct{ line, field string }

// sortLosses sorts ls by line, drops repeated lines, and splits them into
// Error.Candidates and Error.CandidateFields.
func sortLosses(ls []lossLine) (lines, fields []string) {
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].line < ls[j].line })
	for i, l := range ls {
		if i > 0 && l.line == ls[i-1].line {
			continue
		}
		lines, fields = append(lines, l.line), append(fields, l.field)
	}
	return lines, fields
}

// classLossField is the service's field behind the first reason a class
// does not qualify (appendWhyNot's order): the accelerator selector for a
// policy or an unmet requirement or constraint, the runtime choice for a
// vendor the runtime has no configuration for, the model for a group that
// does not hold it.
func classLossField(cr *classRequest, ce *classEval) string {
	switch {
	case ce.policy != "":
		return fieldSelector
	case ce.foreign:
		return fieldRuntimeName
	case ce.unmet != "":
		return fieldSelector
	case ce.noFit:
		return modelField(cr.isvc)
	}
	return fieldSelector
}
