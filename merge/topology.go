package merge

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berthdev/berth/api/v1beta1"
)

// ComponentTopology is what groups one component of a service has, with
// the service's settings layered over the runtime's (service wins field by
// field).
type ComponentTopology struct {
	Component   string // engine, decoder, router
	MultiNode   bool   // leader/worker groups (runtime or service component has leader or worker)
	Workers     int32  // worker pods per group (service worker.size over runtime worker.size; 0 if none)
	Replicas    int32  // desired groups: replicas, else minReplicas, else 1; clamped to [MinReplicas, MaxReplicas] (MaxReplicas wins a conflict)
	MinReplicas int32  // service over runtime; 1 when neither sets it
	MaxReplicas int32  // 0: unbounded
	ScaleMetric *v1beta1.ScaleMetric
	ScaleTarget *int32
}

// MaxGroups is the most groups the component may have: maxReplicas when
// set, else its desired replicas.
func (t ComponentTopology) MaxGroups() int32 {
	if t.MaxReplicas > 0 {
		return t.MaxReplicas
	}
	return t.Replicas
}

// GroupSize is the number of pods in each group: the leader and its
// workers, or 1.
func (t ComponentTopology) GroupSize() int {
	if !t.MultiNode {
		return 1
	}
	return 1 + int(t.Workers)
}

// Topology lists the components of svc served by rt, in the order engine,
// decoder, router: the engine always, the decoder when the runtime has a
// decoderConfig or the service a decoder, the router likewise. rt may be
// nil (the service alone is described). rt is read folded
// (v1beta1.FoldedRuntime): KServe's workerSpec makes multi-node groups.
func Topology(svc *v1beta1.InferenceService, rt *v1beta1.ServingRuntimeSpec) []ComponentTopology {
	rt = v1beta1.FoldedRuntime(rt)
	out := []ComponentTopology{componentTopology(svc, rt, v1beta1.ComponentEngine)}
	var spec v1beta1.InferenceServiceSpec
	if svc != nil {
		spec = svc.Spec
	}
	if spec.Decoder != nil || (rt != nil && rt.DecoderConfig != nil) {
		out = append(out, componentTopology(svc, rt, v1beta1.ComponentDecoder))
	}
	if spec.Router != nil || (rt != nil && rt.RouterConfig != nil) {
		out = append(out, componentTopology(svc, rt, v1beta1.ComponentRouter))
	}
	return out
}

// componentTopology layers one component's settings; an unknown component
// is a single-node one with one group. rt must be folded already.
func componentTopology(svc *v1beta1.InferenceService, rt *v1beta1.ServingRuntimeSpec, component string) ComponentTopology {
	rtc, svcc := componentViews(svc, rt, component)
	t := ComponentTopology{Component: component, MinReplicas: 1}
	var exts []*v1beta1.ComponentExtensionSpec // highest precedence first
	workersSet := false
	for _, c := range []*componentView{svcc, rtc} {
		if c == nil {
			continue
		}
		exts = append(exts, c.ext)
		t.MultiNode = t.MultiNode || c.leader != nil || c.worker != nil
		if !workersSet && c.worker != nil && c.worker.Size != nil {
			t.Workers, workersSet = *c.worker.Size, true
		}
	}
	if v := first(exts, func(e *v1beta1.ComponentExtensionSpec) *int32 { return e.MinReplicas }); v != nil {
		t.MinReplicas = *v
	}
	if v := first(exts, func(e *v1beta1.ComponentExtensionSpec) *int32 { return e.MaxReplicas }); v != nil {
		t.MaxReplicas = *v
	}
	t.ScaleTarget = first(exts, func(e *v1beta1.ComponentExtensionSpec) *int32 { return e.ScaleTarget })
	t.ScaleMetric = first(exts, func(e *v1beta1.ComponentExtensionSpec) *v1beta1.ScaleMetric { return e.ScaleMetric })
	t.Replicas = t.MinReplicas
	if v := first(exts, func(e *v1beta1.ComponentExtensionSpec) *int32 { return e.Replicas }); v != nil {
		t.Replicas = *v
	}
	t.Replicas = max(t.Replicas, t.MinReplicas)
	if t.MaxReplicas > 0 {
		t.Replicas = min(t.Replicas, t.MaxReplicas)
	}
	return t
}

// first is the first non-nil value get returns over exts.
func first[T any](exts []*v1beta1.ComponentExtensionSpec, get func(*v1beta1.ComponentExtensionSpec) *T) *T {
	for _, e := range exts {
		if e == nil {
			continue
		}
		if v := get(e); v != nil {
			return v
		}
	}
	return nil
}

// componentViews returns the runtime's and the service's view of a
// component; either is nil when absent.
func componentViews(svc *v1beta1.InferenceService, rt *v1beta1.ServingRuntimeSpec, component string) (rtc, svcc *componentView) {
	var spec v1beta1.InferenceServiceSpec
	if svc != nil {
		spec = svc.Spec
	}
	if rt == nil {
		rt = &v1beta1.ServingRuntimeSpec{}
	}
	switch component {
	case v1beta1.ComponentEngine:
		return viewEngine(rt.EngineConfig), viewEngine(spec.Engine)
	case v1beta1.ComponentDecoder:
		return viewDecoder(rt.DecoderConfig), viewDecoder(spec.Decoder)
	case v1beta1.ComponentRouter:
		return viewRouter(rt.RouterConfig), viewRouter(spec.Router)
	}
	return nil, nil
}

// unboundedGroups is how many groups ValidateNames allows for when
// maxReplicas is unbounded: group indexes up to three digits.
const unboundedGroups = 1000

// LongestPodName is the longest pod name a component's groups can get:
// the highest group index (of replicas, minReplicas and maxReplicas, or
// unboundedGroups-1 when maxReplicas is 0) and, for multi-node groups, the
// highest worker index.
func LongestPodName(service string, t ComponentTopology) string {
	groups := max(t.Replicas, t.MinReplicas, t.MaxReplicas, 1)
	if t.MaxReplicas == 0 {
		groups = max(groups, unboundedGroups)
	}
	g := GroupIdentity{GroupIndex: int(groups) - 1}
	if t.MultiNode {
		g.Role, g.WorkerIndex = RoleLeader, int(t.Workers)
	}
	return PodName(service, t.Component, g)
}

// ValidateNames checks that every name berth generates for the service's
// groups (pod names and hostnames, group Service names, which contain the
// pod names' prefix) is a valid DNS-1035 label: at most 63 characters,
// lowercase letters, digits and '-', starting with a letter. The error
// names the longest generated name, its length and the fix.
func ValidateNames(service string, topo []ComponentTopology) error {
	longest, component := service, ""
	for _, t := range topo {
		if n := LongestPodName(service, t); len(n) > len(longest) {
			longest, component = n, t.Component
		}
	}
	errs := validation.IsDNS1035Label(longest)
	if len(errs) == 0 {
		return nil
	}
	what := fmt.Sprintf("the name %q", longest)
	if component != "" {
		what = fmt.Sprintf("the longest name berth generates for its groups, pod %q of component %s (%d characters; groups up to maxReplicas, or %d when it is unbounded),",
			longest, component, len(longest), unboundedGroups)
	}
	fix := "rename the InferenceService with lowercase letters, digits and '-', starting with a letter"
	if over := len(longest) - validation.DNS1035LabelMaxLength; over > 0 {
		fix = fmt.Sprintf("shorten the InferenceService name to at most %d characters", len(service)-over)
	}
	return fmt.Errorf("InferenceService %s: %s is not a valid DNS-1035 label (%s); %s",
		service, what, strings.Join(errs, "; "), fix)
}
