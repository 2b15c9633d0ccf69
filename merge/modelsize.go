package merge

import (
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/berthdev/berth/api/v1beta1"
)

// downloadHeadroomPercent is added to an estimate of a model's download
// (its weights' size) to size the download volume: tokenizer and config
// files, the index, and other files of the repository.
const downloadHeadroomPercent = 20

// downloadBytesHeadroomPercent is added to the discovered size of the
// whole download (status.discovered.downloadBytes): the file system's
// blocks and directories, and files added to a branch after discovery.
const downloadBytesHeadroomPercent = 10

// DownloadSizeLimit is the sizeLimit of the emptyDir a model is downloaded
// into, rounded up to a whole GiB: the discovered size of every file the
// downloader fetches (status.discovered.downloadBytes) plus
// downloadBytesHeadroomPercent when known; else the weights' size plus
// downloadHeadroomPercent. The weights' size is the discovered sum of the
// weight files (status.discovered.weightsBytes) when known, else the
// parameter count (status.discovered.parameterCount, else
// spec.modelParameterSize) times the bits of a parameter (modelBits). Nil
// (no limit: the volume may grow until the node's disk runs out) when
// neither can be known.
func DownloadSizeLimit(spec v1beta1.BaseModelSpec, disc *v1beta1.ModelMetadata) *resource.Quantity {
	bytes, headroom := int64(0), int64(downloadBytesHeadroomPercent)
	if disc != nil && disc.DownloadBytes != nil && *disc.DownloadBytes > 0 {
		bytes = *disc.DownloadBytes
	} else {
		bytes, headroom = weightsBytes(spec, disc), downloadHeadroomPercent
	}
	if bytes <= 0 || bytes > math.MaxInt64/(100+headroom) {
		return nil
	}
	withHeadroom := (bytes*(100+headroom) + 99) / 100
	gib := (withHeadroom + (1<<30 - 1)) >> 30
	return resource.NewQuantity(gib<<30, resource.BinarySI)
}

func weightsBytes(spec v1beta1.BaseModelSpec, disc *v1beta1.ModelMetadata) int64 {
	if disc != nil && disc.WeightsBytes != nil && *disc.WeightsBytes > 0 {
		return *disc.WeightsBytes
	}
	var params int64
	switch {
	case disc != nil && disc.ParameterCount != nil && *disc.ParameterCount > 0:
		params = *disc.ParameterCount
	case spec.ModelParameterSize != nil:
		params = parseParameterCount(*spec.ModelParameterSize)
	}
	dtype := ""
	if disc != nil {
		dtype = disc.DType
	}
	bits := modelBits(spec.Quantization, dtype)
	if params <= 0 || params > math.MaxInt64/bits {
		return 0
	}
	return (params*bits + 7) / 8
}

// modelBits is what one parameter takes on disk. A quantization scheme
// decides: 8-bit schemes (fp8, fbgemm_fp8, int8, w8a8, gptq, ...) count 10
// bits and 4-bit schemes (int4, awq, nf4, mxfp4, w4a16, ...) 6 bits, since
// their embeddings, output head and scales stay wider. Without one, the
// dtype: 32 bits for float32, 8 for float8 and int8, else 16 (bfloat16
// and float16, the usual safetensors checkpoint).
func modelBits(q *v1beta1.ModelQuantization, dtype string) int64 {
	if q != nil {
		s := strings.ToLower(string(*q))
		for _, k := range []string{"int4", "awq", "nf4", "fp4", "4bit", "w4"} {
			if strings.Contains(s, k) {
				return 6
			}
		}
		for _, k := range []string{"fp8", "int8", "8bit", "w8", "gptq"} {
			if strings.Contains(s, k) {
				return 10
			}
		}
	}
	switch d := strings.ToLower(strings.TrimSpace(dtype)); {
	case d == "float32" || d == "fp32":
		return 32
	case strings.HasPrefix(d, "float8") || d == "int8" || d == "uint8":
		return 8
	}
	return 16
}

// parseParameterCount reads a human parameter count (7B, 7.6B, 500M,
// 1.5T, 8.03B; the unit k, m, b or t in either case); 0 when it cannot.
// Precision does not matter here: the count only sizes a volume.
func parseParameterCount(s string) int64 {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0
	}
	unit := 1.0
	switch t[len(t)-1] {
	case 'k', 'K':
		unit = 1e3
	case 'm', 'M':
		unit = 1e6
	case 'b', 'B':
		unit = 1e9
	case 't', 'T':
		unit = 1e12
	}
	if unit != 1 {
		t = strings.TrimSpace(t[:len(t)-1])
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || f <= 0 || math.IsInf(f, 0) || f*unit >= math.MaxInt64/64 {
		return 0
	}
	return int64(math.Ceil(f * unit))
}
