package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

// runtimeIndex loads every out-of-box runtime into a selection index, the
// way the webhook's cache would see them after `kubectl apply -k`.
func runtimeIndex(t *testing.T) (*selection.Index, []*v1beta1.ClusterServingRuntime) {
	t.Helper()
	x := selection.NewIndex()
	rts := loadRuntimes(t)
	for _, rt := range rts {
		x.UpsertClusterServingRuntime(rt)
	}
	return x, rts
}

// TestRuntimesPassRuntimeValidation: the webhook's own runtime checks
// (versions, sizes, conditions) accept every out-of-box runtime.
func TestRuntimesPassRuntimeValidation(t *testing.T) {
	for _, rt := range loadRuntimes(t) {
		t.Run(rt.Name, func(t *testing.T) {
			errs, _ := selection.ValidateRuntimeSpec(field.NewPath("spec"), &rt.Spec)
			assert.Empty(t, errs)
		})
	}
}

// TestRuntimesHaveNoPriorityConflicts: under the design page's priority rule
// no two out-of-box runtimes could both match a model with the same
// priority, so installing all of them is never denied. The last case shows
// the check finds a real tie.
func TestRuntimesHaveNoPriorityConflicts(t *testing.T) {
	x, rts := runtimeIndex(t)
	for _, rt := range rts {
		t.Run(rt.Name, func(t *testing.T) {
			assert.Empty(t, x.PriorityConflicts(selection.KindClusterServingRuntime, "", rt.Name, &rt.Spec))
		})
	}
	t.Run("a copy of a runtime conflicts with it", func(t *testing.T) {
		var orig *v1beta1.ClusterServingRuntime
		for _, rt := range rts {
			if rt.Name == "vllm-mistral-7b-instruct-rt" {
				orig = rt
			}
		}
		require.NotNil(t, orig)
		conflicts := x.PriorityConflicts(selection.KindClusterServingRuntime, "", "my-vllm-mistral", &orig.Spec)
		require.Len(t, conflicts, 1)
		assert.Contains(t, conflicts[0].Detail, "vllm-mistral-7b-instruct-rt")
	})
}

// TestRuntimesServeTheirModels: for a model of each row, auto-selection
// over the whole out-of-box set picks the intended runtime, and a PD variant
// named explicitly is accepted for the same model.
func TestRuntimesServeTheirModels(t *testing.T) {
	x, _ := runtimeIndex(t)
	shippedClassIndex(t, x)
	cases := []struct {
		model, arch, size, quant string
		want                     string // auto-selected runtime
		pd                       string // PD variant, "" when the row has none
	}{
		{"llama-3-2-1b", "LlamaForCausalLM", "1.24B", "", "srt-llama-3-2-1b-instruct-rt", "srt-llama-3-2-1b-instruct-pd-rt"},
		{"llama-3-2-3b", "LlamaForCausalLM", "3.21B", "", "srt-llama-3-2-3b-instruct-rt", "srt-llama-3-2-3b-instruct-pd-rt"},
		{"nemotron-nano-8b", "LlamaForCausalLM", "8.03B", "", "vllm-llama-3-1-nemotron-nano-8b-v1-rt", ""},
		{"llama-3-3-70b", "LlamaForCausalLM", "70.6B", "", "srt-llama-3-3-70b-instruct-rt", "srt-llama-3-1-70b-instruct-pd-rt"},
		{"llama-3-1-405b-fp8", "LlamaForCausalLM", "405B", "fp8", "vllm-llama-3-1-405b-instruct-fp8-rt", ""},
		{"mistral-7b", "MistralForCausalLM", "7.2B", "", "srt-mistral-7b-instruct-rt", "srt-mistral-7b-instruct-pd-rt"},
		{"e5-mistral-7b", "MistralModel", "7.1B", "", "srt-e5-mistral-7b-instruct-rt", ""},
		{"mixtral-8x7b", "MixtralForCausalLM", "46.7B", "", "srt-mixtral-8x7b-instruct-rt", "srt-mixtral-8x7b-instruct-pd-rt"},
		{"llama-3-2-11b-vision", "MllamaForConditionalGeneration", "10.7B", "", "srt-llama-3-2-11b-vision-instruct-rt", ""},
		{"llama-3-2-90b-vision", "MllamaForConditionalGeneration", "88.6B", "", "srt-llama-3-2-90b-vision-instruct-rt", ""},
		{"llama-4-scout", "Llama4ForConditionalGeneration", "109B", "", "srt-llama-4-scout-17b-16e-instruct-rt", "srt-llama-4-scout-17b-16e-instruct-pd-rt"},
		{"llama-4-maverick-fp8", "Llama4ForConditionalGeneration", "402B", "fp8", "srt-llama-4-maverick-17b-128e-instruct-fp8-rt", "srt-llama-4-maverick-17b-128e-instruct-fp8-pd-rt"},
		{"nemotron-super-49b", "DeciLMForCausalLM", "49.9B", "", "vllm-llama-3-3-nemotron-super-49b-v1-rt", ""},
		{"nemotron-ultra-253b", "DeciLMForCausalLM", "253B", "", "vllm-llama-3-1-nemotron-ultra-253b-v1-rt", ""},
		{"deepseek-v3", "DeepseekV3ForCausalLM", "671B", "fp8", "srt-deepseek-rdma-rt", "srt-deepseek-rdma-pd-rt"},
	}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			bm := &v1beta1.ClusterBaseModel{
				ObjectMeta: metav1.ObjectMeta{Name: tc.model},
				Spec: v1beta1.BaseModelSpec{
					ModelFormat:        v1beta1.ModelFormat{Name: "safetensors", Version: ptrTo("1.0.0")},
					ModelFramework:     &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: ptrTo("4.47.0")},
					ModelArchitecture:  ptrTo(tc.arch),
					ModelParameterSize: ptrTo(tc.size),
				},
			}
			if tc.quant != "" {
				bm.Spec.Quantization = ptrTo(v1beta1.ModelQuantization(tc.quant))
			}
			x.UpsertClusterBaseModel(bm)
			isvc := &v1beta1.InferenceService{
				ObjectMeta: metav1.ObjectMeta{Name: tc.model, Namespace: "team-a"},
				Spec:       v1beta1.InferenceServiceSpec{Model: &v1beta1.ModelRef{Name: tc.model}},
			}
			d, err := x.Select(isvc)
			require.NoError(t, err)
			assert.Equal(t, "ClusterServingRuntime/"+tc.want, d.RuntimeRef())
			assert.True(t, d.Runtime.AutoSelected)
			assertClassFits(t, d)

			// Asking for an AMD class does not put a CUDA image on it.
			amd := isvc.DeepCopy()
			amd.Spec.AcceleratorSelector = &v1beta1.AcceleratorSelector{PreferredClasses: []string{"amd-mi250x"}}
			if d, err := x.Select(amd); err == nil {
				assert.NotEqual(t, "amd-mi250x", d.AcceleratorClassName())
			}
			if tc.pd == "" {
				return
			}
			isvc.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: tc.pd}
			d, err = x.Select(isvc)
			require.NoError(t, err)
			assert.Equal(t, "ClusterServingRuntime/"+tc.pd, d.RuntimeRef())
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// assertClassFits: the class chosen for a runtime meets the runtime's
// requirements (NVIDIA compute capability 8.0+, memory per GPU, fp8).
func assertClassFits(t *testing.T, d *selection.Decision) {
	t.Helper()
	ac := d.AcceleratorClass
	require.NotNil(t, ac, "no class chosen")
	req := d.Runtime.Spec.AcceleratorRequirements
	require.NotNil(t, req)
	assert.Equal(t, "nvidia", ac.Spec.Vendor, "class %s", ac.Name)
	require.NotNil(t, ac.Spec.Capabilities.MemoryGB)
	assert.GreaterOrEqual(t, ac.Spec.Capabilities.MemoryGB.Cmp(*req.RequiredCapabilities.MemoryGB), 0, "class %s has less memory than %s needs", ac.Name, d.Runtime.Name)
	for _, f := range req.RequiredCapabilities.RequiredFeatures {
		assert.Contains(t, ac.Spec.Capabilities.Features, f, "class %s", ac.Name)
	}
}

// shippedClassIndex loads every out-of-box AcceleratorClass and one Ready
// node per pool of the shared fleet, with 8 accelerators of its vendor.
func shippedClassIndex(t *testing.T, x *selection.Index) {
	t.Helper()
	for _, m := range readManifests(t, acceleratorsDir) {
		ac := &v1beta1.AcceleratorClass{}
		require.NoError(t, yaml.UnmarshalStrict(m.raw, ac))
		x.UpsertAcceleratorClass(ac)
	}
	for pool, nodeLabels := range fleet {
		alloc := map[corev1.ResourceName]int64{}
		switch {
		case strings.HasPrefix(nodeLabels["nvidia.com/gpu.product"], "NVIDIA"):
			alloc["nvidia.com/gpu"] = 8
		case pool == "mi250x":
			alloc["amd.com/gpu"] = 8
		case pool == "intel-max":
			alloc["gpu.intel.com/i915"] = 8
		}
		x.UpsertNode(selection.NodeInfo{Name: pool + "-0", Labels: nodeLabels, Allocatable: alloc, Ready: true})
	}
}

// TestSeedPriorityExampleLandsOnNVIDIA: seed 000's priority example (two
// SGLang runtimes with a CUDA image asking for nvidia.com/gpu: 2), with the
// shipped classes and fleet, picks the priority-2 runtime and an NVIDIA
// class. Before issue 10 the balanced strategy put it on intel-max-1550
// (gpu.intel.com/i915: 2 for a CUDA image).
func TestSeedPriorityExampleLandsOnNVIDIA(t *testing.T) {
	x := selection.NewIndex()
	for _, f := range []string{"000-priority-srt-mistral-7b-instruct.yaml", "000-priority-srt-mistral-7b-instruct-2.yaml"} {
		rt := &v1beta1.ClusterServingRuntime{}
		require.NoError(t, yaml.UnmarshalStrict(stripComments(readFile(t, seedsDir+"/"+f)), rt), f)
		x.UpsertClusterServingRuntime(rt)
	}
	x.UpsertBaseModel(&v1beta1.BaseModel{ObjectMeta: metav1.ObjectMeta{Name: "mistral-7b-instruct", Namespace: "mistral-7b-instruct"}, Spec: v1beta1.BaseModelSpec{
		ModelFormat:        v1beta1.ModelFormat{Name: "safetensors", Version: ptrTo("1.0.0")},
		ModelFramework:     &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: ptrTo("4.36.2")},
		ModelArchitecture:  ptrTo("MistralForCausalLM"),
		ModelParameterSize: ptrTo("7B"),
	}})
	shippedClassIndex(t, x)
	isvc := &v1beta1.InferenceService{}
	require.NoError(t, yaml.Unmarshal(stripComments(readFile(t, seedsDir+"/000-isvc-auto-select.yaml")), isvc))
	d, err := x.Select(isvc)
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", d.RuntimeRef())
	require.NotNil(t, d.AcceleratorClass)
	assert.Equal(t, "nvidia", d.AcceleratorClass.Spec.Vendor, "class %s", d.AcceleratorClass.Name)
	assert.True(t, d.AcceleratorAvailable)
	assert.Contains(t, d.Explanation, "AcceleratorClass/intel-max-1550: runtime requests nvidia.com/gpu and has no configuration for intel; "+
		"give ClusterServingRuntime/srt-mistral-7b-instruct-2 an acceleratorConfigurations entry for intel-max-1550 (with an image built for intel) or list it in spec.acceleratorRequirements.supportedClasses")
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// TestLargeModelMustFitItsGroup: Llama 3.1 405B in FP8 needs 405 GB of
// weights plus headroom (× 1.2 = 486 GB). On 8 × A100-40GB (344 GB) it is
// denied with the numbers; on 8 × H100-80GB (687 GB) it is admitted. The
// shipped runtime is a leader and a worker of 8 GPUs; a service that sets
// worker.size 0 asks for one pod of 8.
func TestLargeModelMustFitItsGroup(t *testing.T) {
	x, _ := runtimeIndex(t)
	shippedClassIndex(t, x)
	x.UpsertClusterBaseModel(&v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: "llama-3-1-405b-instruct-fp8"}, Spec: v1beta1.BaseModelSpec{
		ModelFormat:        v1beta1.ModelFormat{Name: "safetensors", Version: ptrTo("1.0.0")},
		ModelFramework:     &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: ptrTo("4.47.0")},
		ModelArchitecture:  ptrTo("LlamaForCausalLM"),
		ModelParameterSize: ptrTo("405B"),
		Quantization:       ptrTo(v1beta1.ModelQuantization("fp8")),
	}})
	svc := func(class string) *v1beta1.InferenceService {
		return &v1beta1.InferenceService{
			ObjectMeta: metav1.ObjectMeta{Name: "llama-405b", Namespace: "team-a", Annotations: map[string]string{v1beta1.AnnotationAcceleratorClass: class}},
			Spec: v1beta1.InferenceServiceSpec{
				Model:   &v1beta1.ModelRef{Name: "llama-3-1-405b-instruct-fp8"},
				Runtime: &v1beta1.ServingRuntimeRef{Name: "vllm-llama-3-1-405b-instruct-fp8-rt"},
				Engine:  &v1beta1.EngineSpec{Worker: &v1beta1.WorkerSpec{Size: ptrTo(int32(0))}},
			},
		}
	}
	_, err := x.Select(svc("nvidia-a100-40gb"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "needs ≥ 486 GB, group has 8 × 40 GiB (343.6 GB; 405B parameters × 1 byte (fp8) × 1.2 headroom)")

	d, err := x.Select(svc("nvidia-h100-80gb"))
	require.NoError(t, err)
	assert.Equal(t, "nvidia-h100-80gb", d.AcceleratorClassName())
}

// TestShippedRuntimesFitTheirModels: every out-of-box runtime, asked for
// the largest model of its size range (the smallest when it has no upper
// bound) in its own quantization, fits its own resource request on some
// shipped class: engine and, for PD runtimes, decoder groups alike.
func TestShippedRuntimesFitTheirModels(t *testing.T) {
	x, rts := runtimeIndex(t)
	shippedClassIndex(t, x)
	for _, rt := range rts {
		t.Run(rt.Name, func(t *testing.T) {
			r := rt.Spec.ModelSizeRange
			if r == nil || (r.Max == nil && r.Min == nil) {
				t.Skip("no size range")
			}
			size := r.Max
			if size == nil {
				size = r.Min
			}
			f := rt.Spec.SupportedModelFormats[0]
			bm := &v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: "largest-" + rt.Name}, Spec: v1beta1.BaseModelSpec{
				ModelFormat:        *f.ModelFormat,
				ModelArchitecture:  f.ModelArchitecture,
				Quantization:       f.Quantization,
				ModelParameterSize: size,
			}}
			if fw := f.ModelFramework; fw != nil {
				bm.Spec.ModelFramework = &v1beta1.ModelFrameworkSpec{Name: fw.Name, Version: fw.Version}
			}
			x.UpsertClusterBaseModel(bm)
			isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "team-a"},
				Spec: v1beta1.InferenceServiceSpec{Model: &v1beta1.ModelRef{Name: bm.Name}, Runtime: &v1beta1.ServingRuntimeRef{Name: rt.Name}}}
			if rt.Spec.DecoderConfig != nil {
				// The decoder holds the whole model too: check it as the engine.
				dec := isvc.DeepCopy()
				d := rt.Spec.DecoderConfig
				dec.Spec.Engine = &v1beta1.EngineSpec{Runner: d.Runner, Leader: d.Leader, Worker: d.Worker}
				if d.Worker == nil {
					dec.Spec.Engine.Worker = &v1beta1.WorkerSpec{Size: ptrTo(int32(0))}
				}
				_, err := x.Select(dec)
				assert.NoError(t, err, "decoder group")
			}
			_, err := x.Select(isvc)
			assert.NoError(t, err, "engine group")
		})
	}
}

// TestSeedBaseSetIsDeniedWithTheRewrite: seed 002's platform base set
// compares nvidia.com/gpu.memory with quantities ("Lt 24Gi", "Gte 32Gi"),
// which node affinity cannot express. The CRD lets them through and
// berth's discovery check denies each with the exact field, the value and
// the integer rewrite the shipped tier classes use (deploy/accelerators).
func TestSeedBaseSetIsDeniedWithTheRewrite(t *testing.T) {
	want := map[string][]string{
		"002-base-set-small-gpu.yaml": {`spec.discovery.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "24Gi": Lt compares integers, so "24Gi" never matches a node; nvidia.com/gpu.memory counts MiB: write operator Lt with value "24576"`},
		"002-base-set-medium-gpu.yaml": {
			`spec.discovery.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Gte": node affinity has no Gte, so pods could not be placed by it; nvidia.com/gpu.memory counts MiB: write operator Gt with value "32767"`,
			`spec.discovery.nodeSelectorTerms[0].matchExpressions[1].values[0]: Invalid value: "80Gi": Lt compares integers, so "80Gi" never matches a node; nvidia.com/gpu.memory counts MiB: write operator Lt with value "81920"`,
		},
		"002-base-set-large-gpu.yaml": {`spec.discovery.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Gte": node affinity has no Gte, so pods could not be placed by it; nvidia.com/gpu.memory counts MiB: write operator Gt with value "81919"`},
	}
	validators := loadValidators(t)
	for _, dir := range []string{seedsDir, acceleratorsDir} {
		for _, m := range readManifests(t, dir) {
			if m.kind() != "AcceleratorClass" {
				continue
			}
			t.Run(m.String(), func(t *testing.T) {
				var ac v1beta1.AcceleratorClass
				require.NoError(t, yaml.Unmarshal(m.raw, &ac))
				var got []string
				for _, e := range selection.ValidateDiscovery(&ac.Spec) {
					got = append(got, e.Error())
				}
				assert.Equal(t, want[filepath.Base(m.file)], got)
				if _, denied := want[filepath.Base(m.file)]; denied {
					assert.Empty(t, errorsText(validators[m.kind()].validate(deepCopyJSON(t, m.obj))), "the CRD must let the webhook name the field")
				}
			})
		}
	}
}
