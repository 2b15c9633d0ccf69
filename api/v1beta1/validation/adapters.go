package validation

import (
	"regexp"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/api/v1beta1"
)

// MaxAdapters is the most LoRA adapters one service declares.
const MaxAdapters = 64

// adapterName is the shape of an adapter's name: the model name requests
// use (letters, digits and . _ : / -, starting with a letter or digit).
var adapterName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)

// ValidateAdapters checks spec.adapters (package doc, "InferenceService
// LoRA adapters").
func ValidateAdapters(spec *v1beta1.InferenceServiceSpec) field.ErrorList {
	p := field.NewPath("spec", "adapters")
	var errs field.ErrorList
	if len(spec.Adapters) > MaxAdapters {
		errs = append(errs, field.TooMany(p, len(spec.Adapters), MaxAdapters))
	}
	seen := map[string]bool{}
	for i, a := range spec.Adapters {
		ip := p.Index(i)
		switch {
		case a.Name == "":
			errs = append(errs, field.Required(ip.Child("name"), "the adapter's name, which requests use as the model"))
		case !adapterName.MatchString(a.Name):
			errs = append(errs, field.Invalid(ip.Child("name"), a.Name,
				"must be 1-128 letters, digits or . _ : / -, starting with a letter or digit"))
		case seen[a.Name]:
			errs = append(errs, field.Duplicate(ip.Child("name"), a.Name))
		}
		seen[a.Name] = true
		switch {
		case a.Source == "":
			errs = append(errs, field.Required(ip.Child("source"), "where the engine loads the adapter from (its lora_path)"))
		case len(a.Source) > 1024:
			errs = append(errs, field.TooLong(ip.Child("source"), "", 1024))
		case strings.IndexFunc(a.Source, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
			errs = append(errs, field.Invalid(ip.Child("source"), a.Source, "must not contain spaces or control characters"))
		}
	}
	return errs
}
