package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
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

// writeDiff prints, for each running pod, what differs from the pod berth
// composes now for its own slot (component, group, role, worker index),
// and the roles no pod runs.
func writeDiff(ctx context.Context, out io.Writer, r *Rendered, running []*corev1.Pod) {
	changes := 0
	for _, got := range running {
		if got.DeletionTimestamp != nil {
			continue
		}
		role := got.Labels[v1beta1.LabelComponent] + roleText(got)
		group, _ := strconv.Atoi(got.Labels[v1beta1.LabelGroupIndex])
		worker, _ := strconv.Atoi(got.Labels[v1beta1.LabelWorkerIndex])
		want, _, err := r.slot(ctx, got.Labels[v1beta1.LabelComponent], group, got.Labels[v1beta1.LabelRole], worker)
		if err != nil {
			fmt.Fprintf(out, "pod %s (%s): berth cannot compose its slot now: %v\n", got.Name, role, err)
			changes++
			continue
		}
		for _, d := range PodDiff(got, want) {
			fmt.Fprintf(out, "pod %s (%s): %s\n", got.Name, role, d)
			changes++
		}
	}
	for _, want := range r.Pods {
		if !slices.ContainsFunc(running, func(p *corev1.Pod) bool { return sameRole(want, p) }) {
			fmt.Fprintf(out, "%s: no running pod; a rollout creates %s\n", want.Labels[v1beta1.LabelComponent]+roleText(want), want.Name)
			changes++
		}
	}
	if changes == 0 {
		fmt.Fprintln(out, "no changes: the running pods match what berth composes now")
	}
}

// PodDiff lists every field of a rendered pod that the running pod does
// not match, as "path: running -> rendered" lines sorted by path:
//
//   - metadata: each label and annotation the rendered pod sets;
//   - spec, every field the rendered pod sets, compared recursively.
//     Lists of named items (containers, env, volumes, ports, volume
//     mounts) are matched by name: a rendered item missing from the running
//     pod is "added", a running one missing from the render "removed"
//     (except the kube-api-access-* volume the ServiceAccount admission
//     adds). Lists of scalars (command, args) must be equal. Other lists
//     (tolerations, affinity terms) must contain each rendered item.
//     Dictionaries (nodeSelector, resource limits and requests) must be
//     equal both ways.
//
// Fields the rendered pod leaves unset are not compared: the apiserver,
// the scheduler and other admission plugins fill them (defaults, nodeName,
// the default tolerations), so a field a new render drops is not seen.
func PodDiff(running, rendered *corev1.Pod) []string {
	var out []string
	out = append(out, subsetMapDiff("metadata.labels", running.Labels, rendered.Labels)...)
	out = append(out, subsetMapDiff("metadata.annotations", running.Annotations, rendered.Annotations)...)
	got, want := asJSON(running.Spec), asJSON(rendered.Spec)
	if g, ok := got.(map[string]any); ok {
		delete(g, "nodeName")
	}
	out = append(out, valueDiff("spec", got, want)...)
	sort.Strings(out)
	return out
}

// asJSON is v as encoding/json reads it back: maps, lists and scalars.
func asJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

// dictionaries are the maps compared both ways: a key the render drops
// changes the pod.
var dictionaries = []string{".nodeSelector", ".limits", ".requests"}

func valueDiff(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		return objectDiff(path, g, w)
	case []any:
		g, _ := got.([]any)
		return listDiff(path, g, w)
	default:
		if !reflect.DeepEqual(got, want) {
			return []string{fmt.Sprintf("%s: %s -> %s", path, jsonText(got), jsonText(want))}
		}
		return nil
	}
}

func objectDiff(path string, got, want map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		if l, list := want[k].([]any); !ok && list && named(l) {
			out = append(out, namedListDiff(path+"."+k, nil, l)...)
			continue
		}
		if !ok {
			out = append(out, fmt.Sprintf("%s.%s: added %s", path, k, jsonText(want[k])))
			continue
		}
		out = append(out, valueDiff(path+"."+k, g, want[k])...)
	}
	if slices.ContainsFunc(dictionaries, func(d string) bool { return strings.HasSuffix(path, d) }) {
		for _, k := range slices.Sorted(maps.Keys(got)) {
			if _, ok := want[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: removed (was %s)", path, k, jsonText(got[k])))
			}
		}
	}
	return out
}

func listDiff(path string, got, want []any) []string {
	if named(want) && (len(got) == 0 || named(got)) {
		return namedListDiff(path, got, want)
	}
	if len(want) > 0 && !isObject(want[0]) {
		if !reflect.DeepEqual(got, want) {
			return []string{fmt.Sprintf("%s: %s -> %s", path, jsonText(got), jsonText(want))}
		}
		return nil
	}
	var out []string
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g any) bool { return len(valueDiff("", g, w)) == 0 }) {
			out = append(out, fmt.Sprintf("%s: added %s", path, jsonText(w)))
		}
	}
	return out
}

func namedListDiff(path string, got, want []any) []string {
	var out []string
	byName := map[string]any{}
	for _, g := range got {
		byName[nameOf(g)] = g
	}
	for _, w := range want {
		n := nameOf(w)
		g, ok := byName[n]
		if !ok {
			out = append(out, fmt.Sprintf("%s[%s]: added", path, n))
			continue
		}
		delete(byName, n)
		out = append(out, valueDiff(path+"["+n+"]", g, w)...)
	}
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		if !strings.HasPrefix(n, "kube-api-access-") {
			out = append(out, fmt.Sprintf("%s[%s]: removed", path, n))
		}
	}
	return out
}

func isObject(v any) bool { _, ok := v.(map[string]any); return ok }

func nameOf(v any) string {
	m, _ := v.(map[string]any)
	n, _ := m["name"].(string)
	return n
}

// named says whether every item is an object with a name.
func named(items []any) bool {
	return len(items) > 0 && !slices.ContainsFunc(items, func(v any) bool { return nameOf(v) == "" })
}

func jsonText(v any) string {
	if v == nil {
		return "<none>"
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// subsetMapDiff compares the keys rendered sets with running's.
func subsetMapDiff(p string, running, rendered map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(rendered)) {
		v, ok := running[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s: added %s", p, k, rendered[k]))
		case v != rendered[k]:
			out = append(out, fmt.Sprintf("%s %s: %s -> %s", p, k, v, rendered[k]))
		}
	}
	return out
}
