package wrappers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestMakeAcceleratorClass(t *testing.T) {
	got := MakeAcceleratorClass("h100").Vendor("nvidia").Family("hopper").Model("h100").
		NodeSelector("gpu", "h100").ResourceQuantity("nvidia.com/gpu", "1").
		Memory("80Gi").ComputeCapability("9.0").Features("fp8").FP16TFLOPS("989").FP8TFLOPS("1979").
		PerHour("4.00").KueueFlavor("h100-flavor").AutoDiscovered().Generation(3).
		Condition("Ready", metav1.ConditionTrue, "NodesReady").Obj()
	want := &v1beta1.AcceleratorClass{
		ObjectMeta: metav1.ObjectMeta{Name: "h100", Generation: 3, Labels: map[string]string{v1beta1.LabelAutoDiscovered: "true"}},
		Spec: v1beta1.AcceleratorClassSpec{Vendor: "nvidia", Family: "hopper", Model: "h100",
			Discovery: v1beta1.AcceleratorDiscovery{NodeSelector: map[string]string{"gpu": "h100"}},
			Capabilities: v1beta1.AcceleratorCapabilities{MemoryGB: quantity("80Gi"), ComputeCapability: "9.0", Features: []string{"fp8"},
				Performance: &v1beta1.AcceleratorPerformance{FP16TFLOPS: quantity("989"), FP8TFLOPS: quantity("1979")}},
			Resources:   []v1beta1.AcceleratorResource{{Name: "nvidia.com/gpu", Quantity: resource.MustParse("1")}},
			Cost:        &v1beta1.AcceleratorCost{PerHour: quantity("4.00")},
			Integration: &v1beta1.AcceleratorIntegration{KueueResourceFlavor: "h100-flavor"}},
		Status: v1beta1.AcceleratorClassStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "NodesReady"}}},
	}
	assert.Equal(t, want, got)
	assert.Equal(t, &v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}, MakeAcceleratorClass("bare").Obj(),
		"MakeAcceleratorClass sets the name only")
}

// Obj copies: changing what one call returned changes neither the wrapper
// nor the next object.
func TestObjIsACopy(t *testing.T) {
	w := MakeAcceleratorClass("c").NodeSelector("k", "v")
	first := w.Obj()
	first.Spec.Discovery.NodeSelector["k"] = "changed"
	assert.Equal(t, "v", w.Obj().Spec.Discovery.NodeSelector["k"])

	n := MakeNode("n").GPUs("nvidia.com/gpu", 8)
	n.Obj().Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("1")
	assert.True(t, n.Obj().Status.Allocatable["nvidia.com/gpu"].Equal(resource.MustParse("8")))
}

func TestMakeRuntimes(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gpu := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(2, resource.DecimalSI)}
	spec := v1beta1.ServingRuntimeSpec{
		SupportedModelFormats: []v1beta1.SupportedModelFormat{{ModelFormat: &v1beta1.ModelFormat{Name: "safetensors", Version: ptr("1.0.0")}, AutoSelect: ptr(true), Priority: ptr(int32(2))}},
		ProtocolVersions:      []v1beta1.ProtocolVersion{"openAI"},
		ModelSizeRange:        &v1beta1.ModelSizeRangeSpec{Max: ptr("70B")},
		EngineConfig: &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Image: "engine:v1", Resources: corev1.ResourceRequirements{Requests: gpu, Limits: gpu}},
			Worker: &v1beta1.WorkerSpec{Size: ptr(int32(1))}},
		AcceleratorConfigurations: []v1beta1.AcceleratorConfiguration{{Selector: v1beta1.AcceleratorConfigSelector{AcceleratorClass: "h100"}, Runner: &v1beta1.RunnerSpec{Image: "engine:h100"}}},
	}
	csr := MakeClusterServingRuntime("rt").Label("a", "b").Created(at).Formats(AutoSelect("safetensors", "1.0.0", 2)).
		Protocols("openAI").SizeRange("", "70B").Image("engine:v1").GPUs(2).Workers(1).ClassImage("h100", "engine:h100").Obj()
	assert.Equal(t, &v1beta1.ClusterServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "rt", Labels: map[string]string{"a": "b"}, CreationTimestamp: metav1.NewTime(at)}, Spec: spec}, csr)

	sr := MakeServingRuntime("ns", "rt").Disabled().Obj()
	assert.Equal(t, &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rt"}, Spec: v1beta1.ServingRuntimeSpec{Disabled: ptr(true)}}, sr)
}

func TestMakeInferenceService(t *testing.T) {
	gpu := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(4, resource.DecimalSI)}
	got := MakeInferenceService("team", "svc").Label("app", "x").Annotation("k", "v").Model("m").RuntimeKind("ServingRuntime", "rt").
		Classes("h100").Replicas(2).EngineGPUs(4).Obj()
	want := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "svc", Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"k": "v"}},
		Spec: v1beta1.InferenceServiceSpec{Model: &v1beta1.ModelRef{Name: "m"}, Runtime: &v1beta1.ServingRuntimeRef{Name: "rt", Kind: ptr("ServingRuntime")},
			AcceleratorSelector: &v1beta1.AcceleratorSelector{PreferredClasses: []string{"h100"}},
			Engine:              &v1beta1.EngineSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{Replicas: ptr(int32(2))}, Runner: &v1beta1.RunnerSpec{Resources: corev1.ResourceRequirements{Requests: gpu, Limits: gpu}}}}}
	assert.Equal(t, want, got)
}

func TestMakeModels(t *testing.T) {
	spec := v1beta1.BaseModelSpec{ModelFormat: v1beta1.ModelFormat{Name: "safetensors", Version: ptr("1.0.0")},
		ModelFramework: &v1beta1.ModelFrameworkSpec{Name: "transformers"}, ModelArchitecture: ptr("LlamaForCausalLM"),
		ModelParameterSize: ptr("8B"), Quantization: ptr(v1beta1.ModelQuantization("fp8")), Storage: &v1beta1.StorageSpec{StorageURI: ptr("hf://m")}}
	bm := MakeBaseModel("ns", "m").Format("safetensors", "1.0.0").Framework("transformers", "").Architecture("LlamaForCausalLM").
		Size("8B").Quantization("fp8").StorageURI("hf://m").Obj()
	assert.Equal(t, &v1beta1.BaseModel{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}, Spec: spec}, bm)
	cbm := MakeClusterBaseModel("m").Size("8B").Obj()
	assert.Equal(t, &v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: "m"}, Spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("8B")}}, cbm)
}

func TestMakeProfile(t *testing.T) {
	got := MakeProfile("p").Container(corev1.Container{Name: "a"}).InitContainer(corev1.Container{Name: "i"}).Volume(corev1.Volume{Name: "v"}).Obj()
	assert.Equal(t, &v1beta1.ClusterEngineRuntimeProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1beta1.ClusterEngineRuntimeProfileSpec{
		Containers: []corev1.Container{{Name: "a"}}, InitContainers: []corev1.Container{{Name: "i"}}, Volumes: []corev1.Volume{{Name: "v"}}}}, got)
}

func TestMakeNodeAndPod(t *testing.T) {
	eight := *resource.NewQuantity(8, resource.DecimalSI)
	taint := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}
	n := MakeNode("n1").Label("gpu", "h100").GPUs("nvidia.com/gpu", 8).Allocatable("cpu", "16").Taint(taint).Cordoned().NotReady().Obj()
	assert.Equal(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"gpu": "h100"}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{taint}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"nvidia.com/gpu": eight}, Allocatable: corev1.ResourceList{"nvidia.com/gpu": eight, "cpu": resource.MustParse("16")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}}}, n)

	tol := corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists}
	p := MakePod("ns", "p").Label("a", "b").Container("engine", "img:v1").GPUs("nvidia.com/gpu", 8).NodeSelector("gpu", "h100").
		Toleration(tol).Scheduler("sched").NodeName("n1").Phase(corev1.PodRunning).Obj()
	gpus := corev1.ResourceList{"nvidia.com/gpu": eight}
	assert.Equal(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"gpu": "h100"}, Tolerations: []corev1.Toleration{tol}, SchedulerName: "sched", NodeName: "n1",
			Containers: []corev1.Container{{Name: "engine", Image: "img:v1", Resources: corev1.ResourceRequirements{Requests: gpus, Limits: gpus}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}, p)
}

func TestContainerEnv(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Env: []corev1.EnvVar{{Name: "X", Value: "from-a"}}},
		{Name: "b", Env: []corev1.EnvVar{{Name: "X", Value: ""}}},
	}}}
	v, ok := ContainerEnv(p, "a", "X")
	assert.Equal(t, "from-a", v)
	assert.True(t, ok)
	v, ok = ContainerEnv(p, "b", "X")
	assert.Equal(t, "", v)
	assert.True(t, ok, "set to the empty string is set")
	_, ok = ContainerEnv(p, "b", "Y")
	assert.False(t, ok)
	_, ok = ContainerEnv(p, "c", "X")
	assert.False(t, ok)
}
