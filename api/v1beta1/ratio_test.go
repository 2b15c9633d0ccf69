package v1beta1

import "testing"

func TestRatioRules(t *testing.T) {
	one := int32(1)
	r12 := PrefillDecodeRatio{Prefill: 1, Decode: 2, MaxSkew: &one}
	for _, c := range []struct {
		p, d   int32
		skew   int64
		within bool
	}{
		{2, 4, 0, true}, {2, 3, 1, true}, {1, 3, 1, true}, {2, 5, 1, true},
		{2, 2, 2, false}, {0, 2, 2, false}, {0, 1, 1, true}, {1, 0, 2, false}, {0, 0, 0, true},
	} {
		if got := r12.Skew(c.p, c.d); got != c.skew {
			t.Errorf("1:2 Skew(%d,%d) = %d, want %d", c.p, c.d, got, c.skew)
		}
		if got := r12.Within(c.p, c.d); got != c.within {
			t.Errorf("1:2 Within(%d,%d) = %v, want %v", c.p, c.d, got, c.within)
		}
	}
	for _, c := range []struct{ p, d, engine, want int32 }{
		{1, 2, 2, 4}, {1, 2, 4, 8}, {1, 2, 0, 0}, {2, 3, 3, 5}, {3, 1, 4, 2}, {2, 1, 1, 1}, {0, 1, 3, 0},
	} {
		r := PrefillDecodeRatio{Prefill: c.p, Decode: c.d}
		if got := r.DecodeFor(c.engine); got != c.want {
			t.Errorf("%d:%d DecodeFor(%d) = %d, want %d", c.p, c.d, c.engine, got, c.want)
		}
	}
	for _, c := range []struct{ p, d, want int32 }{
		{1, 1, 1}, {1, 2, 1}, {2, 1, 1}, {1, 3, 2}, {3, 1, 2}, {2, 3, 1}, {1, 4, 2}, {1, 5, 3}, {0, 2, 0},
	} {
		if got := MinMaxSkew(c.p, c.d); got != c.want {
			t.Errorf("MinMaxSkew(%d,%d) = %d, want %d", c.p, c.d, got, c.want)
		}
	}
}
