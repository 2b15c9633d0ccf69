package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/objects"
)

// runningPods are the set's pods of svc (label ome.io/inferenceservice).
func runningPods(set *objects.Set, svc *v1beta1.InferenceService) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range set.Pods {
		if p.Namespace == svc.Namespace && p.Labels[v1beta1.LabelInferenceService] == svc.Name {
			out = append(out, p)
		}
	}
	return out
}

// sameRole says whether a running pod plays the rendered pod's part:
// same component and role.
func sameRole(a, b *corev1.Pod) bool {
	return a.Labels[v1beta1.LabelComponent] == b.Labels[v1beta1.LabelComponent] && a.Labels[v1beta1.LabelRole] == b.Labels[v1beta1.LabelRole]
}

// writeDiff prints, for every rendered pod, what differs in each running
// pod of the same role.
func writeDiff(out io.Writer, r *Rendered, running []*corev1.Pod) {
	changes := 0
	for _, want := range r.Pods {
		role := want.Labels[v1beta1.LabelComponent] + roleText(want)
		matched := false
		for _, got := range running {
			if !sameRole(want, got) {
				continue
			}
			matched = true
			for _, d := range PodDiff(got, want) {
				fmt.Fprintf(out, "pod %s (%s): %s\n", got.Name, role, d)
				changes++
			}
		}
		if !matched {
			fmt.Fprintf(out, "%s: no running pod; a rollout creates %s\n", role, want.Name)
			changes++
		}
	}
	if changes == 0 {
		fmt.Fprintln(out, "no changes: the running pods match what berth composes now")
	}
}

// PodDiff lists what berth composes that differs between a running pod
// and a rendered one: each container's image, command, args, env and
// resources (init containers too), and the pod's nodeSelector. Each line
// says "field: running -> rendered".
func PodDiff(running, rendered *corev1.Pod) []string {
	var out []string
	out = append(out, mapDiff("nodeSelector", running.Spec.NodeSelector, rendered.Spec.NodeSelector)...)
	out = append(out, containersDiff("initContainers", running.Spec.InitContainers, rendered.Spec.InitContainers)...)
	out = append(out, containersDiff("containers", running.Spec.Containers, rendered.Spec.Containers)...)
	return out
}

func containersDiff(field string, running, rendered []corev1.Container) []string {
	var out []string
	byName := map[string]*corev1.Container{}
	for i := range running {
		byName[running[i].Name] = &running[i]
	}
	for i := range rendered {
		want := &rendered[i]
		got, ok := byName[want.Name]
		p := field + "[" + want.Name + "]"
		if !ok {
			out = append(out, p+": added")
			continue
		}
		delete(byName, want.Name)
		out = append(out, scalarDiff(p+".image", got.Image, want.Image)...)
		out = append(out, scalarDiff(p+".command", fmt.Sprint(got.Command), fmt.Sprint(want.Command))...)
		out = append(out, scalarDiff(p+".args", fmt.Sprint(got.Args), fmt.Sprint(want.Args))...)
		out = append(out, mapDiff(p+".env", envMap(got.Env), envMap(want.Env))...)
		out = append(out, mapDiff(p+".resources.limits", quantities(got.Resources.Limits), quantities(want.Resources.Limits))...)
		out = append(out, mapDiff(p+".resources.requests", quantities(got.Resources.Requests), quantities(want.Resources.Requests))...)
	}
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, field+"["+n+"]: removed")
	}
	return out
}

func scalarDiff(p, a, b string) []string {
	if a == b {
		return nil
	}
	return []string{fmt.Sprintf("%s: %s -> %s", p, a, b)}
}

func mapDiff(p string, a, b map[string]string) []string {
	var out []string
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		va, inA := a[k]
		vb, inB := b[k]
		switch {
		case !inA:
			out = append(out, fmt.Sprintf("%s %s: added %s", p, k, vb))
		case !inB:
			out = append(out, fmt.Sprintf("%s %s: removed (was %s)", p, k, va))
		case va != vb:
			out = append(out, fmt.Sprintf("%s %s: %s -> %s", p, k, va, vb))
		}
	}
	return out
}

// envMap is a container's env by name; a value from a source is shown as
// the source.
func envMap(env []corev1.EnvVar) map[string]string {
	m := map[string]string{}
	for _, e := range env {
		v := e.Value
		if s := e.ValueFrom; s != nil {
			switch {
			case s.FieldRef != nil:
				v = "fieldRef(" + s.FieldRef.FieldPath + ")"
			case s.SecretKeyRef != nil:
				v = "secret(" + s.SecretKeyRef.Name + "/" + s.SecretKeyRef.Key + ")"
			case s.ConfigMapKeyRef != nil:
				v = "configMap(" + s.ConfigMapKeyRef.Name + "/" + s.ConfigMapKeyRef.Key + ")"
			case s.ResourceFieldRef != nil:
				v = "resourceFieldRef(" + s.ResourceFieldRef.Resource + ")"
			}
		}
		m[e.Name] = strings.TrimSpace(v)
	}
	return m
}

func quantities(l corev1.ResourceList) map[string]string {
	m := map[string]string{}
	for k, v := range l {
		m[string(k)] = v.String()
	}
	return m
}
