package main

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/handlers"
)

// world is a synthetic cluster of the size the issue asks to measure at:
// runtimes spread over architectures and size ranges, classes each with its
// own product label, nodes spread over the classes, and one pinned service.
type world struct {
	index    *selection.Index
	services toolscache.Indexer
	isvc     *v1beta1.InferenceService
}

// stored is the metadata the API server gives an object: a UID and a
// resourceVersion. The webhook composes pods from a plan cached by its
// inputs' versions and composes from scratch only inputs without one, which
// no object from the API server is; without them the load would measure
// that path instead of a cluster's.
func stored(namespace, name string, n int) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name,
		UID: types.UID(fmt.Sprintf("uid-%s-%s", namespace, name)), ResourceVersion: fmt.Sprint(n)}
}

// The synthetic service: the load's pods belong to it.
const (
	serviceName      = "chat"
	serviceNamespace = "load"
)

func buildWorld(runtimes, classes, nodes int) (*world, error) {
	w := &world{
		index:    selection.NewIndex(),
		services: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}),
	}
	str := func(s string) *string { return &s }
	yes := true
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < classes; i++ {
		mem := resource.MustParse(fmt.Sprintf("%dGi", 16+(i%8)*16))
		w.index.UpsertAcceleratorClass(&v1beta1.AcceleratorClass{
			ObjectMeta: stored("", fmt.Sprintf("class-%03d", i), 1+i),
			Spec: v1beta1.AcceleratorClassSpec{
				Vendor:       "nvidia",
				Discovery:    v1beta1.AcceleratorDiscovery{NodeSelector: map[string]string{"nvidia.com/gpu.product": fmt.Sprintf("GPU-%03d", i)}},
				Capabilities: v1beta1.AcceleratorCapabilities{MemoryGB: &mem, ComputeCapability: fmt.Sprintf("%d.0", 7+i%4)},
				Resources:    []v1beta1.AcceleratorResource{{Name: "nvidia.com/gpu", Quantity: resource.MustParse("1")}},
			},
		})
	}
	for i := 0; i < nodes; i++ {
		w.index.UpsertNode(selection.NodeInfo{
			Name:        fmt.Sprintf("node-%05d", i),
			Labels:      map[string]string{"nvidia.com/gpu.product": fmt.Sprintf("GPU-%03d", i%classes)},
			Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8},
			Ready:       true,
		})
	}
	for i := 0; i < runtimes; i++ {
		arch := fmt.Sprintf("Arch%02dForCausalLM", i%50)
		lo, hi := fmt.Sprintf("%dB", 1+(i/50)%20*5), fmt.Sprintf("%dB", 5+(i/50)%20*5)
		prio := int32(1 + i/1000)
		meta := stored("", fmt.Sprintf("rt-%04d", i), 1+classes+i)
		meta.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(i) * time.Second))
		w.index.UpsertClusterServingRuntime(&v1beta1.ClusterServingRuntime{
			ObjectMeta: meta,
			Spec: v1beta1.ServingRuntimeSpec{
				SupportedModelFormats: []v1beta1.SupportedModelFormat{{
					ModelFormat:       &v1beta1.ModelFormat{Name: "safetensors", Version: str("1.0.0")},
					ModelFramework:    &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: str("4.57.1")},
					ModelArchitecture: &arch, AutoSelect: &yes, Priority: &prio,
				}},
				ProtocolVersions: []v1beta1.ProtocolVersion{v1beta1.ProtocolOpenAI},
				ModelSizeRange:   &v1beta1.ModelSizeRangeSpec{Min: &lo, Max: &hi},
				EngineConfig:     engineConfig(i),
			},
		})
	}
	arch, size := "Arch07ForCausalLM", "7B"
	w.index.UpsertBaseModel(&v1beta1.BaseModel{
		ObjectMeta: stored(serviceNamespace, "llama", 1+classes+runtimes),
		Spec: v1beta1.BaseModelSpec{
			ModelFormat:       v1beta1.ModelFormat{Name: "safetensors", Version: str("1.0.0")},
			ModelFramework:    &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: str("4.57.1")},
			ModelArchitecture: &arch, ModelParameterSize: &size,
		},
	})
	isvc := &v1beta1.InferenceService{
		ObjectMeta: stored(serviceNamespace, serviceName, 2+classes+runtimes),
		Spec: v1beta1.InferenceServiceSpec{
			Model:               &v1beta1.ModelRef{Name: "llama"},
			AcceleratorSelector: &v1beta1.AcceleratorSelector{PreferredClasses: []string{"class-007"}},
			Engine:              &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Args: []string{"--max-running-requests=64"}}},
		},
	}
	d, err := w.index.Select(isvc)
	if err != nil {
		return nil, fmt.Errorf("synthetic service does not resolve: %w", err)
	}
	pin.Write(isvc, pin.Pin{RuntimeKind: d.Runtime.Kind, RuntimeName: d.Runtime.Name, AcceleratorClass: d.AcceleratorClassName()}, "")
	w.isvc = isvc
	return w, w.services.Add(isvc)
}

// engineConfig is a realistic SGLang engine: image, command, args, env,
// resources, probes and a shared-memory volume.
func engineConfig(i int) *v1beta1.EngineSpec {
	q := resource.MustParse
	return &v1beta1.EngineSpec{
		PodSpec: v1beta1.PodSpec{Volumes: []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}},
		Runner: &v1beta1.RunnerSpec{
			Image:   "lmsysorg/sglang:v0.5.5",
			Command: []string{"python3", "-m", "sglang.launch_server"},
			Args: []string{"--host", "0.0.0.0", "--port", "8080", "--model-path", "/mnt/models",
				"--served-model-name", "{{.Name}}", "--tp-size", fmt.Sprint(1 + i%2), "--enable-metrics"},
			Env:   []corev1.EnvVar{{Name: "HF_HOME", Value: "/mnt/cache"}, {Name: "SERVICE", Value: "{{.Namespace}}/{{.Name}}"}},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"cpu": q("8"), "memory": q("64Gi"), "nvidia.com/gpu": q("1")},
				Limits:   corev1.ResourceList{"cpu": q("8"), "memory": q("64Gi"), "nvidia.com/gpu": q("1")},
			},
			VolumeMounts:   []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intOrString(8080)}}},
		},
	}
}

func (w *world) podHandler() *handlers.Pods {
	return &handlers.Pods{
		Index:    w.index,
		Services: listers.NewInferenceServiceLister(w.services),
		Profiles: listers.NewClusterEngineRuntimeProfileLister(toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})),
	}
}
