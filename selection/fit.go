package selection

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// DefaultFitHeadroom multiplies a model's weights to leave room for the KV
// cache, activations and the runtime's own buffers: a class must hold
// 1.2 × the weights (SGLang's and vLLM's defaults reserve 10-12 % of GPU
// memory for other uses and need a useful KV cache on top of the weights).
const DefaultFitHeadroom = 1.2

// SetFitHeadroom sets the factor the fit check multiplies a model's weights
// by (DefaultFitHeadroom unless set). It must be between 1 and 10.
func (x *Index) SetFitHeadroom(h float64) error {
	if math.IsNaN(h) || h < 1 || h > 10 {
		return fmt.Errorf("fit headroom %v is not between 1 and 10", h)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.headroomMilli = int64(math.Round(h * 1000))
	return nil
}

// bytesPerParameter reads a quantization name in milli-bytes per
// parameter, with its text for explanations: 4-bit schemes (int4, awq,
// gptq, fp4, nf4) 0.5, 8-bit ones (fp8, int8, w8a8) 1, fp32 4, and 2 for
// fp16, bf16, none and anything unknown.
func bytesPerParameter(q string) (int64, string) {
	// The text is constant (the quantization is written after it), so
	// reading it allocates nothing.
	l := strings.ToLower(q)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(l, s) {
				return true
			}
		}
		return false
	}
	switch {
	case l == "":
		return 2000, "2 bytes"
	case has("int4", "awq", "gptq", "fp4", "nf4", "4bit", "w4a"):
		return 500, "0.5 byte"
	case has("fp8", "int8", "8bit", "w8a"):
		return 1000, "1 byte"
	case has("fp32", "float32"):
		return 4000, "4 bytes"
	}
	return 2000, "2 bytes"
}

// mulDiv is a×b/d without overflow, saturating at MaxInt64 (a, b ≥ 0).
func mulDiv(a, b, d int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(d) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(d))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// fitNeed is what the model needs of a group's accelerator memory, and
// what explanations quote. Texts are written only for classes that fail,
// so a decision where every class holds the model allocates nothing here.
type fitNeed struct {
	bytes    int64 // 0: the model declares no size, nothing is checked
	sizeText string
	bpp      string // "1 byte", "2 bytes"
	quant    string // "" for unquantized
	headroom int64  // milli
}

func (x *Index) fitNeedFor(m *modelEntry) fitNeed {
	if m.model.Size <= 0 {
		return fitNeed{}
	}
	bpp, bppText := bytesPerParameter(m.quant)
	b := mulDiv(mulDiv(m.model.Size, bpp, 1000), x.headroomMilli, 1000)
	return fitNeed{bytes: b, sizeText: m.sizeText, bpp: bppText, quant: m.quant, headroom: x.headroomMilli}
}

// groupMemory is GPUs per group × memory per GPU, saturating.
func groupMemory(gpus, memory int64) int64 { return mulDiv(gpus, memory, 1) }

// appendFit appends why a group of gpus accelerators of memory bytes each
// does not hold the model: "does not hold the model: needs ≥ 486 GB, group
// has 8 × 40 GiB (343.6 GB; 405B parameters × 1 byte (fp8) × 1.2 headroom)".
func appendFit(b []byte, f *fitNeed, gpus, memory int64) []byte {
	b = append(b, "does not hold the model: needs ≥ "...)
	b = appendGB(b, f.bytes)
	b = append(b, ", group has "...)
	b = strconv.AppendInt(b, gpus, 10)
	b = append(b, " × "...)
	b = appendOneDecimal(b, memory, 1<<30)
	b = append(b, " GiB ("...)
	b = appendGB(b, groupMemory(gpus, memory))
	b = append(b, "; "...)
	b = append(b, f.sizeText...)
	b = append(b, " parameters × "...)
	b = append(b, f.bpp...)
	b = append(b, " ("...)
	if f.quant == "" {
		b = append(b, "unquantized"...)
	} else {
		b = append(b, f.quant...)
	}
	b = append(b, ") × "...)
	b = appendMilli(b, f.headroom)
	return append(b, " headroom)"...)
}

// appendMilli writes v/1000 with up to three decimals, without trailing zeros.
func appendMilli(b []byte, v int64) []byte {
	b = strconv.AppendInt(b, v/1000, 10)
	if r := v % 1000; r != 0 {
		d := [4]byte{'.', byte('0' + r/100), byte('0' + r/10%10), byte('0' + r%10)}
		n := 4
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return b
}

// appendGB writes bytes as decimal gigabytes with at most one decimal.
func appendGB(b []byte, n int64) []byte {
	return append(appendOneDecimal(b, n, 1_000_000_000), " GB"...)
}

// appendOneDecimal writes n/unit rounded to one decimal, without ".0".
func appendOneDecimal(b []byte, n, unit int64) []byte {
	tenths := mulDiv(n, 10, unit)
	if rem := n - mulDiv(tenths, unit, 10); rem*20 >= unit {
		tenths++ // round half up
	}
	b = strconv.AppendInt(b, tenths/10, 10)
	if d := tenths % 10; d != 0 {
		b = append(b, '.', byte('0'+d))
	}
	return b
}
