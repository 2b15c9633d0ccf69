package selection

import (
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Resource names that are accelerators whatever the classes say.
var wellKnownAccelerators = []corev1.ResourceName{"nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915"}

// need is what the engine asks of a class's nodes: groups serving groups
// of pods pods, each pod perPod accelerators.
type need struct {
	perPod   int64               // accelerators per pod
	pods     int64               // pods per group: 1 + worker.size
	groups   int64               // the engine's groups (EngineGroups), at least 1
	resource corev1.ResourceName // the resource the runner asked for; "" when none
	user     int64               // accelerators per pod the service's own runners ask for; 0 when none
}

// allPods is the pods of every group: what a class needs room for.
func (n need) allPods() int64 { return mulDiv(n.groups, n.pods, 1) }

// EngineGroups is how many serving groups the engine of isvc has under
// runtime rt, as merge.Topology counts them (selection does not import
// merge; a test pins the two together): spec.engine.replicas over the
// runtime's engineConfig.replicas, else minReplicas (service over
// runtime, default 1), at least minReplicas, at most maxReplicas when set;
// never below 1, since a service that scales from zero needs room for one
// group when it does.
func EngineGroups(isvc *v1beta1.InferenceService, rt *v1beta1.ServingRuntimeSpec) int64 {
	var exts [2]*v1beta1.ComponentExtensionSpec // service first
	if isvc != nil && isvc.Spec.Engine != nil {
		exts[0] = &isvc.Spec.Engine.ComponentExtensionSpec
	}
	if rt != nil && rt.EngineConfig != nil {
		exts[1] = &rt.EngineConfig.ComponentExtensionSpec
	}
	pick := func(get func(*v1beta1.ComponentExtensionSpec) *int32) (int32, bool) {
		for _, e := range exts {
			if e != nil {
				if v := get(e); v != nil {
					return *v, true
				}
			}
		}
		return 0, false
	}
	minR, ok := pick(func(e *v1beta1.ComponentExtensionSpec) *int32 { return e.MinReplicas })
	if !ok {
		minR = 1
	}
	n := minR
	if r, ok := pick(func(e *v1beta1.ComponentExtensionSpec) *int32 { return e.Replicas }); ok {
		n = max(r, minR)
	}
	if maxR, ok := pick(func(e *v1beta1.ComponentExtensionSpec) *int32 { return e.MaxReplicas }); ok && maxR > 0 {
		n = min(n, maxR)
	}
	return max(int64(n), 1)
}

// podNeed reads the engine's accelerator need: the first runner (service
// engine runner, service leader runner, runtime engine runner, runtime
// leader runner, runtime containers[0]) that asks for an accelerator
// resource sets GPUs per pod; the service's worker size, else the
// runtime's, sets pods per group.
func (x *Index) podNeed(rt *v1beta1.ServingRuntimeSpec, isvc *v1beta1.InferenceService) need {
	var user, runtime []*corev1.ResourceRequirements
	var workerSize *int32
	if e := isvc.Spec.Engine; e != nil {
		user = appendRunners(user, e.Runner, e.Leader, nil)
		if e.Worker != nil {
			workerSize = e.Worker.Size
		}
	}
	if e := rt.EngineConfig; e != nil {
		runtime = appendRunners(runtime, e.Runner, e.Leader, nil)
		if e.Worker != nil && workerSize == nil {
			workerSize = e.Worker.Size
		}
	}
	if len(rt.Containers) > 0 {
		runtime = append(runtime, &rt.Containers[0].Resources)
	}
	n := need{pods: 1, groups: EngineGroups(isvc, rt)}
	if workerSize != nil && *workerSize > 0 {
		n.pods += int64(*workerSize)
	}
	for i, r := range append(user, runtime...) {
		if q, name := x.acceleratorQuantity(r); q > 0 {
			n.perPod, n.resource = q, name
			if i < len(user) {
				n.user = q
			}
			break
		}
	}
	return n
}

// acceleratorQuantity is the largest accelerator limit or request of a
// container; the resource name comes with it. Names are visited in a fixed
// order so that ties never depend on map order.
func (x *Index) acceleratorQuantity(r *corev1.ResourceRequirements) (int64, corev1.ResourceName) {
	var best int64
	var name corev1.ResourceName
	consider := func(rn corev1.ResourceName) {
		for _, l := range []corev1.ResourceList{r.Limits, r.Requests} {
			if q, ok := l[rn]; ok {
				if v := q.Value(); v > best || (v == best && v > 0 && rn < name) {
					best, name = v, rn
				}
			}
		}
	}
	for _, rn := range wellKnownAccelerators {
		consider(rn)
	}
	for rn := range x.classResources {
		if !containsResource(wellKnownAccelerators, rn) {
			consider(rn)
		}
	}
	return best, name
}

func containsResource(list []corev1.ResourceName, r corev1.ResourceName) bool {
	for _, v := range list {
		if v == r {
			return true
		}
	}
	return false
}

// fits reports whether the class's ready matching nodes (narrowed by the
// service's acceleratorSelector.nodeSelector) can host the whole service,
// every group of the engine: the sum over nodes of how many pods each can
// take covers groups × pods per group. The class's own resource
// counts, because a selected AMD class turns nvidia.com/gpu into amd.com/gpu.
func (x *Index) fits(c *classEntry, nd need, nodeSel map[string]string) bool {
	res := c.resourceFor(nd)
	want := nd.allPods()
	var pods int64
	if len(nodeSel) == 0 && res == c.histRes {
		// Fast path: the histogram of free counts answers without
		// visiting nodes; it has one entry per distinct free count.
		for _, h := range c.hist {
			if nd.perPod <= 0 {
				return true
			}
			pods += h.free / nd.perPod * int64(h.count)
			if pods >= want {
				return true
			}
		}
		return false
	}
	for _, n := range c.nodes {
		if !n.info.Ready || !labelsMatch(nodeSel, n.info.Labels) {
			continue
		}
		if nd.perPod <= 0 {
			return true
		}
		pods += x.free(n, res) / nd.perPod
		if pods >= want {
			return true
		}
	}
	return false
}

// hasReadyNode reports whether any Ready node of the class carries sel's
// labels (every Ready matching node is in the class's histogram).
func (x *Index) hasReadyNode(c *classEntry, sel map[string]string) bool {
	if len(sel) == 0 {
		return len(c.hist) > 0 // addFree drops empty buckets
	}
	// The nodes carrying sel's labels are cached (usually few); look for
	// one of the class among them rather than match every node of the class.
	for _, n := range x.nodesWithLabels(sel) {
		if n.info.Ready && containsString(n.classes, c.name) {
			return true
		}
	}
	return false
}

// noReadyNode says that a class has no Ready node (with the service's
// acceleratorSelector.nodeSelector labels, when it has one).
func noReadyNode(sel map[string]string) string {
	if len(sel) > 0 {
		return "matches no Ready node with the labels of spec.acceleratorSelector.nodeSelector"
	}
	return "matches no Ready node"
}

// noRoomWarning is the Decision's warning for a chosen class without room.
func noRoomWarning(c *classEntry, nd need, sel map[string]string, ready bool) string {
	if !ready {
		return "AcceleratorClass " + c.name + " " + noReadyNode(sel) + "; the service will wait for one"
	}
	return "AcceleratorClass " + c.name + " currently has no room: its ready nodes lack " + needText(c, nd) + statusCounts(c, nd, sel) + "; the service will wait for capacity"
}

// statusCounts is " (4 of 16 nvidia.com/gpu free on 2 Ready nodes)", the
// numbers of the class's status, when the need is counted as the status
// counts (the class's counted resource, no service nodeSelector); else "".
func statusCounts(c *classEntry, nd need, sel map[string]string) string {
	if len(sel) > 0 || c.resourceFor(nd) != c.histRes {
		return ""
	}
	return " " + c.availabilityText()
}

func (c *classEntry) resourceFor(nd need) corev1.ResourceName {
	if c.resource != "" {
		return c.resource
	}
	if nd.resource != "" {
		return nd.resource
	}
	return wellKnownAccelerators[0]
}

func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// capacityUnder counts, for every class, how many pods of the need fit on
// its Ready nodes that carry all of sel's labels; a class with such a node
// is a key even when no pod fits.
func (x *Index) capacityUnder(sel map[string]string, nd need) map[*classEntry]int64 {
	out := map[*classEntry]int64{}
	for _, n := range x.nodesWithLabels(sel) {
		if !n.info.Ready {
			continue
		}
		for _, name := range n.classes {
			c := x.classes[name]
			if c == nil {
				continue
			}
			if nd.perPod <= 0 {
				out[c] += nd.allPods()
				continue
			}
			out[c] += x.free(n, c.resourceFor(nd)) / nd.perPod
		}
	}
	return out
}

// selectorCache remembers which nodes carry a service nodeSelector's
// labels. Labels change far less often than decisions are made, so the
// 10,000-node scan runs once per selector and label generation. It has its
// own lock because decisions fill it while holding only the read lock.
type selectorCache struct {
	mu      sync.Mutex
	entries map[string]selectorEntry
}

type selectorEntry struct {
	gen   uint64
	nodes []*nodeEntry
}

// maxSelectorCache bounds the cache; when full it starts over.
const maxSelectorCache = 256

// nodesWithLabels returns the nodes (any readiness) that carry every label
// of sel. Caller holds x.mu (read or write).
func (x *Index) nodesWithLabels(sel map[string]string) []*nodeEntry {
	pairs := make([]string, 0, 2*len(sel))
	for k, v := range sel {
		pairs = append(pairs, k, v)
	}
	// Canonical key: sorted "k=v" lines, so map order never matters.
	keys := make([]string, 0, len(sel))
	for i := 0; i < len(pairs); i += 2 {
		keys = append(keys, pairs[i]+"="+pairs[i+1])
	}
	sort.Strings(keys)
	key := strings.Join(keys, "\n")
	gen := x.labelGen.Load()

	x.selCache.mu.Lock()
	e, ok := x.selCache.entries[key]
	x.selCache.mu.Unlock()
	if ok && e.gen == gen {
		return e.nodes
	}
	var nodes []*nodeEntry
	for _, n := range x.nodes {
		match := true
		for i := 0; i < len(pairs) && match; i += 2 {
			v, ok := n.info.Labels[pairs[i]]
			match = ok && v == pairs[i+1]
		}
		if match {
			nodes = append(nodes, n)
		}
	}
	x.selCache.mu.Lock()
	if x.selCache.entries == nil || len(x.selCache.entries) >= maxSelectorCache {
		x.selCache.entries = map[string]selectorEntry{}
	}
	x.selCache.entries[key] = selectorEntry{gen: gen, nodes: nodes}
	x.selCache.mu.Unlock()
	return nodes
}

// asksForAccelerator reports whether the service or its runtime asks for
// an accelerator at all: the class or strategy annotation, an
// acceleratorSelector, the runtime's acceleratorRequirements, or an
// accelerator resource anywhere in the composed engine or decoder (runners
// of the component, its leader and workers, the KServe main container, and
// accelerator configurations). A service that asks for none gets no class
// (OEP-0003: the new fields "only enhance functionality when used"), so a
// CPU model server never lands on, or waits for, a GPU node.
func (x *Index) asksForAccelerator(isvc *v1beta1.InferenceService, rt *v1beta1.ServingRuntimeSpec, engine need) bool {
	if engine.perPod > 0 || isvc.Spec.AcceleratorSelector != nil || rt.AcceleratorRequirements != nil {
		return true
	}
	for _, a := range []string{v1beta1.AnnotationAcceleratorClass, v1beta1.AnnotationSelectionStrategy} {
		if isvc.Annotations[a] != "" {
			return true
		}
	}
	var rs []*corev1.ResourceRequirements
	if e := isvc.Spec.Engine; e != nil {
		rs = appendRunners(rs, e.Runner, e.Leader, e.Worker)
	}
	if d := isvc.Spec.Decoder; d != nil {
		rs = appendRunners(rs, d.Runner, d.Leader, d.Worker)
	}
	if e := rt.EngineConfig; e != nil {
		rs = appendRunners(rs, e.Runner, e.Leader, e.Worker)
	}
	if d := rt.DecoderConfig; d != nil {
		rs = appendRunners(rs, d.Runner, d.Leader, d.Worker)
	}
	for _, ac := range accelConfigs(isvc, rt, true) {
		rs = append(rs, &ac.Resources)
		if ac.Runner != nil {
			rs = append(rs, &ac.Runner.Resources)
		}
	}
	for _, r := range rs {
		if q, _ := x.acceleratorQuantity(r); q > 0 {
			return true
		}
	}
	return false
}

// appendRunners adds the resources of a component's runner, leader runner
// and worker runner.
func appendRunners(rs []*corev1.ResourceRequirements, r *v1beta1.RunnerSpec, l *v1beta1.LeaderSpec, w *v1beta1.WorkerSpec) []*corev1.ResourceRequirements {
	if r != nil {
		rs = append(rs, &r.Resources)
	}
	if l != nil && l.Runner != nil {
		rs = append(rs, &l.Runner.Resources)
	}
	if w != nil && w.Runner != nil {
		rs = append(rs, &w.Runner.Resources)
	}
	return rs
}

// accelConfigs lists the acceleratorConfigurations that apply to the engine
// (the runtime's, its engineConfig's, the service engine's) and, with
// decoder, the decoder's too, in merge's order.
func accelConfigs(isvc *v1beta1.InferenceService, rt *v1beta1.ServingRuntimeSpec, decoder bool) []*v1beta1.AcceleratorConfiguration {
	var lists [5][]v1beta1.AcceleratorConfiguration // an array: no allocation when there are none
	lists[0] = rt.AcceleratorConfigurations
	if e := rt.EngineConfig; e != nil {
		lists[1] = e.AcceleratorConfigurations
	}
	if e := isvc.Spec.Engine; e != nil {
		lists[2] = e.AcceleratorConfigurations
	}
	if decoder {
		if d := rt.DecoderConfig; d != nil {
			lists[3] = d.AcceleratorConfigurations
		}
		if d := isvc.Spec.Decoder; d != nil {
			lists[4] = d.AcceleratorConfigurations
		}
	}
	var out []*v1beta1.AcceleratorConfiguration
	for _, l := range lists {
		for i := range l {
			out = append(out, &l[i])
		}
	}
	return out
}
