package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/admission"
)

// fieldError is an error whose detail already says what is wrong with the
// field's value: the denial prints it as "<field>: <detail>" (causeLine).
func fieldError(p *field.Path, detail string) *field.Error {
	return field.Invalid(p, field.OmitValueType{}, detail)
}

// causeLine prints an error as the denial message lists it: "<field>:
// <detail>" for an Invalid error without a value (the detail quotes what
// it needs: selection's, merge's template and fieldError's errors), the
// field package's text otherwise.
func causeLine(e *field.Error) string {
	if _, omit := e.BadValue.(field.OmitValueType); omit && e.Type == field.ErrorTypeInvalid {
		if e.Field == "" {
			return e.Detail
		}
		return e.Field + ": " + e.Detail
	}
	return e.Error()
}

// invalid denies with one cause per error and a message listing them, one
// per line, sorted and deduplicated: "<Kind> <display> is invalid:\n- ...".
func invalid(kind, name, display string, errs field.ErrorList, warnings []string) *admissionv1.AdmissionResponse {
	return invalidIn("ome.io", kind, name, display, errs, warnings)
}

// invalidIn is invalid for a kind of another API group (policy.berth.dev).
func invalidIn(group, kind, name, display string, errs field.ErrorList, warnings []string) *admissionv1.AdmissionResponse {
	return invalidWithHead(group, kind, name, fmt.Sprintf("%s %s is invalid:", kind, display), errs, warnings)
}

// invalidWithHead is invalidIn whose message starts with head instead of
// "<Kind> <display> is invalid:" (a service whose pods cannot be composed
// says so).
func invalidWithHead(group, kind, name, head string, errs field.ErrorList, warnings []string) *admissionv1.AdmissionResponse {
	sort.SliceStable(errs, func(i, j int) bool { return causeLine(errs[i]) < causeLine(errs[j]) })
	var uniq field.ErrorList
	lines := make([]string, 0, len(errs))
	for _, e := range errs {
		l := causeLine(e)
		if len(lines) > 0 && lines[len(lines)-1] == l {
			continue
		}
		uniq = append(uniq, e)
		lines = append(lines, l)
	}
	resp := admission.InvalidIn(group, kind, name, uniq)
	resp.Result.Message = head + "\n- " + strings.Join(lines, "\n- ")
	resp.Warnings = warnings
	return resp
}

// unresolved denies a service whose decision cannot be resolved. A
// selection error's message is its text, which names the service, what
// was asked and every candidate with why it lost; its causes are
// selection.Error.Errors: the reason at the service's field it is about,
// then each candidate, its line whole, at the field that made it lose.
// A pinDenial (a pin that contradicts the spec) has its one cause; any
// other error is its text alone.
func unresolved(name string, err error) *admissionv1.AdmissionResponse {
	var pd *pinDenial
	if errors.As(err, &pd) {
		resp := admission.Invalid("InferenceService", name, field.ErrorList{pd.cause})
		resp.Result.Message = err.Error()
		return resp
	}
	var se *selection.Error
	if !errors.As(err, &se) {
		return admission.Denied(http.StatusUnprocessableEntity, err.Error())
	}
	resp := admission.Invalid("InferenceService", name, se.Errors())
	resp.Result.Message = err.Error()
	return resp
}

// pinDenial is a pin (or a class annotation beside it) the webhook
// refuses for a reason of its own, not selection's: the message is the
// service's name and the detail, the one cause the annotation or field at
// fault (unresolved).
type pinDenial struct {
	service string
	cause   *field.Error
}

func (e *pinDenial) Error() string { return e.service + ": " + e.cause.Detail }

// denyPin is a pinDenial of the service at path.
func denyPin(isvc *v1beta1.InferenceService, path *field.Path, format string, args ...any) error {
	return &pinDenial{service: "InferenceService " + isvc.Namespace + "/" + isvc.Name, cause: fieldError(path, fmt.Sprintf(format, args...))}
}

// annotationPath is the field path of an annotation.
func annotationPath(key string) *field.Path { return field.NewPath("metadata", "annotations").Key(key) }

// lines prints errs one causeLine each, in order.
func lines(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = causeLine(e)
	}
	return out
}
