package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
)

const (
	runtimesDir     = "runtimes"
	acceleratorsDir = "accelerators"
	seedsDir        = "../api/v1beta1/testdata/seeds"
)

// newTyped returns an empty Go object for an ome.io kind.
func newTyped(kind string) (any, bool) {
	switch kind {
	case "ServingRuntime":
		return &v1beta1.ServingRuntime{}, true
	case "ClusterServingRuntime":
		return &v1beta1.ClusterServingRuntime{}, true
	case "InferenceService":
		return &v1beta1.InferenceService{}, true
	case "AcceleratorClass":
		return &v1beta1.AcceleratorClass{}, true
	case "BaseModel":
		return &v1beta1.BaseModel{}, true
	case "ClusterBaseModel":
		return &v1beta1.ClusterBaseModel{}, true
	case "ClusterEngineRuntimeProfile":
		return &v1beta1.ClusterEngineRuntimeProfile{}, true
	}
	return nil, false
}

// TestManifestsDecodeStrictly: every out-of-box object decodes into its Go
// type with unknown and duplicate fields as errors, is of the kind its
// folder holds, and is named after its file.
func TestManifestsDecodeStrictly(t *testing.T) {
	for dir, kind := range map[string]string{runtimesDir: "ClusterServingRuntime", sidecarRuntimesDir: "ClusterServingRuntime", profilesDir: "ClusterEngineRuntimeProfile", acceleratorsDir: "AcceleratorClass"} {
		ms := readManifests(t, dir)
		require.NotEmpty(t, ms, dir)
		for _, m := range ms {
			t.Run(m.String(), func(t *testing.T) {
				assert.Equal(t, "ome.io/v1beta1", m.obj["apiVersion"])
				require.Equal(t, kind, m.kind())
				typed, _ := newTyped(kind)
				require.NoError(t, yaml.UnmarshalStrict(m.raw, typed))
				assert.Equal(t, strings.TrimSuffix(filepath.Base(m.file), ".yaml"), m.name(), "file and object names differ")
			})
		}
	}
}

// TestStrictDecodingRejectsUnknownAndDuplicateFields shows the decoder used
// above is strict, so the test above can fail.
func TestStrictDecodingRejectsUnknownAndDuplicateFields(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown field", "apiVersion: ome.io/v1beta1\nkind: AcceleratorClass\nmetadata: {name: x}\nspec: {vendr: nvidia}\n", `unknown field "vendr"`},
		{"duplicate field", "apiVersion: ome.io/v1beta1\nkind: AcceleratorClass\nmetadata: {name: x}\nspec: {vendor: a, vendor: b}\n", `"vendor" already set`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := yaml.UnmarshalStrict([]byte(tc.doc), &v1beta1.AcceleratorClass{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestKustomizationsListEveryFile: `kubectl apply -k` installs exactly the
// files in the folder.
func TestKustomizationsListEveryFile(t *testing.T) {
	for _, dir := range []string{runtimesDir, acceleratorsDir} {
		t.Run(dir, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
			require.NoError(t, err)
			var k struct {
				APIVersion string   `json:"apiVersion"`
				Kind       string   `json:"kind"`
				Resources  []string `json:"resources"`
			}
			require.NoError(t, yaml.UnmarshalStrict(data, &k))
			assert.Equal(t, "Kustomization", k.Kind)
			paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
			require.NoError(t, err)
			var files []string
			for _, p := range paths {
				if b := filepath.Base(p); b != "kustomization.yaml" {
					files = append(files, b)
				}
			}
			res := slices.Clone(k.Resources)
			sort.Strings(res)
			assert.Equal(t, files, res)
		})
	}
}

// knownInvalidSeeds are seed examples the CRDs reject on purpose, with the
// message the user gets.
var knownInvalidSeeds = map[string]string{
	// (The OEP's tier classes, with "Gte 32Gi" and "Lt 24Gi", pass the CRD:
	// the validating webhook denies them naming the exact field, the value
	// and the rewrite, which a CEL rule could not; see
	// TestSeedBaseSetIsDeniedWithTheRewrite.)
	// A quantity in the schema is an integer or a string: the OEP's unquoted
	// fp32TFLOPS 47.9 is a YAML float, so it must be written "47.9".
	"002-examples-amd-mi250x.yaml": "spec.capabilities.performance.fp32TFLOPS in body must be of type integer,string",
}

// TestManifestsPassCRDSchemaAndCEL: every out-of-box object and every seed
// example is accepted by its CRD's OpenAPI schema and CEL rules, except the
// seed examples listed in knownInvalidSeeds, which fail with their message.
func TestManifestsPassCRDSchemaAndCEL(t *testing.T) {
	validators := loadValidators(t)
	var all []manifest
	for _, dir := range []string{runtimesDir, sidecarRuntimesDir, profilesDir, acceleratorsDir, seedsDir} {
		ms := readManifests(t, dir)
		require.NotEmpty(t, ms, dir)
		all = append(all, ms...)
	}
	seenInvalid := map[string]bool{}
	for _, m := range all {
		t.Run(m.String(), func(t *testing.T) {
			v, ok := validators[m.kind()]
			require.True(t, ok, "no CRD for kind %q", m.kind())
			errs := v.validate(deepCopyJSON(t, m.obj))
			if want, bad := knownInvalidSeeds[filepath.Base(m.file)]; bad && strings.HasPrefix(m.file, seedsDir) {
				seenInvalid[filepath.Base(m.file)] = true
				require.NotEmpty(t, errs, "expected the CRD to reject this seed example")
				assert.Contains(t, errorsText(errs), want)
				return
			}
			assert.Empty(t, errorsText(errs))
		})
	}
	for f := range knownInvalidSeeds {
		assert.True(t, seenInvalid[f], "knownInvalidSeeds names %s, which is not in %s", f, seedsDir)
	}
}

// TestCRDsRejectInvalidObjects: negative cases per rule, checked by the text
// the user sees.
func TestCRDsRejectInvalidObjects(t *testing.T) {
	validators := loadValidators(t)
	base := func(file string) map[string]any {
		ms := readManifests(t, filepath.Dir(file))
		for _, m := range ms {
			if m.file == file {
				return deepCopyJSON(t, m.obj)
			}
		}
		t.Fatalf("no manifest %s", file)
		return nil
	}
	const (
		rt    = runtimesDir + "/srt-mistral-7b-instruct-rt.yaml"
		rtPD  = runtimesDir + "/srt-mistral-7b-instruct-pd-rt.yaml"
		ac    = acceleratorsDir + "/medium-gpu.yaml"
		acSel = acceleratorsDir + "/nvidia-h100-80gb.yaml"
		isvc  = seedsDir + "/002-story5-llama-7b-with-router.yaml"
		isvcC = seedsDir + "/002-story6-cost-sensitive-deployment.yaml"
		sr    = seedsDir + "/002-story6-sglang-cost-optimized.yaml"
		prof  = seedsDir + "/004-sglang-pd-runtime.yaml"
		kserv = seedsDir + "/001-priority-mlserver-two-versions.yaml"
	)
	cases := []struct {
		name string
		file string
		path string
		val  any
		want string
	}{
		{"priority 0", rt, "spec.supportedModelFormats.0.priority", int64(0), "spec.supportedModelFormats[0].priority: Invalid value: 0: spec.supportedModelFormats[0].priority in body should be greater than or equal to 1"},
		{"negative minReplicas", rt, "spec.engineConfig.minReplicas", int64(-1), "spec.engineConfig.minReplicas in body should be greater than or equal to 0"},
		{"min > max replicas in engine", rt, "spec.engineConfig.minReplicas", int64(4), "spec.engineConfig: Invalid value: minReplicas must not be greater than maxReplicas"},
		{"maxReplicas 0 means unbounded", rtPD, "spec.decoderConfig.maxReplicas", int64(0), ""},
		{"min > max replicas in router", rtPD, "spec.routerConfig.minReplicas", int64(3), "spec.routerConfig: Invalid value: minReplicas must not be greater than maxReplicas"},
		{"min > max replicas in InferenceService engine", seedsDir + "/000-isvc-explicit-runtime.yaml", "spec.engine.minReplicas", int64(2), "spec.engine: Invalid value: minReplicas must not be greater than maxReplicas"},
		{"unknown protocol", rt, "spec.protocolVersions.0", "grpc", `spec.protocolVersions[0]: Unsupported value: "grpc"`},
		{"unknown InferenceService protocol", isvc, "spec.protocolVersion", "openai", `spec.protocolVersion: Unsupported value: "openai"`},
		{"bad strategy", isvcC, "spec.acceleratorSelector.strategy", "fastest", `spec.acceleratorSelector.strategy: Unsupported value: "fastest": supported values: "performance", "cost", "balanced"`},
		{"bad scale metric", rt, "spec.engineConfig.scaleMetric", "gpu", `spec.engineConfig.scaleMetric: Unsupported value: "gpu"`},
		{"bad version", rt, "spec.supportedModelFormats.0.modelFramework.version", "4.x", `spec.supportedModelFormats[0].modelFramework.version in body should match`},
		{"version with four parts", kserv, "spec.supportedModelFormats.1.version", "1.0.0.1", `spec.supportedModelFormats[1].version in body should match`},
		{"PEP 440 dev release", rt, "spec.supportedModelFormats.0.modelFramework.version", "4.45.0.dev0", ""},
		{"PEP 440 pre, post and local", rt, "spec.supportedModelFormats.0.modelFramework.version", "2.1.0rc1.post2+cu121", ""},
		{"a word where a suffix goes", rt, "spec.supportedModelFormats.0.modelFramework.version", "4.45.0.nightly", `spec.supportedModelFormats[0].modelFramework.version in body should match`},
		{"bad operator", rt, "spec.supportedModelFormats.0.modelFramework.operator", "Newer", `Unsupported value: "Newer"`},
		{"bad size", rt, "spec.modelSizeRange.max", "9 GB", `spec.modelSizeRange.max in body should match`},
		{"bad size unit", rt, "spec.modelSizeRange.min", "5G", `spec.modelSizeRange.min in body should match`},
		{"format without a name", kserv, "spec.supportedModelFormats.0.name", deleteField, "set modelFormat.name (or the deprecated name)"},
		{"score 101", sr, "spec.acceleratorRequirements.preferenceOrder.0.score", int64(101), "spec.acceleratorRequirements.preferenceOrder[0].score in body should be less than or equal to 100"},
		{"score -1", sr, "spec.acceleratorRequirements.preferenceOrder.0.score", int64(-1), "should be greater than or equal to 0"},
		{"bad preference condition", sr, "spec.acceleratorRequirements.preferenceOrder.0.conditions.0.modelSize", "about 30B", "modelSize in body should match"},
		{"class without discovery", acSel, "spec.discovery", deleteField, "set discovery.nodeSelector or discovery.nodeSelectorTerms so berth can find the nodes of this class"},
		// The webhook denies it with the exact path (selection.ValidateDiscovery).
		{"Gte operator passes the CRD", ac, "spec.discovery.nodeSelectorTerms.0.matchExpressions.0.operator", "Gte", ""},
		{"four discovery terms", ac, "spec.discovery.nodeSelectorTerms", []any{map[string]any{}, map[string]any{}, map[string]any{}, map[string]any{}}, "spec.discovery.nodeSelectorTerms: Too many: 4: must have at most 3 items"},
		{"bad compute capability", acSel, "spec.capabilities.computeCapability", "sm_90", "spec.capabilities.computeCapability in body should match"},
		{"bad cost tier", acSel, "spec.cost.tier", "premium", `spec.cost.tier: Unsupported value: "premium"`},
		{"empty resource name", acSel, "spec.resources.0.name", "", "spec.resources[0].name in body should be at least 1 chars long"},
		{"decoder without engine", seedsDir + "/002-story1-new-llama-7b.yaml", "spec.decoder", map[string]any{"minReplicas": int64(1)}, "decoder needs engine"},
		{"bad model kind", isvc, "spec.model.kind", "Model", `spec.model.kind: Unsupported value: "Model"`},
		{"empty accelerator class selector", isvc, "spec.engine.acceleratorConfigurations.0.selector.acceleratorClass", "", "acceleratorClass in body should be at least 1 chars long"},
		{"bad profile update strategy", prof, "spec.updateStrategy", "Sometimes", `spec.updateStrategy: Unsupported value: "Sometimes"`},
		{"negative worker size", runtimesDir + "/srt-deepseek-rdma-rt.yaml", "spec.engineConfig.worker.size", int64(-1), "spec.engineConfig.worker.size in body should be greater than or equal to 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := base(tc.file)
			require.NoError(t, setPath(obj, tc.path, tc.val))
			kind, _ := obj["kind"].(string)
			errs := validators[kind].validate(obj)
			if tc.want == "" {
				assert.Empty(t, errorsText(errs))
				return
			}
			require.NotEmpty(t, errs, "expected %s to be rejected", tc.path)
			assert.Contains(t, errorsText(errs), tc.want)
		})
	}
}

// deleteField as a value makes setPath remove the field.
var deleteField = &struct{ delete bool }{true}

// setPath sets (or deletes) the value at a dotted path such as
// spec.formats.0.name; numeric parts index lists.
func setPath(obj map[string]any, path string, val any) error {
	parts := strings.Split(path, ".")
	var cur any = obj
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if val == deleteField {
					delete(c, p)
				} else {
					c[p] = val
				}
				return nil
			}
			next, ok := c[p]
			if !ok {
				next = map[string]any{}
				c[p] = next
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(c) {
				return fmt.Errorf("%s: no list item %q", path, p)
			}
			if last {
				c[n] = val
				return nil
			}
			cur = c[n]
		default:
			return fmt.Errorf("%s: %q is not an object or list", path, p)
		}
	}
	return nil
}

// TestCRDRulesFitTheCostBudget compiles every CEL rule of every CRD the way
// the apiserver does on create, with its per-rule and per-CRD cost limits.
// The last case adds a deliberately expensive rule to show the check bites.
func TestCRDRulesFitTheCostBudget(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(crdDir, "ome.io_*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			crd, err := readCRD(p)
			require.NoError(t, err)
			assert.Empty(t, errorsText(validateCRDDefinition(crd)))
		})
	}
	t.Run("an over-budget rule is rejected", func(t *testing.T) {
		crd, err := readCRD(filepath.Join(crdDir, "ome.io_acceleratorclasses.yaml"))
		require.NoError(t, err)
		discovery := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["discovery"]
		discovery.XValidations = append(discovery.XValidations, apiextensionsv1.ValidationRule{
			Rule: "self.nodeSelectorTerms.all(a, a.matchExpressions.all(x, x.values.all(v, " +
				"self.nodeSelectorTerms.all(b, b.matchExpressions.all(y, y.values.all(w, v.matches(w)))))))",
			Message: "too expensive",
		})
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["discovery"] = discovery
		assert.Contains(t, errorsText(validateCRDDefinition(crd)), "cost")
	})
}

// fleet is the shared kwok fleet contract (design page, "Shared fleet/label
// contract"): node labels per pool.
var fleet = map[string]map[string]string{
	"h100":      nvidiaLabels("NVIDIA-H100-80GB-HBM3", "81559", "9", "0", "hopper"),
	"a100-40gb": nvidiaLabels("NVIDIA-A100-SXM4-40GB", "40960", "8", "0", "ampere"),
	// Not in the kwok fleet: the PCIe A100 of seed 002's alternative
	// discovery pattern, which nvidia-a100-40gb must discover too.
	"a100-40gb-pcie": nvidiaLabels("NVIDIA-A100-PCIE-40GB", "40960", "8", "0", "ampere"),
	"a100-80gb":      nvidiaLabels("NVIDIA-A100-SXM4-80GB", "81920", "8", "0", "ampere"),
	"h200":           nvidiaLabels("NVIDIA-H200", "143771", "9", "0", "hopper"),
	"b200":           nvidiaLabels("NVIDIA-B200", "183359", "10", "0", "blackwell"),
	"mi250x":         {"amd.com/gpu.product": "MI250X", "gpu.amd.com/model": "mi250x", "amd.com/gpu.family": "cdna2"},
	"intel-max":      {"gpu.intel.com/product": "max-1550"},
	"cpu":            {"node-type": "cpu-only", "instance-type": "spot"},
}

func nvidiaLabels(product, memory, major, minor, family string) map[string]string {
	return map[string]string{
		"nvidia.com/gpu.product":       product,
		"nvidia.com/gpu.memory":        memory,
		"nvidia.com/gpu.compute.major": major,
		"nvidia.com/gpu.compute.minor": minor,
		"nvidia.com/gpu.count":         "8",
		"nvidia.com/gpu.family":        family,
	}
}

// discoveryMatches evaluates a class's discovery on node labels by the
// rule of docs/design-rules.md, with Kubernetes' own label selectors: the
// nodeSelector pattern (discovery.nodeSelector and the spec.nodeSelector
// shorthand, ANDed) and each nodeSelectorTerm are alternatives (ORed).
func discoveryMatches(spec v1beta1.AcceleratorClassSpec, nodeLabels map[string]string) (bool, error) {
	set := labels.Set(nodeLabels)
	pattern := labels.Set{}
	for _, sel := range []map[string]string{spec.Discovery.NodeSelector, spec.NodeSelector} {
		for k, v := range sel {
			if w, ok := pattern[k]; ok && w != v {
				return false, fmt.Errorf("key %s has two values, %q and %q", k, w, v)
			}
			pattern[k] = v
		}
	}
	if len(pattern) > 0 && labels.SelectorFromSet(pattern).Matches(set) {
		return true, nil
	}
	ops := map[corev1.NodeSelectorOperator]selection.Operator{
		corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
		corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
		corev1.NodeSelectorOpGt: selection.GreaterThan, corev1.NodeSelectorOpLt: selection.LessThan,
	}
	for _, term := range spec.Discovery.NodeSelectorTerms {
		sel := labels.NewSelector()
		for _, e := range term.MatchExpressions {
			op, ok := ops[e.Operator]
			if !ok {
				return false, fmt.Errorf("operator %q is not a node-affinity operator", e.Operator)
			}
			r, err := labels.NewRequirement(e.Key, op, e.Values)
			if err != nil {
				return false, err
			}
			sel = sel.Add(*r)
		}
		if sel.Matches(set) {
			return true, nil
		}
	}
	return false, nil
}

// TestAcceleratorClassesDiscoverTheFleet: each class's discovery selects
// exactly the pools of the shared fleet contract it stands for.
func TestAcceleratorClassesDiscoverTheFleet(t *testing.T) {
	want := map[string][]string{
		"nvidia-a100-40gb":  {"a100-40gb", "a100-40gb-pcie"},
		"nvidia-a100-80gb":  {"a100-80gb"},
		"nvidia-h100-80gb":  {"h100"},
		"nvidia-h200-141gb": {"h200"},
		"nvidia-b200-180gb": {"b200"},
		"amd-mi250x":        {"mi250x"},
		"intel-max-1550":    {"intel-max"},
		"small-gpu":         nil, // the fleet has no GPU under 24 GiB
		"medium-gpu":        {"a100-40gb", "a100-40gb-pcie"},
		"large-gpu":         {"a100-80gb", "b200", "h100", "h200"},
	}
	ms := readManifests(t, acceleratorsDir)
	got := map[string][]string{}
	for _, m := range ms {
		var ac v1beta1.AcceleratorClass
		require.NoError(t, yaml.UnmarshalStrict(m.raw, &ac), m.file)
		got[ac.Name] = nil
		for pool, nodeLabels := range fleet {
			ok, err := discoveryMatches(ac.Spec, nodeLabels)
			require.NoError(t, err, ac.Name)
			if ok {
				got[ac.Name] = append(got[ac.Name], pool)
			}
		}
		sort.Strings(got[ac.Name])
	}
	assert.Equal(t, want, got)
}

// TestAcceleratorClassesDescribeTheirHardware: the capability figures are
// present and consistent with the fleet (GPU memory label in MiB vs memoryGB,
// compute capability labels vs computeCapability), and resources name the
// vendor's device-plugin resource.
func TestAcceleratorClassesDescribeTheirHardware(t *testing.T) {
	resourceOf := map[string]string{"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel": "gpu.intel.com/i915"}
	poolOf := map[string]string{
		"nvidia-a100-40gb": "a100-40gb", "nvidia-a100-80gb": "a100-80gb", "nvidia-h100-80gb": "h100",
		"nvidia-h200-141gb": "h200", "nvidia-b200-180gb": "b200",
	}
	for _, m := range readManifests(t, acceleratorsDir) {
		var ac v1beta1.AcceleratorClass
		require.NoError(t, yaml.UnmarshalStrict(m.raw, &ac), m.file)
		t.Run(ac.Name, func(t *testing.T) {
			c := ac.Spec.Capabilities
			require.NotNil(t, c.MemoryGB)
			require.NotEmpty(t, ac.Spec.Resources)
			assert.Equal(t, resourceOf[ac.Spec.Vendor], ac.Spec.Resources[0].Name)
			require.NotNil(t, ac.Spec.Cost)
			assert.NotEmpty(t, ac.Spec.Cost.Tier)
			pool, specific := poolOf[ac.Name]
			if !specific {
				return
			}
			require.NotNil(t, c.Performance)
			assert.NotNil(t, c.Performance.FP16TFLOPS)
			require.NotNil(t, c.MemoryBandwidthGBps)
			require.NotNil(t, ac.Spec.Cost.PerHour)
			// nvidia.com/gpu.memory is the usable MiB, a little under the
			// marketed size: within 5 % of memoryGB.
			mib, err := strconv.ParseInt(fleet[pool]["nvidia.com/gpu.memory"], 10, 64)
			require.NoError(t, err)
			ratio := float64(mib*1024*1024) / float64(c.MemoryGB.Value())
			assert.InDelta(t, 1.0, ratio, 0.05, "memoryGB %s vs node label %d MiB", c.MemoryGB.String(), mib)
			assert.Equal(t, fleet[pool]["nvidia.com/gpu.compute.major"]+"."+fleet[pool]["nvidia.com/gpu.compute.minor"], c.ComputeCapability)
			assert.Equal(t, fleet[pool]["nvidia.com/gpu.family"], ac.Spec.Family)
		})
	}
}
