package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/gang"
	"github.com/berthdev/berth/reconcile/servinggroups"
)

// The gang part of the demo: two multi-node services of 8 H100s per pod
// under the coscheduling scheduler the local control plane runs next to
// the default one. The fleet's H100 pool has 4 nodes of 8 GPUs.
const (
	gangDemoNamespace = "default"
	gangDemoRuntime   = "demo-gang-multinode"
	gangDemoClass     = "nvidia-h100-80gb"
	gangDemoGPUs      = 8
	// gangDemoHold is how long the demo watches the gang that cannot fit:
	// longer than the coscheduling Permit wait, so members that fit were
	// held and released at least once.
	gangDemoHold = time.Duration(gang.PermitWaitingTimeSeconds+5) * time.Second
)

// gangStory creates a gang of 2 pods that fits the free H100s and one of 4
// that does not, and says what the scheduler did with each: all or nothing.
func gangStory(ctx context.Context, w io.Writer, env *devenv.Env, say func(string, ...any)) {
	if !runs(env, "berth-reconciler") || len(env.GangCRDs) == 0 {
		return
	}
	bc, err := versioned.NewForConfig(env.Cluster.RESTConfig())
	if err != nil {
		return
	}
	if _, err := bc.OmeV1beta1().ClusterServingRuntimes().Create(ctx, gangDemoRuntimeObj(), metav1.CreateOptions{}); err != nil {
		say("Gang scheduling: the runtime %s was refused: %v", gangDemoRuntime, err)
		return
	}
	fits, tooBig := gangDemoService("gang-fits", 1), gangDemoService("gang-too-big", 3)
	for _, s := range []*v1beta1.InferenceService{fits, tooBig} {
		if _, err := bc.OmeV1beta1().InferenceServices(gangDemoNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			say("Gang scheduling: InferenceService %s was refused: %v", s.Name, err)
			return
		}
	}
	bound, pods := waitGang(ctx, env, fits.Name, 2, time.Minute)
	say("Gang scheduling (scheduler %s, a PodGroup per serving group): %s/%s, a leader and 1 worker of %d GPUs each, "+
		"PodGroup %s-engine-0 with minMember 2: %d of %d pods bound together, on %s.",
		gang.SchedulerName, gangDemoNamespace, fits.Name, gangDemoGPUs, fits.Name, len(bound), pods, strings.Join(bound, ", "))

	bound, pods = waitGang(ctx, env, tooBig.Name, -1, gangDemoHold)
	say("%s/%s, a leader and 3 workers of %d GPUs each, needs 4 free H100 nodes and the pool has fewer left: "+
		"%d of %d pods bound after %s. None of them holds a GPU while the group cannot run; the default scheduler would have bound the pods that fit.",
		gangDemoNamespace, tooBig.Name, gangDemoGPUs, len(bound), pods, gangDemoHold)
	if got, err := bc.OmeV1beta1().InferenceServices(gangDemoNamespace).Get(ctx, tooBig.Name, metav1.GetOptions{}); err == nil {
		if c := meta.FindStatusCondition(got.Status.Conditions, servinggroups.ConditionGangScheduling); c != nil {
			fmt.Fprintf(w, "   %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	fmt.Fprintf(w, "   kubectl get podgroups.scheduling.x-k8s.io -n %s; kubectl delete isvc %s to free its place.\n", gangDemoNamespace, tooBig.Name)
}

// waitGang polls the service's pods until want of them are bound (want < 0:
// for the whole wait) and returns the nodes of the bound ones and how many
// pods exist.
func waitGang(ctx context.Context, env *devenv.Env, name string, want int, wait time.Duration) (nodes []string, pods int) {
	deadline := time.Now().Add(wait)
	for {
		list, err := env.Kube.CoreV1().Pods(gangDemoNamespace).List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelInferenceService + "=" + name})
		if err == nil {
			nodes, pods = nil, len(list.Items)
			for _, p := range list.Items {
				if p.Spec.NodeName != "" {
					nodes = append(nodes, p.Spec.NodeName)
				}
			}
			slices.Sort(nodes)
		}
		if (want >= 0 && len(nodes) >= want) || time.Now().After(deadline) || ctx.Err() != nil {
			return nodes, pods
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// gangDemoRuntimeObj is a multi-node runtime for the sample's model
// (safetensors, LlamaForCausalLM) whose pods the coscheduling scheduler
// places; services name it and set their worker count.
func gangDemoRuntimeObj() *v1beta1.ClusterServingRuntime {
	gpus := *resource.NewQuantity(gangDemoGPUs, resource.DecimalSI)
	runner := func() *v1beta1.RunnerSpec {
		return &v1beta1.RunnerSpec{
			Image: "lmsysorg/sglang:v0.5.5.post3",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": gpus}, Limits: corev1.ResourceList{"nvidia.com/gpu": gpus}},
		}
	}
	one, version := int32(1), "1.0.0"
	autoSelect := false
	rt := &v1beta1.ClusterServingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: gangDemoRuntime},
		Spec: v1beta1.ServingRuntimeSpec{
			SupportedModelFormats: []v1beta1.SupportedModelFormat{{
				ModelFormat:       &v1beta1.ModelFormat{Name: "safetensors", Version: &version},
				ModelArchitecture: ptrTo("LlamaForCausalLM"),
				AutoSelect:        &autoSelect,
			}},
			ProtocolVersions: []v1beta1.ProtocolVersion{"openAI"},
			EngineConfig: &v1beta1.EngineSpec{
				Leader: &v1beta1.LeaderSpec{Runner: runner()},
				Worker: &v1beta1.WorkerSpec{Size: &one, Runner: runner()},
			},
		},
	}
	rt.Spec.EngineConfig.SchedulerName = gang.SchedulerName
	return rt
}

// gangDemoService serves the sample's model on gangDemoRuntime with one
// group of a leader and workers workers, on H100s.
func gangDemoService(name string, workers int32) *v1beta1.InferenceService {
	one := int32(1)
	return &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: gangDemoNamespace,
			Annotations: map[string]string{v1beta1.AnnotationAcceleratorClass: gangDemoClass}},
		Spec: v1beta1.InferenceServiceSpec{
			Model:   &v1beta1.ModelRef{Name: "llama-3-2-1b-instruct", Kind: ptrTo("ClusterBaseModel")},
			Runtime: &v1beta1.ServingRuntimeRef{Name: gangDemoRuntime, Kind: ptrTo("ClusterServingRuntime")},
			Engine: &v1beta1.EngineSpec{
				ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{MinReplicas: &one, MaxReplicas: &one},
				Worker:                 &v1beta1.WorkerSpec{Size: &workers},
			},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }
