package handlers

import (
	"fmt"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/webhook/admission"
)

// fromLine turns a "<field path>: <message>" line of the checks that still
// return strings (selection, merge) into a field error, so every denial
// carries Status.Details.Causes. A line that does not start with a path
// keeps no field.
func fromLine(line string) *field.Error {
	path, msg, ok := strings.Cut(line, ": ")
	if !ok || path == "" || strings.ContainsAny(path, " ,") {
		path, msg = "", line
	}
	return &field.Error{Type: field.ErrorTypeInvalid, Field: path, BadValue: field.OmitValueType{}, Detail: msg}
}

// causeLine prints an error as the denial message lists it: "<field>:
// <message>" for lines without a value (as they were written), the field
// package's text otherwise.
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
	resp.Result.Message = fmt.Sprintf("%s %s is invalid:\n- %s", kind, display, strings.Join(lines, "\n- "))
	resp.Warnings = warnings
	return resp
}

// lines prints errs one causeLine each, in order.
func lines(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = causeLine(e)
	}
	return out
}
