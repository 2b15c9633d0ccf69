package selection

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// mistral is the model of seed 000's priority example.
func mistral(opts ...modelOpt) *v1beta1.ClusterBaseModel {
	base := []modelOpt{mFormat("safetensors", "1.0.0"), mFramework("transformers", "4.36.2"), mArch("MistralForCausalLM"), mSize("7B")}
	return cbm("mistral-7b-instruct", append(base, opts...)...)
}

// seedRuntime is srt-mistral-7b-instruct of seed 000 with a given priority.
func seedRuntime(name string, p int32, opts ...rtOpt) *v1beta1.ClusterServingRuntime {
	f := format("safetensors", "1.0.0", framework("transformers", "4.36.2", ""), arch("MistralForCausalLM"), prio(p))
	f.Name = "safetensors"
	return csr(name, append([]rtOpt{formats(f), protocols(v1beta1.ProtocolOpenAI), sizes("5B", "9B")}, opts...)...)
}

func TestSelectRuntime(t *testing.T) {
	st := func(name, v string, opts ...func(*v1beta1.SupportedModelFormat)) rtOpt {
		return formats(format(name, v, opts...))
	}
	tests := []struct {
		name    string
		objs    objects
		svc     *v1beta1.InferenceService
		want    string   // RuntimeRef
		explain []string // lines that must be in Explanation
		wantErr []string // substrings of the error
	}{
		{
			name: "seed 000: srt-mistral-7b-instruct-2 (priority 2) beats priority 1",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral()}, csrs: []*v1beta1.ClusterServingRuntime{
				seedRuntime("srt-mistral-7b-instruct", 1), seedRuntime("srt-mistral-7b-instruct-2", 2)}},
			svc:     isvc("mistral-7b-instruct"),
			want:    "ClusterServingRuntime/srt-mistral-7b-instruct-2",
			explain: []string{"ClusterServingRuntime/srt-mistral-7b-instruct: matches, but priority 1 is below ClusterServingRuntime/srt-mistral-7b-instruct-2's 2"},
		},
		{
			name: "seed 000: the same pair with priorities swapped",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral()}, csrs: []*v1beta1.ClusterServingRuntime{
				seedRuntime("srt-mistral-7b-instruct", 2), seedRuntime("srt-mistral-7b-instruct-2", 1)}},
			svc:  isvc("mistral-7b-instruct"),
			want: "ClusterServingRuntime/srt-mistral-7b-instruct",
		},
		{
			name: "a namespaced runtime outranks a cluster runtime of higher priority",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral()},
				csrs: []*v1beta1.ClusterServingRuntime{seedRuntime("cluster-high", 100)},
				srs:  []*v1beta1.ServingRuntime{sr("team", "local-low", st("safetensors", "1", prio(1)))}},
			svc:     isvc("mistral-7b-instruct"),
			want:    "ServingRuntime/local-low",
			explain: []string{"ClusterServingRuntime/cluster-high: matches, but namespaced runtime ServingRuntime/local-low outranks cluster-scoped runtimes"},
		},
		{
			name: "a namespaced runtime of another namespace is not a candidate",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral()},
				csrs: []*v1beta1.ClusterServingRuntime{seedRuntime("cluster", 1)},
				srs:  []*v1beta1.ServingRuntime{sr("other", "elsewhere", st("safetensors", "1", prio(9)))}},
			svc:  isvc("mistral-7b-instruct"),
			want: "ClusterServingRuntime/cluster",
		},
		{
			name: "priority set beats priority unset",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral()}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("unset", st("safetensors", ""), created(10)), csr("set", st("safetensors", "", prio(1)))}},
			svc:     isvc("mistral-7b-instruct"),
			want:    "ClusterServingRuntime/set",
			explain: []string{"ClusterServingRuntime/unset: matches, but has no priority and ClusterServingRuntime/set has priority 1"},
		},
		{
			name: "closest size range wins among equal priorities",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral()}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("wide", st("safetensors", ""), sizes("1B", "100B")), csr("tight", st("safetensors", ""), sizes("6B", "8B")),
				csr("open", st("safetensors", ""), sizes("1B", "")), csr("none", st("safetensors", ""))}},
			svc:  isvc("mistral-7b-instruct"),
			want: "ClusterServingRuntime/tight",
			explain: []string{
				"ClusterServingRuntime/wide: matches, but its size range [1B, 100B] is less close to 7B than ClusterServingRuntime/tight's [6B, 8B]",
				"ClusterServingRuntime/none: matches, but its size range any size is less close to 7B than ClusterServingRuntime/tight's [6B, 8B]",
			},
		},
		{
			name: "newest creationTimestamp wins when all else is equal",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral()}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("b-old", st("safetensors", ""), created(1)), csr("a-new", st("safetensors", ""), created(2))}},
			svc:     isvc("mistral-7b-instruct"),
			want:    "ClusterServingRuntime/a-new",
			explain: []string{"ClusterServingRuntime/b-old: matches, but ClusterServingRuntime/a-new ranks equally and is newer"},
		},
		{
			name: "name settles a full tie",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral()}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("b", st("safetensors", "")), csr("a", st("safetensors", ""))}},
			svc:     isvc("mistral-7b-instruct"),
			want:    "ClusterServingRuntime/a",
			explain: []string{"ClusterServingRuntime/b: matches, but ClusterServingRuntime/a ranks equally and its name sorts first"},
		},
		{
			name: "one-sided size range with only min (a peer panics)",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral()}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("big-only", st("safetensors", ""), sizes("30B", "")), csr("small-only", st("safetensors", ""), sizes("", "10B"))}},
			svc:     isvc("mistral-7b-instruct"),
			want:    "ClusterServingRuntime/small-only",
			explain: []string{"ClusterServingRuntime/big-only: model size 7B is outside at least 30B"},
		},
		{
			name: "lower-case and K size suffixes (silently 0 in a peer)",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral(mSize("7b"))}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("tiny", st("safetensors", ""), sizes("100k", "900K")), csr("mid", st("safetensors", ""), sizes("5b", "9b"))}},
			svc:     isvc("mistral-7b-instruct"),
			want:    "ClusterServingRuntime/mid",
			explain: []string{"ClusterServingRuntime/tiny: model size 7B is outside [100K, 900K]"},
		},
		{
			name: "explanation line of the issue",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("llama-8b", mSize("8B"))}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("srt-llama-70b", st("safetensors", ""), sizes("60B", "80B")), csr("srt-llama-8b", st("safetensors", ""), sizes("7B", "9B"))}},
			svc:     isvc("llama-8b"),
			want:    "ClusterServingRuntime/srt-llama-8b",
			explain: []string{"ClusterServingRuntime/srt-llama-70b: model size 8B is outside [60B, 80B]"},
		},
		{
			name: "model 1.3 matches runtime version 1 (KServe compares strings)",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mFormat("sklearn", "1.3"))}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("sklearn", st("sklearn", "1"))}},
			svc:  isvc("m"),
			want: "ClusterServingRuntime/sklearn",
		},
		{
			name: "runtime 1 GreaterThanOrEqual model 1.0.0 (OME needs equal precision)",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("gte", st("safetensors", "1", formatOp(v1beta1.RuleOperatorGreaterThanOrEqual)))}},
			svc:  isvc("m"),
			want: "ClusterServingRuntime/gte",
		},
		{
			name: "KServe plain name/version format (deprecated fields)",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("iris", mFormat("sklearn", "1"))}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("kserve-sklearnserver", formats(v1beta1.SupportedModelFormat{Name: "sklearn", Version: ptr("1"), AutoSelect: ptr(true), Priority: ptr(int32(1))}))}},
			svc:  isvc("iris"),
			want: "ClusterServingRuntime/kserve-sklearnserver",
		},
		{
			name: "format names compare case-insensitively",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mFormat("ONNX", "1"))}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("onnx", st("onnx", "1"))}},
			svc:  isvc("m"),
			want: "ClusterServingRuntime/onnx",
		},
		{
			name: "architecture, framework and quantization must all match",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{mistral(mQuant("fp8"))}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("llama", st("safetensors", "", arch("LlamaForCausalLM"), quant("fp8"))),
				csr("plain", st("safetensors", "", arch("MistralForCausalLM"))),
				csr("old-tf", st("safetensors", "", framework("transformers", "4.30", ""), quant("fp8"))),
				csr("fp8", st("safetensors", "", arch("MistralForCausalLM"), framework("transformers", "4", ""), quant("fp8")))}},
			svc:  isvc("mistral-7b-instruct"),
			want: "ClusterServingRuntime/fp8",
			explain: []string{
				"ClusterServingRuntime/llama: supportedModelFormats[0]: architecture LlamaForCausalLM is not the model's MistralForCausalLM",
				"ClusterServingRuntime/plain: supportedModelFormats[0]: model is quantized fp8 but the entry serves unquantized models only",
				"ClusterServingRuntime/old-tf: supportedModelFormats[0]: framework transformers version 4.30 does not match the model's 4.36.2",
			},
		},
		{
			name: "an entry without autoSelect is not auto-selected",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("manual", st("safetensors", "", manual()))}},
			svc:     isvc("m"),
			wantErr: []string{"no runtime can serve ClusterBaseModel/m", "ClusterServingRuntime/manual: matches, but no matching supportedModelFormats entry has autoSelect: true"},
		},
		{
			name: "empty protocolVersions serves openAI only, not openInference-v2",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("openai-only", st("safetensors", "")),
				csr("v2", st("safetensors", ""), protocols(v1beta1.ProtocolOpenInferenceV2))}},
			svc:     isvc("m", withProtocol(v1beta1.ProtocolOpenInferenceV2)),
			want:    "ClusterServingRuntime/v2",
			explain: []string{"ClusterServingRuntime/openai-only: does not serve protocol openInference-v2 (serves openAI only: spec.protocolVersions is empty)"},
		},
		{
			name: "protocol defaults to openAI",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("v2", st("safetensors", "", prio(5)), protocols(v1beta1.ProtocolOpenInferenceV2)),
				csr("openai", st("safetensors", ""))}},
			svc:  isvc("m"),
			want: "ClusterServingRuntime/openai",
		},
		{
			name: "a disabled runtime is never auto-selected",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("off", st("safetensors", "", prio(9)), disabled()), csr("on", st("safetensors", ""))}},
			svc:     isvc("m"),
			want:    "ClusterServingRuntime/on",
			explain: []string{"ClusterServingRuntime/off: disabled (spec.disabled is true)"},
		},
		{
			name: "a disabled explicit runtime is an error",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("off", st("safetensors", ""), disabled())}},
			svc:     isvc("m", withRuntime("off", "")),
			wantErr: []string{"InferenceService team/svc: spec.runtime.name: ClusterServingRuntime/off cannot serve ClusterBaseModel/m", "disabled"},
		},
		{
			name: "an explicit runtime needs no autoSelect and any entry counts",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mFormat("onnx", "1"))}, csrs: []*v1beta1.ClusterServingRuntime{
				csr("multi", formats(format("safetensors", "1", manual()), format("onnx", "1", manual())))}},
			svc:  isvc("m", withRuntime("multi", "")),
			want: "ClusterServingRuntime/multi",
		},
		{
			name: "an explicit runtime: namespaced first, then cluster",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")},
				csrs: []*v1beta1.ClusterServingRuntime{csr("rt", st("safetensors", ""))},
				srs:  []*v1beta1.ServingRuntime{sr("team", "rt", st("safetensors", ""))}},
			svc:  isvc("m", withRuntime("rt", "")),
			want: "ServingRuntime/rt",
		},
		{
			name: "an explicit runtime kind restricts the lookup",
			objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")},
				csrs: []*v1beta1.ClusterServingRuntime{csr("rt", st("safetensors", ""))},
				srs:  []*v1beta1.ServingRuntime{sr("team", "rt", st("safetensors", ""))}},
			svc:  isvc("m", withRuntime("rt", KindClusterServingRuntime)),
			want: "ClusterServingRuntime/rt",
		},
		{
			name:    "an explicit runtime that does not exist",
			objs:    objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}},
			svc:     isvc("m", withRuntime("nope", "")),
			wantErr: []string{`spec.runtime.name: no ServingRuntime "nope" in namespace team and no ClusterServingRuntime "nope"`},
		},
		{
			name:    "an explicit runtime with the wrong protocol",
			objs:    objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{csr("rt", st("safetensors", ""))}},
			svc:     isvc("m", withRuntime("rt", ""), withProtocol(v1beta1.ProtocolOpenInferenceV2)),
			wantErr: []string{"does not serve protocol openInference-v2"},
		},
		{
			name:    "an explicit runtime with the wrong size",
			objs:    objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("70B"))}, csrs: []*v1beta1.ClusterServingRuntime{csr("rt", st("safetensors", ""), sizes("", "9B"))}},
			svc:     isvc("m", withRuntime("rt", "")),
			wantErr: []string{"model size 70B is outside at most 9B"},
		},
		{
			name:    "a runtime with an unparseable size is reported, not silently skipped",
			objs:    objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("7B"))}, csrs: []*v1beta1.ClusterServingRuntime{csr("bad", st("safetensors", ""), sizes("7GB", ""))}},
			svc:     isvc("m"),
			wantErr: []string{"ClusterServingRuntime/bad: spec.modelSizeRange.min: size \"7GB\" is not a number"},
		},
		{
			name:    "a runtime with an unparseable version is reported",
			objs:    objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{csr("bad", st("safetensors", "1.0.0-nightly"))}},
			svc:     isvc("m"),
			wantErr: []string{"ClusterServingRuntime/bad: spec.supportedModelFormats[0].modelFormat.version: version \"1.0.0-nightly\""},
		},
		{
			name:    "a model without size does not fit a sized runtime",
			objs:    objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{csr("sized", st("safetensors", ""), sizes("1B", "9B")), csr("any", st("safetensors", ""))}},
			svc:     isvc("m"),
			want:    "ClusterServingRuntime/any",
			explain: []string{"ClusterServingRuntime/sized: model declares no modelParameterSize but the runtime serves [1B, 9B]"},
		},
		{
			name:    "no runtime lists the format",
			objs:    objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mFormat("gguf", ""))}, csrs: []*v1beta1.ClusterServingRuntime{csr("st", st("safetensors", ""))}},
			svc:     isvc("m"),
			wantErr: []string{"no ServingRuntime in namespace team and no ClusterServingRuntime lists format gguf"},
		},
		{
			name:    "spec.model is required",
			objs:    objects{},
			svc:     isvc(""),
			wantErr: []string{"InferenceService team/svc: spec.model is required"},
		},
		{
			name: "BaseModel in the namespace before ClusterBaseModel",
			objs: objects{
				bms:  []*v1beta1.BaseModel{bm("team", "m", mFormat("onnx", "1"))},
				cbms: []*v1beta1.ClusterBaseModel{cbm("m")},
				csrs: []*v1beta1.ClusterServingRuntime{csr("onnx", st("onnx", "")), csr("st", st("safetensors", ""))}},
			svc:  isvc("m"),
			want: "ClusterServingRuntime/onnx",
		},
		{
			name:    "a missing model names both places it looked",
			objs:    objects{},
			svc:     isvc("ghost"),
			wantErr: []string{`spec.model.name: no BaseModel "ghost" in namespace team and no ClusterBaseModel "ghost"`},
		},
		{
			name:    "a model with an unparseable size",
			objs:    objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("seven"))}},
			svc:     isvc("m"),
			wantErr: []string{"ClusterBaseModel/m: spec.modelParameterSize"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := tt.objs.load()
			before := tt.svc.DeepCopy()
			d, err := x.Select(tt.svc)
			assert.Equal(t, before, tt.svc, "Select must not mutate its argument")
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				var se *Error
				require.True(t, errors.As(err, &se))
				for _, s := range tt.wantErr {
					assert.Contains(t, err.Error(), s)
				}
				assert.NotContains(t, err.Error(), "0xc0", "errors never print pointers")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.RuntimeRef())
			for _, l := range tt.explain {
				assert.Contains(t, d.Explanation, l)
			}
			assert.IsNonDecreasing(t, d.Explanation, "explanation is sorted")
		})
	}
}

// The same two runtimes in one scope with equal priorities and
// overlapping but not identical ranges: validation refuses the second; if it
// got in anyway (e.g. before the webhook ran), selection is still decided,
// by the closest range, and the same every time.
func TestEqualPrioritiesOverlappingRanges(t *testing.T) {
	a := csr("a", formats(format("safetensors", "1", prio(1))), sizes("5B", "9B"))
	b := csr("b", formats(format("safetensors", "1", prio(1))), sizes("6B", "20B"))
	x := objects{csrs: []*v1beta1.ClusterServingRuntime{a}, cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("7B"))}}.load()

	conflicts := x.PriorityConflicts(KindClusterServingRuntime, "", "b", &b.Spec)
	require.Len(t, conflicts, 1)
	assert.Contains(t, conflicts[0].Detail, "ClusterServingRuntime/b")
	assert.Contains(t, conflicts[0].Detail, "ClusterServingRuntime/a")

	x.UpsertClusterServingRuntime(b)
	for i := 0; i < 3; i++ {
		d, err := x.Select(isvc("m"))
		require.NoError(t, err)
		assert.Equal(t, "ClusterServingRuntime/a", d.RuntimeRef(), "[5B, 9B] is closer to 7B than [6B, 20B]")
	}
}

// A decision is pinned by the webhook; a newly created higher-priority
// runtime changes what Select would say now, but Resolve of the pinned
// decision keeps the old runtime, and Select itself is pure and repeatable.
func TestNewRuntimeAfterDecision(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{mistral()}, csrs: []*v1beta1.ClusterServingRuntime{seedRuntime("first", 1)}}.load()
	svc := isvc("mistral-7b-instruct")
	d1, err := x.Select(svc)
	require.NoError(t, err)
	d2, err := x.Select(svc)
	require.NoError(t, err)
	assert.Equal(t, d1, d2, "same index, same decision")
	require.Equal(t, "ClusterServingRuntime/first", d1.RuntimeRef())

	x.UpsertClusterServingRuntime(seedRuntime("newer-higher", 5, created(60)))
	pinned, err := x.Resolve(svc, d1.Runtime.Kind, d1.Runtime.Name, d1.AcceleratorClassName())
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/first", pinned.RuntimeRef(), "a pinned decision does not move")

	fresh, err := x.Select(svc)
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/newer-higher", fresh.RuntimeRef(), "only an explicit re-resolve sees the new runtime")

	x.DeleteClusterServingRuntime("first")
	_, err = x.Resolve(svc, d1.Runtime.Kind, d1.Runtime.Name, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pinned runtime ClusterServingRuntime/first no longer exists")
}

func TestResolveErrors(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")))},
		classes: []*v1beta1.AcceleratorClass{class("a100").Obj()}}.load()
	tests := []struct {
		name, kind, rt, class, wantErr string
	}{
		{"pinned class gone", KindClusterServingRuntime, "rt", "h100", `pinned AcceleratorClass "h100" no longer exists`},
		{"bad kind", "Deployment", "rt", "", `kind "Deployment" is not ServingRuntime or ClusterServingRuntime`},
		{"namespaced runtime gone", KindServingRuntime, "rt", "", "pinned runtime ServingRuntime/rt no longer exists"},
		{"all there", KindClusterServingRuntime, "rt", "a100", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := x.Resolve(isvc("m"), tt.kind, tt.rt, tt.class)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.class, d.AcceleratorClassName())
		})
	}
}

func TestIndexDeletesAndStats(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, bms: []*v1beta1.BaseModel{bm("team", "m2")},
		csrs:    []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")))},
		srs:     []*v1beta1.ServingRuntime{sr("team", "local", formats(format("safetensors", "")))},
		classes: []*v1beta1.AcceleratorClass{class("a100").Obj()}, nodes: []NodeInfo{gpuNode("n1", "a100", 8)}}.load()
	assert.Equal(t, Stats{Runtimes: 2, Classes: 1, Nodes: 1, Models: 2}, x.Stats())

	d, err := x.Select(isvc("m"))
	require.NoError(t, err)
	assert.Equal(t, "ServingRuntime/local", d.RuntimeRef())

	x.DeleteServingRuntime("team", "local")
	d, err = x.Select(isvc("m"))
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/rt", d.RuntimeRef())

	// Re-upserting a runtime with a different format moves it in the index.
	x.UpsertClusterServingRuntime(csr("rt", formats(format("onnx", ""))))
	_, err = x.Select(isvc("m"))
	require.Error(t, err)

	x.DeleteClusterServingRuntime("rt")
	x.DeleteBaseModel("team", "m2")
	x.DeleteClusterBaseModel("m")
	x.DeleteAcceleratorClass("a100")
	x.DeleteNode("n1")
	assert.Equal(t, Stats{}, x.Stats())
	assert.Empty(t, x.byFormat, "no empty buckets are left behind")
}

// Item 14 of issue 10: a named runtime with a size range does not deny a
// model that declares no size (OME skips the check); the decision warns,
// naming the missing field. Auto-selection still leaves such runtimes out:
// without a size their range cannot be ranked.
func TestNamedRuntimeAcceptsAModelWithoutSize(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")},
		csrs: []*v1beta1.ClusterServingRuntime{csr("sized", formats(format("safetensors", "")), sizes("1B", "9B"))}}.load()
	d, err := x.Select(isvc("m", withRuntime("sized", "")))
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/sized", d.RuntimeRef())
	assert.Contains(t, d.Warnings, "ClusterBaseModel/m declares no spec.modelParameterSize, so it was not checked against the size range [1B, 9B] of ClusterServingRuntime/sized")

	_, err = x.Select(isvc("m"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ClusterServingRuntime/sized: model declares no modelParameterSize but the runtime serves [1B, 9B]")

	// The other checks still apply to a named runtime.
	x.UpsertClusterServingRuntime(csr("sized", formats(format("safetensors", "")), sizes("1B", "9B"), protocols(v1beta1.ProtocolKServeV2)))
	_, err = x.Select(isvc("m", withRuntime("sized", "")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not serve protocol openAI")
}
