package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/merge"
)

// webhookStory shows the three things the webhook does at admission: it
// completes a pod of the sample service, it refuses a service nothing can
// serve, and it refuses a runtime whose priority conflicts.
func webhookStory(ctx context.Context, w io.Writer, env *devenv.Env, say func(string, ...any)) {
	if !runs(env, "berth-webhook") {
		return
	}
	created, err := createSkeleton(ctx, env, "default", "llama-3-2-1b-instruct")
	if err != nil {
		say("A skeleton engine pod for the sample was refused: %v", err)
	} else {
		c := created.Spec.Containers[0]
		var gpus []string
		for name, q := range c.Resources.Limits {
			if strings.Contains(string(name), "/") {
				gpus = append(gpus, fmt.Sprintf("%s: %s", name, q.String()))
			}
		}
		sort.Strings(gpus)
		say("A skeleton engine pod (one placeholder container, as the reconciler creates) was completed by the pod webhook:\n"+
			"   image %s\n   args %s\n   resources %s\n   nodeSelector %v\n   revision %s",
			c.Image, strings.Join(c.Args, " "), strings.Join(gpus, ", "), created.Spec.NodeSelector, created.Annotations[v1beta1.AnnotationRevision])
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			p, err := env.Kube.CoreV1().Pods("default").Get(ctx, created.Name, metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodRunning {
				fmt.Fprintf(w, "   It is Running on %s.\n", p.Spec.NodeName)
				break
			}
			time.Sleep(300 * time.Millisecond)
		}
	}

	huge := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
		"metadata": map[string]any{"name": "too-big", "namespace": "default"},
		"spec":     map[string]any{"model": map[string]any{"name": "llama-3-2-1b-instruct", "kind": "ClusterBaseModel"}, "runtime": map[string]any{"name": "vllm-mixtral-8x7b-instruct-rt"}},
	}}
	if _, err := env.Applier.Apply(ctx, install.Object{Unstructured: huge, Source: "demo"}); err != nil {
		say("An InferenceService naming a runtime that cannot serve its model is refused by the apiserver itself:\n%s", indent(firstLines(err.Error(), 6)))
	} else {
		say("BUG: an InferenceService naming an incompatible runtime was accepted.")
	}
}

// createSkeleton creates the skeleton pod of group 0 of a service's engine,
// built as the reconciler builds it (merge.SkeletonPod); when a reconciler
// created it first, it returns that one.
func createSkeleton(ctx context.Context, env *devenv.Env, ns, name string) (*corev1.Pod, error) {
	res, err := env.Applier.Resource(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1beta1.SchemeGroupVersion.String(), "kind": "InferenceService", "metadata": map[string]any{"namespace": ns}}})
	if err != nil {
		return nil, err
	}
	u, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var svc v1beta1.InferenceService
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &svc); err != nil {
		return nil, err
	}
	pod := merge.SkeletonPod(&svc, v1beta1.ComponentEngine, merge.GroupIdentity{})
	created, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return env.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	}
	return created, err
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d more lines)", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}
