package adapters

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/berthdev/berth/api/v1beta1"
)

// State is what a sidecar's GET /adapters answers (the fields the
// controller reads).
type State struct {
	Loaded []struct {
		Name string `json:"name"`
	} `json:"loaded"`
	Failed []v1beta1.AdapterFailure `json:"failed"`
	Error  string                   `json:"error"`
}

// Annotation is the value of ome.io/lora-adapters for adapters: the JSON
// list the sidecar reads ([] for none).
func Annotation(adapters []v1beta1.LoRAAdapter) (string, error) {
	if adapters == nil {
		adapters = []v1beta1.LoRAAdapter{}
	}
	b, err := json.Marshal(adapters)
	return string(b), err
}

// annotationPath is the downward API field a sidecar pod projects.
var annotationPath = "metadata.annotations['" + v1beta1.AnnotationLoRAAdapters + "']"

// Projects reports whether the pod projects ome.io/lora-adapters into a
// file (a downward API volume, or a projected volume's downward API
// source).
func Projects(p *corev1.Pod) bool {
	has := func(items []corev1.DownwardAPIVolumeFile) bool {
		return slices.ContainsFunc(items, func(f corev1.DownwardAPIVolumeFile) bool {
			return f.FieldRef != nil && f.FieldRef.FieldPath == annotationPath
		})
	}
	for _, v := range p.Spec.Volumes {
		if v.DownwardAPI != nil && has(v.DownwardAPI.Items) {
			return true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.DownwardAPI != nil && has(s.DownwardAPI.Items) {
					return true
				}
			}
		}
	}
	return false
}

// SidecarPort is the port of the pod's container port named "sidecar",
// else DefaultSidecarPort.
func SidecarPort(p *corev1.Pod) int32 {
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		for _, port := range c.Ports {
			if port.Name == "sidecar" {
				return port.ContainerPort
			}
		}
	}
	return DefaultSidecarPort
}

// Collect reads each pod (read is called only for Running pods with an
// IP) into status entries sorted by pod name.
func Collect(pods []*corev1.Pod, read func(*corev1.Pod) (State, error)) []v1beta1.PodAdapters {
	out := []v1beta1.PodAdapters{}
	for _, p := range pods {
		e := v1beta1.PodAdapters{Pod: p.Name}
		switch {
		case p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "":
			e.Error = "pod not running yet"
		default:
			st, err := read(p)
			if err != nil {
				e.Error = "reading the engine runtime sidecar: " + err.Error()
				break
			}
			for _, l := range st.Loaded {
				e.Loaded = append(e.Loaded, l.Name)
			}
			sort.Strings(e.Loaded)
			e.Failed = slices.Clone(st.Failed)
			sort.Slice(e.Failed, func(i, j int) bool { return e.Failed[i].Name < e.Failed[j].Name })
			e.Error = st.Error
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Compare(out[i].Pod, out[j].Pod) < 0 })
	return out
}

// Idle reports whether no pod has an adapter loaded or failed.
func Idle(status []v1beta1.PodAdapters) bool {
	for _, e := range status {
		if len(e.Loaded) > 0 || len(e.Failed) > 0 {
			return false
		}
	}
	return true
}

// Equal compares two status lists (nil and empty are equal).
func Equal(a, b []v1beta1.PodAdapters) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return apiequality.Semantic.DeepEqual(a, b)
}
