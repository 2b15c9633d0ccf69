package v1beta1

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

const seedDir = "testdata/seeds"

// seedCase is one seed example: the Go type it must decode into, strictly,
// and a few field values that prove the decoding put things where the seed
// meant them.
type seedCase struct {
	file  string
	into  any
	check func(t *testing.T, obj any)
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func i32(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

func qty(t *testing.T, q *resource.Quantity, want string) {
	t.Helper()
	require.NotNil(t, q)
	assert.Equal(t, 0, q.Cmp(resource.MustParse(want)), "got %s, want %s", q.String(), want)
}

func seedCases() []seedCase {
	mistral := func(priority int32) func(t *testing.T, obj any) {
		return func(t *testing.T, obj any) {
			rt := obj.(*ClusterServingRuntime)
			require.Len(t, rt.Spec.SupportedModelFormats, 1)
			f := rt.Spec.SupportedModelFormats[0]
			assert.Equal(t, "safetensors", f.Name)
			assert.Equal(t, "1.0.0", str(f.ModelFormat.Version))
			assert.Equal(t, "transformers", f.ModelFramework.Name)
			assert.Equal(t, "4.36.2", str(f.ModelFramework.Version))
			assert.Equal(t, "MistralForCausalLM", str(f.ModelArchitecture))
			assert.Equal(t, priority, i32(f.Priority))
			assert.Equal(t, "5B", str(rt.Spec.ModelSizeRange.Min))
			assert.Equal(t, "9B", str(rt.Spec.ModelSizeRange.Max))
			assert.Equal(t, []ProtocolVersion{ProtocolOpenAI}, rt.Spec.ProtocolVersions)
			gpu := rt.Spec.EngineConfig.Runner.Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]
			assert.Equal(t, int64(2), gpu.Value())
		}
	}
	isvcMistral := func(runtime string) func(t *testing.T, obj any) {
		return func(t *testing.T, obj any) {
			is := obj.(*InferenceService)
			assert.Equal(t, "mistral-7b-instruct", is.Namespace)
			assert.Equal(t, "mistral-7b-instruct", is.Spec.Model.Name)
			assert.Equal(t, int32(1), i32(is.Spec.Engine.MinReplicas))
			assert.Equal(t, int32(1), i32(is.Spec.Engine.MaxReplicas))
			if runtime == "" {
				assert.Nil(t, is.Spec.Runtime)
			} else {
				require.NotNil(t, is.Spec.Runtime)
				assert.Equal(t, runtime, is.Spec.Runtime.Name)
			}
		}
	}
	sklearnModel := func(runtime, version, protocol string) func(t *testing.T, obj any) {
		return func(t *testing.T, obj any) {
			is := obj.(*InferenceService)
			require.NotNil(t, is.Spec.Predictor)
			m := is.Spec.Predictor.Model
			require.NotNil(t, m)
			assert.Equal(t, "sklearn", m.ModelFormat.Name)
			assert.Equal(t, "s3://bucket/sklearn/mnist.joblib", str(m.StorageURI))
			assert.Equal(t, runtime, str(m.Runtime))
			assert.Equal(t, version, str(m.ModelFormat.Version))
			got := "<nil>"
			if m.ProtocolVersion != nil {
				got = string(*m.ProtocolVersion)
			}
			assert.Equal(t, protocol, got)
		}
	}
	kserveFormats := func(protocols []ProtocolVersion, versions []string, priority int32) func(t *testing.T, obj any) {
		return func(t *testing.T, obj any) {
			rt := obj.(*ClusterServingRuntime)
			assert.Equal(t, protocols, rt.Spec.ProtocolVersions)
			require.Len(t, rt.Spec.SupportedModelFormats, len(versions))
			for i, v := range versions {
				f := rt.Spec.SupportedModelFormats[i]
				assert.Equal(t, "sklearn", f.Name)
				assert.Nil(t, f.ModelFormat, "KServe shape: plain name/version")
				assert.Equal(t, v, str(f.Version))
				assert.True(t, *f.AutoSelect)
				assert.Equal(t, priority, i32(f.Priority))
			}
		}
	}
	return []seedCase{
		{"000-srt-mistral-7b-instruct.yaml", &ClusterServingRuntime{}, func(t *testing.T, obj any) {
			mistral(1)(t, obj)
			rt := obj.(*ClusterServingRuntime)
			assert.Equal(t, "lmsysorg/sglang:v0.4.6.post6", rt.Spec.EngineConfig.Runner.Image)
			assert.Equal(t, int32(3), i32(rt.Spec.EngineConfig.MaxReplicas))
		}},
		{"000-isvc-explicit-runtime.yaml", &InferenceService{}, isvcMistral("srt-mistral-7b-instruct")},
		{"000-isvc-auto-select.yaml", &InferenceService{}, isvcMistral("")},
		{"000-priority-srt-mistral-7b-instruct.yaml", &ClusterServingRuntime{}, mistral(1)},
		{"000-priority-srt-mistral-7b-instruct-2.yaml", &ClusterServingRuntime{}, func(t *testing.T, obj any) {
			mistral(2)(t, obj)
			assert.Nil(t, obj.(*ClusterServingRuntime).Spec.EngineConfig.MinReplicas)
		}},
		{"001-example-runtime.yaml", &ServingRuntime{}, func(t *testing.T, obj any) {
			rt := obj.(*ServingRuntime)
			require.Len(t, rt.Spec.Containers, 1)
			c := rt.Spec.Containers[0]
			assert.Equal(t, "kserve-container", c.Name)
			assert.Equal(t, "examplemodelserver:latest", c.Image)
			assert.Equal(t, []string{"--model_dir=/mnt/models", "--http_port=8080"}, c.Args)
			assert.Equal(t, "example-format", rt.Spec.SupportedModelFormats[0].Name)
			assert.Equal(t, "1", str(rt.Spec.SupportedModelFormats[0].Version))
		}},
		{"001-explicit-isvc-sklearn.yaml", &InferenceService{}, sklearnModel("kserve-mlserver", "<nil>", "<nil>")},
		{"001-implicit-kserve-sklearnserver.yaml", &ClusterServingRuntime{}, kserveFormats(nil, []string{"1"}, -1)},
		{"001-implicit-isvc-sklearn.yaml", &InferenceService{}, sklearnModel("<nil>", "<nil>", "<nil>")},
		{"001-implicit-isvc-sklearn-version-0.yaml", &InferenceService{}, sklearnModel("<nil>", "0", "<nil>")},
		{"001-priority-kserve-sklearnserver.yaml", &ClusterServingRuntime{}, kserveFormats([]ProtocolVersion{ProtocolKServeV1, ProtocolKServeV2}, []string{"1"}, 1)},
		{"001-priority-mlserver.yaml", &ClusterServingRuntime{}, kserveFormats([]ProtocolVersion{ProtocolKServeV2}, []string{"1"}, 2)},
		{"001-priority-isvc-sklearn-v2.yaml", &InferenceService{}, sklearnModel("<nil>", "<nil>", "v2")},
		{"001-priority-mlserver-two-versions.yaml", &ClusterServingRuntime{}, kserveFormats([]ProtocolVersion{ProtocolKServeV2}, []string{"0", "1"}, 2)},
		{"001-previous-schema-isvc-sklearn.yaml", &InferenceService{}, func(t *testing.T, obj any) {
			p := obj.(*InferenceService).Spec.Predictor
			require.NotNil(t, p)
			assert.Nil(t, p.Model)
			require.NotNil(t, p.SKLearn, "the old-schema framework key")
			assert.Equal(t, "s3://bucket/sklearn/mnist.joblib", str(p.SKLearn.StorageURI))
		}},
		{"001-previous-schema-isvc-sklearn-migrated.yaml", &InferenceService{}, sklearnModel("kserve-sklearnserver", "<nil>", "<nil>")},
		{"002-story1-current-llama-7b.yaml", &InferenceService{}, func(t *testing.T, obj any) {
			is := obj.(*InferenceService)
			assert.Equal(t, "llama-7b", is.Spec.Model.Name)
			assert.Nil(t, is.Spec.Runtime)
		}},
		{"002-story1-new-llama-7b.yaml", &InferenceService{}, func(t *testing.T, obj any) {
			assert.Equal(t, "sglang-universal", obj.(*InferenceService).Spec.Runtime.Name)
		}},
		{"002-story2-sglang-all-gpus.yaml", &ServingRuntime{}, func(t *testing.T, obj any) {
			rt := obj.(*ServingRuntime)
			require.Len(t, rt.Spec.Containers, 1)
			assert.Equal(t, "sglang", rt.Spec.Containers[0].Name)
			assert.Equal(t, []corev1.EnvVar{{Name: "GPU_MEMORY_UTILIZATION", Value: "0.85"}, {Name: "MAX_MODEL_LEN", Value: "16384"}}, rt.Spec.Containers[0].Env)
		}},
		{"002-story2-sglang-universal.yaml", &ServingRuntime{}, func(t *testing.T, obj any) {
			rt := obj.(*ServingRuntime)
			req := rt.Spec.AcceleratorRequirements.RequiredCapabilities
			assert.Equal(t, "8.0", req.MinComputeCapability)
			assert.Equal(t, []string{"tensor-cores"}, req.RequiredFeatures)
			require.Len(t, rt.Spec.AcceleratorConfigurations, 2)
			h100 := rt.Spec.AcceleratorConfigurations[1]
			assert.Equal(t, "nvidia-h100-80gb", h100.Selector.AcceleratorClass)
			assert.Equal(t, envValue(h100.Env, "ENABLE_FP8"), "true")
			assert.Equal(t, []string{"--enable-prefix-caching", "--enable-chunked-prefill", "--speculative-model=llama-68m"}, h100.Runner.Args)
		}},
		{"002-story3-gpu-nvidia-a100.yaml", &AcceleratorClass{}, func(t *testing.T, obj any) {
			ac := obj.(*AcceleratorClass)
			assert.Equal(t, "gpu-nvidia-a100", ac.Annotations[AnnotationKueueResourceFlavor])
			assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "A100-SXM4-40GB"}, ac.Spec.NodeSelector)
			qty(t, ac.Spec.Capabilities.MemoryGB, "40")
			assert.Equal(t, "8.0", ac.Spec.Capabilities.ComputeCapability)
		}},
		{"002-story4-nvidia-h100-80gb.yaml", &AcceleratorClass{}, func(t *testing.T, obj any) {
			assert.Equal(t, "H100-SXM5-80GB", obj.(*AcceleratorClass).Spec.Discovery.NodeSelector["nvidia.com/gpu.product"])
		}},
		{"002-story4-llama-70b.yaml", &InferenceService{}, func(t *testing.T, obj any) {
			is := obj.(*InferenceService)
			assert.Equal(t, []string{"nvidia-h100-80gb"}, is.Spec.AcceleratorSelector.PreferredClasses)
			assert.Equal(t, map[string]string{"topology.kubernetes.io/zone": "us-west-2a", "compliance": "pci"}, is.Spec.Engine.NodeSelector)
		}},
		{"002-story5-llama-7b-with-router.yaml", &InferenceService{}, func(t *testing.T, obj any) {
			is := obj.(*InferenceService)
			r := is.Spec.Router
			require.NotNil(t, r)
			assert.Equal(t, "cpu-only", r.NodeSelector["node-type"])
			require.NotNil(t, r.Resources, "router.resources is the pod-level resources of PodSpec")
			qty(t, ptr(r.Resources.Limits[corev1.ResourceMemory]), "8Gi")
			require.Len(t, is.Spec.Engine.AcceleratorConfigurations, 1)
			ac := is.Spec.Engine.AcceleratorConfigurations[0]
			assert.Equal(t, "nvidia-a100-40gb", ac.Selector.AcceleratorClass)
			qty(t, ptr(ac.Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]), "1")
		}},
		{"002-story6-sglang-cost-optimized.yaml", &ServingRuntime{}, func(t *testing.T, obj any) {
			po := obj.(*ServingRuntime).Spec.AcceleratorRequirements.PreferenceOrder
			require.Len(t, po, 2)
			assert.Equal(t, "nvidia-a100-40gb", po[0].Class)
			assert.Equal(t, int32(100), po[0].Score)
			assert.Equal(t, []PreferenceCondition{{ModelSize: "<30B"}, {RequestSize: "<2048"}}, po[0].Conditions)
			assert.Equal(t, []PreferenceCondition{{ModelSize: ">70B"}, {RequestSize: ">4096"}}, po[1].Conditions)
		}},
		{"002-story6-cost-sensitive-deployment.yaml", &InferenceService{}, func(t *testing.T, obj any) {
			sel := obj.(*InferenceService).Spec.AcceleratorSelector
			assert.Equal(t, StrategyCost, sel.Strategy)
			assert.Equal(t, map[string]string{"ome.io/cost-threshold": "0.5"}, sel.Annotations)
		}},
		{"002-story7-sglang-performance-optimized.yaml", &ServingRuntime{}, func(t *testing.T, obj any) {
			cfgs := obj.(*ServingRuntime).Spec.AcceleratorConfigurations
			require.Len(t, cfgs, 3)
			assert.Equal(t, "nvidia-h200-96gb", cfgs[2].Selector.AcceleratorClass)
			assert.Equal(t, "65536", envValue(cfgs[2].Env, "MAX_MODEL_LEN"))
			assert.Contains(t, cfgs[1].Runner.Args, "--spec-decoding-acceptance-method=typical")
		}},
		{"002-story8-custom-command-deployment.yaml", &InferenceService{}, func(t *testing.T, obj any) {
			r := obj.(*InferenceService).Spec.Engine.Runner
			require.Len(t, r.Command, 3)
			assert.Equal(t, []string{"sh", "-c"}, r.Command[:2])
			assert.True(t, strings.HasPrefix(r.Command[2], "python3 -m sglang.launch_server --host 0.0.0.0 --port 8080 --model-path ${MODEL_PATH} --tp-size 16"), r.Command[2])
			assert.True(t, strings.HasSuffix(r.Command[2], "--enable-metrics\n"), "a folded block keeps one final newline")
		}},
		{"002-story8-args-merge-deployment.yaml", &InferenceService{}, func(t *testing.T, obj any) {
			is := obj.(*InferenceService)
			assert.Equal(t, []string{"--host=0.0.0.0", "--port=8080", "--model-path=${MODEL_PATH}", "--tp-size=8", "--trust-remote-code"}, is.Spec.Engine.Runner.Args)
			assert.Equal(t, "sglang-performance-optimized", is.Spec.Runtime.Name)
		}},
		{"002-story8-env-merge-deployment.yaml", &InferenceService{}, func(t *testing.T, obj any) {
			env := obj.(*InferenceService).Spec.Engine.Runner.Env
			assert.Equal(t, []corev1.EnvVar{{Name: "TENSOR_PARALLEL_SIZE", Value: "4"}, {Name: "CUSTOM_SETTING", Value: "user-value"}}, env)
		}},
		{"002-examples-nvidia-a100-40gb.yaml", &AcceleratorClass{}, func(t *testing.T, obj any) {
			s := obj.(*AcceleratorClass).Spec
			assert.Equal(t, "ampere", s.Family)
			require.Len(t, s.Discovery.NodeSelectorTerms, 1)
			assert.Equal(t, []string{"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"}, s.Discovery.NodeSelectorTerms[0].MatchExpressions[0].Values)
			assert.Equal(t, []string{"20b0", "20b2"}, s.Discovery.DeviceIDs)
			qty(t, s.Capabilities.Performance.INT8TOPS, "624")
			require.Len(t, s.Resources, 2)
			assert.True(t, s.Resources[1].Divisible)
			qty(t, s.Cost.SpotPerHour, "0.88")
		}},
		{"002-examples-nvidia-h100-80gb.yaml", &AcceleratorClass{}, func(t *testing.T, obj any) {
			s := obj.(*AcceleratorClass).Spec
			qty(t, s.Capabilities.Performance.FP8TFLOPS, "3958")
			assert.Contains(t, s.Capabilities.Features, "transformer-engine")
			assert.Equal(t, "high", s.Cost.Tier)
		}},
		{"002-examples-amd-mi250x.yaml", &AcceleratorClass{}, func(t *testing.T, obj any) {
			s := obj.(*AcceleratorClass).Spec
			assert.Equal(t, "5.7", s.Capabilities.ROCmVersion)
			qty(t, s.Capabilities.Performance.FP32TFLOPS, "47.9")
			assert.Equal(t, "amd.com/gpu", s.Resources[0].Name)
		}},
		{"002-examples-intel-max-1550.yaml", &AcceleratorClass{}, func(t *testing.T, obj any) {
			s := obj.(*AcceleratorClass).Spec
			assert.Equal(t, "1.3", s.Capabilities.LevelZeroVersion)
			assert.Equal(t, "gpu.intel.com/i915", s.Resources[0].Name)
		}},
		{"002-base-set-small-gpu.yaml", &AcceleratorClass{}, func(t *testing.T, obj any) {
			ac := obj.(*AcceleratorClass)
			assert.Equal(t, "small", ac.Labels["ome.io/gpu-tier"])
			e := ac.Spec.Discovery.NodeSelectorTerms[0].MatchExpressions[0]
			assert.Equal(t, corev1.NodeSelectorOpLt, e.Operator)
			assert.Equal(t, []string{"24Gi"}, e.Values)
		}},
		{"002-base-set-medium-gpu.yaml", &AcceleratorClass{}, func(t *testing.T, obj any) {
			ac := obj.(*AcceleratorClass)
			es := ac.Spec.Discovery.NodeSelectorTerms[0].MatchExpressions
			require.Len(t, es, 2, "both bounds in one term (ANDed)")
			assert.Equal(t, corev1.NodeSelectorOperator("Gte"), es[0].Operator)
			assert.Equal(t, "8.0", ac.Spec.Capabilities.MinComputeCapability)
		}},
		{"002-base-set-large-gpu.yaml", &AcceleratorClass{}, func(t *testing.T, obj any) {
			ac := obj.(*AcceleratorClass)
			assert.Equal(t, []string{"80Gi"}, ac.Spec.Discovery.NodeSelectorTerms[0].MatchExpressions[0].Values)
			qty(t, ac.Spec.Capabilities.MemoryGB, "80Gi")
		}},
		{"004-prefill-engine-runtimes.yaml", &InferenceService{}, func(t *testing.T, obj any) {
			e := obj.(*InferenceService).Spec.Engine
			require.Len(t, e.EngineRuntimes, 1)
			r := e.EngineRuntimes[0]
			assert.Equal(t, "sglang-pd-runtime", r.ProfileName)
			require.Len(t, r.Containers, 1)
			assert.Equal(t, "patio-runtime", r.Containers[0].Name)
			assert.Equal(t, []string{`--instance-info={"data":{"port":8000,"worker_type":"prefill", "bootstrap_port":34000}}`}, r.Containers[0].Args)
			assert.Equal(t, "8000", envValue(r.Containers[0].Env, "SGL_ROUTER_PORT"))
		}},
		{"004-sglang-pd-runtime.yaml", &ClusterEngineRuntimeProfile{}, func(t *testing.T, obj any) {
			p := obj.(*ClusterEngineRuntimeProfile)
			assert.Equal(t, ProfileNoUpdate, p.Spec.UpdateStrategy)
			require.Len(t, p.Spec.Containers, 1)
			c := p.Spec.Containers[0]
			assert.Equal(t, "engine-runtime", c.Name)
			assert.Equal(t, corev1.PullAlways, c.ImagePullPolicy)
			assert.Equal(t, []corev1.EnvVar{{Name: "TOPO_TYPE", Value: "sglang"}, {Name: "SGL_ROUTER_ROLE_NAME", Value: "router"}}, c.Env)
		}},
	}
}

func ptr[T any](v T) *T { return &v }

// envValue is the value of the first env var called name.
func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return "<unset>"
}

// TestSeedExamplesDecodeStrictly decodes every seed example with unknown and
// duplicate fields as errors into the Go type of its kind, and checks a few
// values per example.
func TestSeedExamplesDecodeStrictly(t *testing.T) {
	for _, tc := range seedCases() {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(seedDir, tc.file))
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(string(data), "# Source: seed "), "the first line says where the example came from")
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			require.NoError(t, yaml.Unmarshal(data, &meta))
			assert.Equal(t, "ome.io/v1beta1", meta.APIVersion)
			require.NoError(t, yaml.UnmarshalStrict(data, tc.into))
			typeName := strings.TrimPrefix(fmt.Sprintf("%T", tc.into), "*v1beta1.")
			assert.Equal(t, meta.Kind, typeName, "kind and Go type differ")
			tc.check(t, tc.into)
		})
	}
}

// TestEverySeedFileHasACase: a new example in testdata must get a case.
func TestEverySeedFileHasACase(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(seedDir, "*.yaml"))
	require.NoError(t, err)
	var files, cases []string
	for _, p := range paths {
		files = append(files, filepath.Base(p))
	}
	for _, c := range seedCases() {
		cases = append(cases, c.file)
	}
	sort.Strings(cases)
	assert.Equal(t, files, cases)
}

// TestStrictDecodingCatchesSeedDrift shows the decoding above is strict: a
// field the types do not have, or one given twice, is an error.
func TestStrictDecodingCatchesSeedDrift(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown spec field", "apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata: {name: x}\nspec:\n  acceleratorClass: a100\n", `unknown field "acceleratorClass"`},
		{"unknown nested field", "apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata: {name: x}\nspec:\n  engine:\n    gpuCount: 2\n", `unknown field "gpuCount"`},
		{"duplicate field", "apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata: {name: x}\nspec:\n  model: {name: a}\n  model: {name: b}\n", `"model" already set`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := yaml.UnmarshalStrict([]byte(tc.doc), &InferenceService{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
