package handlers

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errorKey is what makes two errors the same finding: type, field,
// detail and the bad value. As Kubernetes' own ratcheting, only what did
// not change is let through: a field changed from one wrong value to
// another wrong value is validated anew.
type errorKey struct {
	typ    field.ErrorType
	field  string
	detail string
	value  string
}

func keyOf(e *field.Error) errorKey {
	return errorKey{e.Type, e.Field, e.Detail, fmt.Sprintf("%#v", e.BadValue)}
}

// ratchet is the package's ratcheting (package doc): errs splits into
// those the stored object's errors (old) do not have, still denied, and
// those it has (errorKey), kept and only warned about (keptWarnings). An
// error that moved to another field, or changed its type, detail or
// value, is new.
func ratchet(errs, old field.ErrorList) (still, kept field.ErrorList) {
	had := make(map[errorKey]bool, len(old))
	for _, e := range old {
		had[keyOf(e)] = true
	}
	for _, e := range errs {
		if had[keyOf(e)] {
			kept = append(kept, e)
		} else {
			still = append(still, e)
		}
	}
	return still, kept
}

// keptWarnings prints the errors ratchet kept as warnings: the error's
// line, then "(not introduced by this update, so not denied; <consequence>)".
func keptWarnings(kept field.ErrorList, consequence string) []string {
	var out []string
	for _, e := range kept {
		out = append(out, causeLine(e)+" (not introduced by this update, so not denied; "+consequence+")")
	}
	return out
}
