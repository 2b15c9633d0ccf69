package selection

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestErrorMessage(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("8B"))}, csrs: []*v1beta1.ClusterServingRuntime{
		csr("srt-llama-70b", formats(format("safetensors", "")), sizes("60B", "80B")),
		csr("srt-off", formats(format("safetensors", "")), disabled()),
		csr("srt-v2", formats(format("safetensors", "")), protocols(v1beta1.ProtocolOpenInferenceV2)),
	}}.load()
	_, err := x.Select(isvc("m"))
	require.Error(t, err)
	assert.Equal(t, `InferenceService team/svc: no runtime can serve ClusterBaseModel/m (format safetensors 1.0.0, size 8B, protocol openAI); fix one of these runtimes or name one in spec.runtime:
  - ClusterServingRuntime/srt-llama-70b: model size 8B is outside [60B, 80B]
  - ClusterServingRuntime/srt-off: disabled (spec.disabled is true)
  - ClusterServingRuntime/srt-v2: does not serve protocol openAI (serves openInference-v2)`, err.Error())
}

func TestDecisionWarnings(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mSize("7B"))}, csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(1, 0))},
		classes: []*v1beta1.AcceleratorClass{class("a100").Memory("80Gi").Obj()}, nodes: []NodeInfo{gpuNode("n", "a100", 8)}}.load()
	d, err := x.Select(isvc("m"))
	require.NoError(t, err)
	assert.Equal(t, []string{"runtime ClusterServingRuntime/rt was auto-selected for ClusterBaseModel/m"}, d.Warnings)
	assert.Equal(t, v1beta1.ProtocolOpenAI, d.Protocol)
	assert.Equal(t, Model{Kind: KindClusterBaseModel, Name: "m", Spec: cbm("m", mSize("7B")).Spec, Size: 7_000_000_000}, d.Model)
	assert.Equal(t, Runtime{Kind: KindClusterServingRuntime, Name: "rt", Spec: d.Runtime.Spec, AutoSelected: true}, d.Runtime)
	assert.True(t, d.AcceleratorAvailable)
}

func TestModelResolution(t *testing.T) {
	tests := []struct {
		name    string
		objs    objects
		ref     v1beta1.ModelRef
		want    string
		wantErr string
	}{
		{name: "kind BaseModel skips the cluster model", objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}},
			ref: v1beta1.ModelRef{Name: "m", Kind: ptr(KindBaseModel)}, wantErr: `spec.model.name: no BaseModel "m" in namespace team`},
		{name: "kind ClusterBaseModel skips the namespaced model", objs: objects{bms: []*v1beta1.BaseModel{bm("team", "m")}, cbms: []*v1beta1.ClusterBaseModel{cbm("m")}},
			ref: v1beta1.ModelRef{Name: "m", Kind: ptr(KindClusterBaseModel)}, want: "ClusterBaseModel/m"},
		{name: "a namespaced model of another namespace is invisible", objs: objects{bms: []*v1beta1.BaseModel{bm("other", "m")}},
			ref: v1beta1.ModelRef{Name: "m"}, wantErr: `no BaseModel "m" in namespace team and no ClusterBaseModel "m"`},
		{name: "a disabled model", objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", func(s *v1beta1.BaseModelSpec) { s.Disabled = ptr(true) })}},
			ref: v1beta1.ModelRef{Name: "m"}, wantErr: "ClusterBaseModel/m is disabled"},
		{name: "an unknown kind", objs: objects{}, ref: v1beta1.ModelRef{Name: "m", Kind: ptr("Model")}, wantErr: `spec.model.kind "Model" is not BaseModel or ClusterBaseModel`},
		{name: "a model without format name", objs: objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m", mFormat("", ""))}},
			ref: v1beta1.ModelRef{Name: "m"}, wantErr: "spec.modelFormat.name is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.objs.csrs = []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")))}
			x := tt.objs.load()
			svc := isvc("")
			svc.Spec.Model = &tt.ref
			d, err := x.Select(svc)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.Model.Ref())
		})
	}
}

// Informer handlers write while the webhook decides; run with -race.
func TestConcurrentUpdatesAndDecisions(t *testing.T) {
	x := objects{cbms: []*v1beta1.ClusterBaseModel{cbm("m")}, csrs: []*v1beta1.ClusterServingRuntime{csr("rt", formats(format("safetensors", "")), gpus(1, 0))},
		classes: []*v1beta1.AcceleratorClass{class("a100").Obj()}}.load()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			x.UpsertNode(gpuNode(fmt.Sprint("n", i%10), "a100", int64(i%9)))
			x.SetPodUsage(fmt.Sprint("p", i%7), fmt.Sprint("n", i%10), map[corev1.ResourceName]int64{"nvidia.com/gpu": int64(i % 3)})
			if i%5 == 0 {
				x.DeletePodUsage(fmt.Sprint("p", i%7))
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			x.UpsertClusterServingRuntime(csr(fmt.Sprint("rt", i%5), formats(format("safetensors", "", prio(int32(1+i%3)))), gpus(1, 0)))
			x.UpsertAcceleratorClass(class(fmt.Sprint("c", i%4)).Obj())
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			_, err := x.Select(isvc("m"))
			assert.NoError(t, err)
			// The nodeSelector cache is filled under the read lock.
			_, err = x.Select(isvc("m", withSelector(v1beta1.AcceleratorSelector{NodeSelector: map[string]string{"gpu": "a100"}})))
			assert.NoError(t, err)
		}
	}()
	wg.Wait()
	d, err := x.Select(isvc("m"))
	require.NoError(t, err)
	assert.NotNil(t, d.AcceleratorClass)
}
