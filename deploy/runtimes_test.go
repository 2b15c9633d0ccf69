package deploy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
)

// loadRuntimes decodes every out-of-box runtime.
func loadRuntimes(t *testing.T) []*v1beta1.ClusterServingRuntime {
	t.Helper()
	var out []*v1beta1.ClusterServingRuntime
	for _, m := range readManifests(t, runtimesDir) {
		rt := &v1beta1.ClusterServingRuntime{}
		require.NoError(t, yaml.UnmarshalStrict(m.raw, rt), m.file)
		out = append(out, rt)
	}
	require.NotEmpty(t, out)
	return out
}

// seedRows are the SGLang and vLLM tables of seed 000, with their
// architectures; every row must exist as srt-<row> or vllm-<row>.
var seedRows = map[string]string{
	"srt-deepseek-rdma-pd-rt":                          "DeepseekV3ForCausalLM",
	"srt-deepseek-rdma-rt":                             "DeepseekV3ForCausalLM",
	"srt-e5-mistral-7b-instruct-rt":                    "MistralModel",
	"srt-llama-3-1-70b-instruct-pd-rt":                 "LlamaForCausalLM",
	"srt-llama-3-1-70b-instruct-rt":                    "LlamaForCausalLM",
	"srt-llama-3-2-11b-vision-instruct-rt":             "MllamaForConditionalGeneration",
	"srt-llama-3-2-1b-instruct-pd-rt":                  "LlamaForCausalLM",
	"srt-llama-3-2-1b-instruct-rt":                     "LlamaForCausalLM",
	"srt-llama-3-2-3b-instruct-pd-rt":                  "LlamaForCausalLM",
	"srt-llama-3-2-3b-instruct-rt":                     "LlamaForCausalLM",
	"srt-llama-3-2-90b-vision-instruct-rt":             "MllamaForConditionalGeneration",
	"srt-llama-3-3-70b-instruct-pd-rt":                 "LlamaForCausalLM",
	"srt-llama-3-3-70b-instruct-rt":                    "LlamaForCausalLM",
	"srt-llama-4-maverick-17b-128e-instruct-fp8-pd-rt": "Llama4ForConditionalGeneration",
	"srt-llama-4-maverick-17b-128e-instruct-fp8-rt":    "Llama4ForConditionalGeneration",
	"srt-llama-4-scout-17b-16e-instruct-pd-rt":         "Llama4ForConditionalGeneration",
	"srt-llama-4-scout-17b-16e-instruct-rt":            "Llama4ForConditionalGeneration",
	"srt-mistral-7b-instruct-pd-rt":                    "MistralForCausalLM",
	"srt-mistral-7b-instruct-rt":                       "MistralForCausalLM",
	"srt-mixtral-8x7b-instruct-pd-rt":                  "MixtralForCausalLM",
	"srt-mixtral-8x7b-instruct-rt":                     "MixtralForCausalLM",
	"vllm-e5-mistral-7b-instruct-rt":                   "MistralModel",
	"vllm-llama-3-1-405b-instruct-fp8-rt":              "LlamaForCausalLM",
	"vllm-llama-3-1-nemotron-nano-8b-v1-rt":            "LlamaForCausalLM",
	"vllm-llama-3-1-nemotron-ultra-253b-v1-rt":         "DeciLMForCausalLM",
	"vllm-llama-3-2-11b-vision-instruct-rt":            "MllamaForConditionalGeneration",
	"vllm-llama-3-2-1b-instruct-rt":                    "LlamaForCausalLM",
	"vllm-llama-3-2-3b-instruct-rt":                    "LlamaForCausalLM",
	"vllm-llama-3-3-70b-instruct-rt":                   "LlamaForCausalLM",
	"vllm-llama-3-3-nemotron-super-49b-v1-rt":          "DeciLMForCausalLM",
	"vllm-llama-4-maverick-17b-128e-instruct-fp8-rt":   "Llama4ForConditionalGeneration",
	"vllm-llama-4-scout-17b-16e-instruct-rt":           "Llama4ForConditionalGeneration",
	"vllm-mistral-7b-instruct-rt":                      "MistralForCausalLM",
	"vllm-mixtral-8x7b-instruct-rt":                    "MixtralForCausalLM",
}

// TestRuntimesCoverTheSeedTables: one runtime per table row, with the row's
// architecture, and nothing else.
func TestRuntimesCoverTheSeedTables(t *testing.T) {
	got := map[string]string{}
	for _, rt := range loadRuntimes(t) {
		require.Len(t, rt.Spec.SupportedModelFormats, 1, rt.Name)
		f := rt.Spec.SupportedModelFormats[0]
		require.NotNil(t, f.ModelArchitecture, rt.Name)
		got[rt.Name] = *f.ModelArchitecture
	}
	assert.Equal(t, seedRows, got)
}

// tokens returns a container's command and args as whitespace-separated
// tokens, so flags inside a `sh -c` script count too.
func tokens(r *v1beta1.RunnerSpec) []string {
	var out []string
	for _, s := range append(slices.Clone(r.Command), r.Args...) {
		out = append(out, strings.Fields(s)...)
	}
	return out
}

// flagValue returns the value of the first of names in toks ("--k v" or
// "--k=v"), and whether it was there.
func flagValue(toks []string, names ...string) (string, bool) {
	for i, tok := range toks {
		for _, n := range names {
			if tok == n && i+1 < len(toks) {
				return toks[i+1], true
			}
			if v, ok := strings.CutPrefix(tok, n+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}

func hasToken(toks []string, want string) bool { return slices.Contains(toks, want) }

// gpuCount returns nvidia.com/gpu of a runner, checking requests == limits
// (extended resources cannot be overcommitted).
func gpuCount(t *testing.T, what string, r *v1beta1.RunnerSpec) int64 {
	t.Helper()
	req := r.Resources.Requests[corev1.ResourceName("nvidia.com/gpu")]
	lim := r.Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]
	assert.Equal(t, 0, req.Cmp(lim), "%s: nvidia.com/gpu requests %s != limits %s", what, req.String(), lim.String())
	return lim.Value()
}

// servingGroup is the main container(s) of an engine or decoder, with the
// GPUs of the whole group.
type servingGroup struct {
	entry      *v1beta1.RunnerSpec // the pod that serves HTTP
	worker     *v1beta1.RunnerSpec // nil for single-pod groups
	groupGPUs  int64
	podsPerGrp int64
}

func groupOf(t *testing.T, what string, runner *v1beta1.RunnerSpec, leader *v1beta1.LeaderSpec, worker *v1beta1.WorkerSpec) servingGroup {
	t.Helper()
	if leader == nil {
		require.NotNil(t, runner, "%s: no runner", what)
		require.Nil(t, worker, "%s: a worker without a leader", what)
		return servingGroup{entry: runner, groupGPUs: gpuCount(t, what, runner), podsPerGrp: 1}
	}
	require.NotNil(t, leader.Runner, "%s: leader without runner", what)
	require.NotNil(t, worker, "%s: leader without worker", what)
	require.NotNil(t, worker.Runner, "%s: worker without runner", what)
	require.NotNil(t, worker.Size, "%s: worker.size not set", what)
	require.GreaterOrEqual(t, *worker.Size, int32(1), "%s: worker.size", what)
	pods := int64(1 + *worker.Size)
	lg, wg := gpuCount(t, what+" leader", leader.Runner), gpuCount(t, what+" worker", worker.Runner)
	assert.Equal(t, lg, wg, "%s: leader and worker GPUs differ", what)
	return servingGroup{entry: leader.Runner, worker: worker.Runner, groupGPUs: lg * pods, podsPerGrp: pods}
}

// templateRE finds template actions; the design page allows runtimes only
// {{.Name}} and {{.Namespace}} here (labels and annotations of a service are
// not known to a cluster-wide runtime).
var templateRE = regexp.MustCompile(`\{\{[^}]*\}\}`)

// TestRuntimesAreRealistic checks every runtime's shape: the engine command
// of its engine, parallelism equal to the GPUs it requests, probes and the
// serving port, PD variants with prefill, decode and router, multi-node
// variants with leader and workers, fp8 where the name says so.
func TestRuntimesAreRealistic(t *testing.T) {
	for _, rt := range loadRuntimes(t) {
		t.Run(rt.Name, func(t *testing.T) {
			spec := rt.Spec
			sglang := strings.HasPrefix(rt.Name, "srt-")
			pd := strings.Contains(rt.Name, "-pd-")
			f := spec.SupportedModelFormats[0]

			require.NotNil(t, f.ModelFormat)
			assert.Equal(t, "safetensors", f.ModelFormat.Name)
			require.NotNil(t, f.ModelFormat.Version)
			assert.Equal(t, "1.0.0", *f.ModelFormat.Version)
			require.NotNil(t, f.ModelFramework)
			assert.Equal(t, "transformers", f.ModelFramework.Name)
			require.NotNil(t, f.ModelFramework.Version)
			assert.Equal(t, []v1beta1.ProtocolVersion{v1beta1.ProtocolOpenAI}, spec.ProtocolVersions)
			if strings.Contains(rt.Name, "fp8") {
				require.NotNil(t, f.Quantization, "the name says fp8")
				assert.Equal(t, v1beta1.ModelQuantization("fp8"), *f.Quantization)
			}
			require.NotNil(t, f.AutoSelect)
			if pd {
				assert.False(t, *f.AutoSelect, "PD variants are chosen explicitly")
			} else {
				assert.True(t, *f.AutoSelect)
				require.NotNil(t, f.Priority)
			}

			req := spec.AcceleratorRequirements
			require.NotNil(t, req, "CUDA images need NVIDIA classes: set acceleratorRequirements")
			require.NotNil(t, req.RequiredCapabilities)
			assert.Equal(t, "8.0", req.RequiredCapabilities.MinComputeCapability)
			require.NotNil(t, req.RequiredCapabilities.MemoryGB, "memory per GPU")
			if f.Quantization != nil && *f.Quantization == "fp8" {
				assert.Contains(t, req.RequiredCapabilities.RequiredFeatures, "fp8", "fp8 weights need fp8 tensor cores")
			}

			require.NotNil(t, spec.ModelSizeRange)
			lo, hi := mustSize(t, spec.ModelSizeRange.Min), mustSize(t, spec.ModelSizeRange.Max)
			assert.Less(t, lo, hi)

			require.NotNil(t, spec.EngineConfig)
			groups := map[string]servingGroup{"engine": groupOf(t, "engine", spec.EngineConfig.Runner, spec.EngineConfig.Leader, spec.EngineConfig.Worker)}
			if pd {
				require.NotNil(t, spec.DecoderConfig, "PD runtime without decoderConfig")
				require.NotNil(t, spec.RouterConfig, "PD runtime without routerConfig")
				groups["decoder"] = groupOf(t, "decoder", spec.DecoderConfig.Runner, spec.DecoderConfig.Leader, spec.DecoderConfig.Worker)
			} else {
				assert.Nil(t, spec.DecoderConfig)
			}
			for comp, g := range groups {
				toks := tokens(g.entry)
				serve := slices.Index(toks, "serve")
				if serve > 0 && toks[serve-1] == "vllm" {
					// In a `sh -c` script the engine's flags follow `vllm
					// serve`; before it come e.g. `ray start` flags.
					toks = toks[serve:]
				}
				if sglang {
					assert.True(t, strings.HasPrefix(g.entry.Image, "lmsysorg/sglang:"), "%s image %s", comp, g.entry.Image)
					assert.Equal(t, []string{"python3", "-m", "sglang.launch_server"}, g.entry.Command, comp)
				} else {
					assert.True(t, strings.HasPrefix(g.entry.Image, "vllm/vllm-openai:"), "%s image %s", comp, g.entry.Image)
					assert.True(t, serve > 0 && toks[0] == "serve", "%s: not `vllm serve`", comp)
				}
				name, ok := flagValue(toks, "--served-model-name")
				assert.True(t, ok && name == "{{.Name}}", "%s: --served-model-name should be {{.Name}}", comp)
				port, _ := flagValue(toks, "--port")
				assert.Equal(t, "8080", port, comp)
				tp, ok := flagValue(toks, "--tp-size", "--tp", "--tensor-parallel-size")
				require.True(t, ok, "%s: no tensor-parallel flag", comp)
				pp, ok := flagValue(toks, "--pipeline-parallel-size", "--pp-size")
				if !ok {
					pp = "1"
				}
				tpN, err1 := strconv.Atoi(tp)
				ppN, err2 := strconv.Atoi(pp)
				require.NoError(t, err1)
				require.NoError(t, err2)
				assert.Equal(t, g.groupGPUs, int64(tpN*ppN), "%s: tensor x pipeline parallel must use every GPU of the group", comp)
				if g.podsPerGrp > 1 && sglang {
					nnodes, _ := flagValue(toks, "--nnodes")
					assert.Equal(t, "$(BERTH_GROUP_SIZE)", nnodes, comp)
					rank, _ := flagValue(toks, "--node-rank")
					assert.Equal(t, "$(BERTH_WORKER_INDEX)", rank, comp)
				}
				if g.worker != nil {
					assert.Contains(t, strings.Join(tokens(g.worker), " "), "$(BERTH_LEADER_ADDRESS)", "%s: workers must find their leader", comp)
				}
				require.NotEmpty(t, g.entry.Ports, comp)
				assert.Equal(t, int32(8080), g.entry.Ports[0].ContainerPort, comp)
				assert.NotNil(t, g.entry.ReadinessProbe, comp)
				assert.NotNil(t, g.entry.LivenessProbe, comp)
				assert.NotNil(t, g.entry.StartupProbe, "%s: loading weights takes minutes; without a startup probe liveness kills the pod", comp)
				mode, hasMode := flagValue(toks, "--disaggregation-mode")
				switch {
				case pd && comp == "engine":
					assert.Equal(t, "prefill", mode)
				case pd && comp == "decoder":
					assert.Equal(t, "decode", mode)
				default:
					assert.False(t, hasMode, "only PD runtimes disaggregate")
				}
			}
			if pd {
				r := spec.RouterConfig.Runner
				require.NotNil(t, r)
				toks := tokens(r)
				assert.Equal(t, []string{"python3", "-m", "sglang_router.launch_router"}, r.Command)
				assert.True(t, hasToken(toks, "--pd-disaggregation"))
				assert.True(t, hasToken(toks, "ome.io/component=engine") && hasToken(toks, "ome.io/component=decoder"))
				// Both selectors name the router pod's pairing, so a router
				// pairs only prefill and decode of one pairing.
				n := 0
				for _, tok := range toks {
					if tok == "ome.io/pairing={{.Pairing}}" {
						n++
					}
				}
				assert.Equal(t, 2, n, "--prefill-selector and --decode-selector select ome.io/pairing={{.Pairing}}")
				// The gateway's /readiness is 503 until a prefill and a
				// decode of its selectors are healthy; /health always answers.
				require.NotNil(t, r.ReadinessProbe)
				require.NotNil(t, r.ReadinessProbe.HTTPGet)
				assert.Equal(t, "/readiness", r.ReadinessProbe.HTTPGet.Path)
				gpu := r.Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]
				assert.True(t, gpu.IsZero(), "the router is CPU-only")
			}

			data, err := yaml.Marshal(rt)
			require.NoError(t, err)
			for _, tmpl := range templateRE.FindAllString(string(data), -1) {
				assert.Contains(t, []string{"{{.Name}}", "{{.Namespace}}", "{{.Pairing}}"}, tmpl, "template outside the design page's set")
			}
		})
	}
}

// sizeRE is the design page's size syntax: 500M, 7B, 7.6B, 1.5T, any case,
// or a plain integer.
var sizeRE = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMbBtT]?)\s*$`)

func parseSize(s string) (float64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("size %q is not like 500M, 7B, 7.6B or 1.5T", s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err
	}
	mult := map[string]float64{"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}[strings.ToLower(m[2])]
	return n * mult, nil
}

func mustSize(t *testing.T, s *string) float64 {
	t.Helper()
	require.NotNil(t, s, "every out-of-box runtime bounds its size range on both sides")
	v, err := parseSize(*s)
	require.NoError(t, err)
	return v
}
