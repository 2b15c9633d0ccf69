package deploy

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
)

const (
	sidecarRuntimesDir = "runtimes-sidecar"
	profilesDir        = "profiles"
)

func loadSidecarRuntimes(t *testing.T) []*v1beta1.ClusterServingRuntime {
	t.Helper()
	var out []*v1beta1.ClusterServingRuntime
	for _, m := range readManifests(t, sidecarRuntimesDir) {
		rt := &v1beta1.ClusterServingRuntime{}
		require.NoError(t, yaml.UnmarshalStrict(m.raw, rt), m.file)
		out = append(out, rt)
	}
	require.NotEmpty(t, out)
	return out
}

func loadProfiles(t *testing.T) map[string]*v1beta1.ClusterEngineRuntimeProfile {
	t.Helper()
	out := map[string]*v1beta1.ClusterEngineRuntimeProfile{}
	for _, m := range readManifests(t, profilesDir) {
		p := &v1beta1.ClusterEngineRuntimeProfile{}
		require.NoError(t, yaml.UnmarshalStrict(m.raw, p), m.file)
		out[p.Name] = p
	}
	require.NotEmpty(t, out)
	return out
}

// TestSidecarRuntimesAreTheirPDRuntimePlusTheSidecar: each runtime of
// deploy/runtimes-sidecar is its -pd-rt counterpart of deploy/runtimes
// (same images, args, router discovery, autoSelect false) with the
// sglang-pd-engine-runtime profile on the engine (prefill, with the
// bootstrap port its args use) and the decoder (decode).
func TestSidecarRuntimesAreTheirPDRuntimePlusTheSidecar(t *testing.T) {
	plain := map[string]*v1beta1.ClusterServingRuntime{}
	for _, rt := range loadRuntimes(t) {
		plain[rt.Name] = rt
	}
	profiles := loadProfiles(t)
	for _, rt := range loadSidecarRuntimes(t) {
		t.Run(rt.Name, func(t *testing.T) {
			base, ok := plain[strings.TrimSuffix(rt.Name, "-sidecar-rt")+"-rt"]
			require.True(t, ok, "no PD runtime %s in deploy/runtimes", strings.TrimSuffix(rt.Name, "-sidecar-rt")+"-rt")
			require.NotNil(t, rt.Spec.EngineConfig)
			require.NotNil(t, rt.Spec.DecoderConfig)
			want := map[string]string{
				"engine":  `--instance-info={"data":{"port":8080,"worker_type":"prefill","bootstrap_port":8998}}`,
				"decoder": `--instance-info={"data":{"port":8080,"worker_type":"decode"}}`,
			}
			for comp, refs := range map[string][]v1beta1.EngineRuntimeRef{"engine": rt.Spec.EngineConfig.EngineRuntimes, "decoder": rt.Spec.DecoderConfig.EngineRuntimes} {
				require.Len(t, refs, 1, comp)
				assert.Contains(t, profiles, refs[0].ProfileName, "%s names a profile deploy/profiles does not ship", comp)
				require.Len(t, refs[0].Containers, 1, comp)
				assert.Equal(t, []string{want[comp]}, refs[0].Containers[0].Args, comp)
			}
			assert.Contains(t, strings.Join(rt.Spec.EngineConfig.Runner.Args, " "), "--disaggregation-bootstrap-port 8998")
			for _, f := range rt.Spec.SupportedModelFormats {
				require.NotNil(t, f.AutoSelect)
				assert.False(t, *f.AutoSelect, "a sidecar runtime is chosen by name only")
			}
			stripped := rt.DeepCopy()
			stripped.Name = base.Name
			stripped.Spec.EngineConfig.EngineRuntimes = nil
			stripped.Spec.DecoderConfig.EngineRuntimes = nil
			assert.Equal(t, base.Spec, stripped.Spec, "differs from %s in more than the sidecar", base.Name)
		})
	}
}

// TestSidecarKustomizationInstallsProfilesAndEveryRuntime: `kubectl apply
// -k deploy/runtimes-sidecar` installs the profiles and every file of the
// folder.
func TestSidecarKustomizationInstallsProfilesAndEveryRuntime(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(sidecarRuntimesDir, "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	require.NoError(t, yaml.UnmarshalStrict(data, &k))
	require.NotEmpty(t, k.Resources)
	assert.Equal(t, "../"+profilesDir, k.Resources[0], "the profiles come first")
	paths, err := filepath.Glob(filepath.Join(sidecarRuntimesDir, "*.yaml"))
	require.NoError(t, err)
	var files []string
	for _, p := range paths {
		if b := filepath.Base(p); b != "kustomization.yaml" {
			files = append(files, b)
		}
	}
	res := append([]string(nil), k.Resources[1:]...)
	sort.Strings(res)
	assert.Equal(t, files, res)
}

// TestSidecarRuntimesNeverWinAutoSelection: installed next to every other
// out-of-box runtime they tie with none, pass the webhook's runtime checks,
// auto-selection still picks the plain runtime, and naming a sidecar
// runtime selects it.
func TestSidecarRuntimesNeverWinAutoSelection(t *testing.T) {
	x, _ := runtimeIndex(t)
	shippedClassIndex(t, x)
	sidecars := loadSidecarRuntimes(t)
	for _, rt := range sidecars {
		x.UpsertClusterServingRuntime(rt)
	}
	for _, rt := range sidecars {
		t.Run(rt.Name, func(t *testing.T) {
			errs, _ := selection.ValidateRuntimeSpec(field.NewPath("spec"), &rt.Spec)
			assert.Empty(t, errs)
			assert.Empty(t, x.PriorityConflicts(selection.KindClusterServingRuntime, "", rt.Name, &rt.Spec))
		})
	}
	bm := &v1beta1.ClusterBaseModel{
		ObjectMeta: metav1.ObjectMeta{Name: "llama-3-2-1b"},
		Spec: v1beta1.BaseModelSpec{
			ModelFormat:        v1beta1.ModelFormat{Name: "safetensors", Version: ptrTo("1.0.0")},
			ModelFramework:     &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: ptrTo("4.47.0")},
			ModelArchitecture:  ptrTo("LlamaForCausalLM"),
			ModelParameterSize: ptrTo("1.24B"),
		},
	}
	x.UpsertClusterBaseModel(bm)
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "team-a"},
		Spec:       v1beta1.InferenceServiceSpec{Model: &v1beta1.ModelRef{Name: bm.Name}},
	}
	d, err := x.Select(isvc)
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/srt-llama-3-2-1b-instruct-rt", d.RuntimeRef())
	isvc.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: "srt-llama-3-2-1b-instruct-pd-sidecar-rt"}
	d, err = x.Select(isvc)
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/srt-llama-3-2-1b-instruct-pd-sidecar-rt", d.RuntimeRef())
}

// TestSidecarRuntimesComposePods: with the shipped profiles, the engine
// and decoder pods get the sidecar container (its port, the worker type
// and the LoRA volume) and the router pod does not.
func TestSidecarRuntimesComposePods(t *testing.T) {
	profiles := loadProfiles(t)
	svc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "team-a"},
		Spec:       v1beta1.InferenceServiceSpec{Engine: &v1beta1.EngineSpec{}, Decoder: &v1beta1.DecoderSpec{}, Router: &v1beta1.RouterSpec{}},
	}
	for _, rt := range loadSidecarRuntimes(t) {
		t.Run(rt.Name, func(t *testing.T) {
			for comp, workerType := range map[string]string{v1beta1.ComponentEngine: "prefill", v1beta1.ComponentDecoder: "decode", v1beta1.ComponentRouter: ""} {
				in := merge.Input{Service: svc, Component: comp, RuntimeKind: "ClusterServingRuntime", RuntimeName: rt.Name,
					Runtime: &rt.Spec, Profiles: profiles}
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a", Labels: map[string]string{v1beta1.LabelInferenceService: "chat"}}}
				require.NoError(t, merge.ComposePod(in, pod), comp)
				var sidecar *corev1.Container
				for i := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
					c := &append(pod.Spec.InitContainers, pod.Spec.Containers...)[i]
					if c.Name == "engine-runtime" {
						sidecar = c
					}
				}
				if workerType == "" {
					assert.Nil(t, sidecar, "the router gets no sidecar")
					continue
				}
				require.NotNil(t, sidecar, comp)
				assert.Contains(t, strings.Join(sidecar.Args, " "), `"worker_type":"`+workerType+`"`, comp)
				assert.Equal(t, "ghcr.io/berthdev/berth-engine-sidecar:0.1.0", sidecar.Image)
				var vols []string
				for _, v := range pod.Spec.Volumes {
					vols = append(vols, v.Name)
				}
				assert.Contains(t, vols, "berth-lora-adapters", comp)
			}
		})
	}
}
