package modelmeta

import (
	"math/big"
	"strings"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ToAPI converts Metadata into the model status's discovered block. Fields
// the files did not tell stay unset; ResolvedAt is left for the caller.
func (m Metadata) ToAPI() v1beta1.ModelMetadata {
	out := v1beta1.ModelMetadata{
		ModelType:         optString(m.ModelType),
		ModelArchitecture: optString(m.Architecture),
		DType:             m.DType,
		Source:            m.Source,
	}
	if m.Format != "" {
		out.ModelFormat = &v1beta1.ModelFormat{Name: m.Format, Version: optString(m.FormatVersion)}
	}
	if m.Framework != "" {
		out.ModelFramework = &v1beta1.ModelFrameworkSpec{Name: m.Framework, Version: optString(m.FrameworkVersion)}
	}
	if m.Quantization != "" {
		q := v1beta1.ModelQuantization(m.Quantization)
		out.Quantization = &q
	}
	if m.ParameterCount > 0 {
		n := m.ParameterCount
		out.ParameterCount, out.ModelParameterSize = &n, optString(ParameterSize(n))
	}
	if m.MaxTokens > 0 {
		n := m.MaxTokens
		out.MaxTokens = &n
	}
	if m.WeightsBytes > 0 {
		n := m.WeightsBytes
		out.WeightsBytes = &n
	}
	if m.DownloadBytes > 0 {
		n := m.DownloadBytes
		out.DownloadBytes = &n
	}
	return out
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ParameterSize writes a parameter count as OME's model agent does: the
// largest of T, B, M and K that keeps the number at least 1, rounded half up
// to two decimals, trailing zeros dropped: 8,030,261,248 -> "8.03B",
// 7,615,616,512 -> "7.62B", 494,032,768 -> "494.03M", 999 -> "999". The exact
// count is ParameterCount.
func ParameterSize(n int64) string {
	units := []struct {
		suffix string
		value  int64
	}{{"T", 1e12}, {"B", 1e9}, {"M", 1e6}, {"K", 1e3}}
	for i, u := range units {
		if n < u.value {
			continue
		}
		s := twoDecimals(n, u.value)
		if s == "1000" && i > 0 { // 999,995 is 1M, not 1000K
			u = units[i-1]
			s = twoDecimals(n, u.value)
		}
		return s + u.suffix
	}
	return big.NewInt(n).String()
}

func twoDecimals(n, unit int64) string {
	s := new(big.Rat).SetFrac64(n, unit).FloatString(2)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}
