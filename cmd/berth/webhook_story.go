package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/install"
)

// webhookStory shows what the webhook does at admission beyond the
// sample: it refuses a service nothing can serve. (How it completes the
// sample's pods is told by describeSample, with the reconciler's pods.)
func webhookStory(ctx context.Context, w io.Writer, env *devenv.Env, say func(string, ...any)) {
	if !runs(env, "berth-webhook") {
		return
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

// describePod says how the webhook completed one of the reconciler's
// skeleton pods, and where it runs.
func describePod(w io.Writer, p *corev1.Pod) {
	if len(p.Spec.Containers) == 0 {
		return
	}
	c := p.Spec.Containers[0]
	var gpus []string
	for name, q := range c.Resources.Limits {
		if strings.Contains(string(name), "/") {
			gpus = append(gpus, fmt.Sprintf("%s: %s", name, q.String()))
		}
	}
	sort.Strings(gpus)
	fmt.Fprintf(w, "   pod %s (created by berth-reconciler as a skeleton, completed by the pod webhook):\n"+
		"     image %s\n     args %s\n     resources %s\n     nodeSelector %v\n     revision %s\n     %s on %s\n",
		p.Name, c.Image, strings.Join(c.Args, " "), strings.Join(gpus, ", "), p.Spec.NodeSelector,
		p.Annotations[v1beta1.AnnotationRevision], p.Status.Phase, orNone(p.Spec.NodeName))
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d more lines)", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}
