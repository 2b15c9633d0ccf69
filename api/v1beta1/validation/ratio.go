package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/api/v1beta1"
)

// ValidateRatio checks spec.prefillDecodeRatio (package doc, "InferenceService
// prefill/decode ratio"). hasDecoder says whether the service runs a
// decoder under its resolved runtime (a runtime's decoderConfig counts).
func ValidateRatio(spec *v1beta1.InferenceServiceSpec, hasDecoder bool) field.ErrorList {
	r := spec.PrefillDecodeRatio
	if r == nil {
		return nil
	}
	p := field.NewPath("spec", "prefillDecodeRatio")
	var errs field.ErrorList
	if !hasDecoder {
		errs = append(errs, field.Forbidden(p, "a prefill/decode ratio needs a decoder: set spec.decoder (or use a runtime with a decoderConfig), or remove spec.prefillDecodeRatio"))
	}
	for _, side := range []struct {
		name string
		v    int32
	}{{"prefill", r.Prefill}, {"decode", r.Decode}} {
		if side.v < 1 || side.v > 64 {
			errs = append(errs, field.Invalid(p.Child(side.name), side.v, "must be between 1 and 64"))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, validateMaxSkew(p.Child("maxSkew"), *r)...)
	}
	if d := spec.Decoder; d != nil && d.Replicas != nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "decoder", "replicas"),
			"with spec.prefillDecodeRatio the decoder's replicas follow the engine's (scale spec.engine.replicas, or the service's scale subresource); remove spec.decoder.replicas"))
	}
	return errs
}

// validateMaxSkew: at least 1 and at least MinMaxSkew of the ratio.
func validateMaxSkew(p *field.Path, r v1beta1.PrefillDecodeRatio) field.ErrorList {
	least := v1beta1.MinMaxSkew(r.Prefill, r.Decode)
	skew := int32(1)
	if r.MaxSkew != nil {
		skew = *r.MaxSkew
	}
	if skew >= least && skew >= 1 {
		return nil
	}
	return field.ErrorList{field.Invalid(p, skew, fmt.Sprintf(
		"a ratio of %d:%d needs maxSkew of at least %d: with less, groups cannot roll or scale one at a time within bounds, or some engine count's decoder count (rounded up) is outside them",
		r.Prefill, r.Decode, least))}
}
