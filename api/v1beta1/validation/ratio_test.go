package validation

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/berthdev/berth/api/v1beta1"
)

func TestValidateRatio(t *testing.T) {
	pd := func(r *v1beta1.PrefillDecodeRatio, decoderReplicas *int32) *v1beta1.InferenceServiceSpec {
		s := &v1beta1.InferenceServiceSpec{PrefillDecodeRatio: r, Engine: &v1beta1.EngineSpec{}, Decoder: &v1beta1.DecoderSpec{}}
		s.Decoder.Replicas = decoderReplicas
		return s
	}
	cases := []struct {
		name       string
		spec       *v1beta1.InferenceServiceSpec
		hasDecoder bool
		want       []string // "field: fragment"
	}{
		{"none", &v1beta1.InferenceServiceSpec{}, false, nil},
		{"1:2 default skew", pd(&v1beta1.PrefillDecodeRatio{Prefill: 1, Decode: 2}, nil), true, nil},
		{"no decoder", &v1beta1.InferenceServiceSpec{PrefillDecodeRatio: &v1beta1.PrefillDecodeRatio{Prefill: 1, Decode: 1}}, false,
			[]string{"spec.prefillDecodeRatio: needs a decoder"}},
		{"zero and too big", pd(&v1beta1.PrefillDecodeRatio{Prefill: 0, Decode: 65}, nil), true,
			[]string{"spec.prefillDecodeRatio.prefill: between 1 and 64", "spec.prefillDecodeRatio.decode: between 1 and 64"}},
		{"1:3 needs skew 2", pd(&v1beta1.PrefillDecodeRatio{Prefill: 1, Decode: 3}, nil), true,
			[]string{"spec.prefillDecodeRatio.maxSkew: at least 2"}},
		{"1:3 skew 2", pd(&v1beta1.PrefillDecodeRatio{Prefill: 1, Decode: 3, MaxSkew: ptr.To[int32](2)}, nil), true, nil},
		{"skew 0", pd(&v1beta1.PrefillDecodeRatio{Prefill: 1, Decode: 2, MaxSkew: ptr.To[int32](0)}, nil), true,
			[]string{"spec.prefillDecodeRatio.maxSkew: at least 1"}},
		{"decoder replicas", pd(&v1beta1.PrefillDecodeRatio{Prefill: 1, Decode: 2}, ptr.To[int32](4)), true,
			[]string{"spec.decoder.replicas: follow the engine's"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := ValidateRatio(c.spec, c.hasDecoder)
			if len(errs) != len(c.want) {
				t.Fatalf("got %v, want %d errors %v", errs, len(c.want), c.want)
			}
			for i, w := range c.want {
				f, frag, _ := strings.Cut(w, ": ")
				if errs[i].Field != f || !strings.Contains(errs[i].Error(), frag) {
					t.Errorf("error %d = %v, want field %s containing %q", i, errs[i], f, frag)
				}
			}
		})
	}
}
