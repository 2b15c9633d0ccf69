package selection

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// Runtime kinds, as they appear in pinned annotations and explanations.
const (
	KindServingRuntime        = "ServingRuntime"
	KindClusterServingRuntime = "ClusterServingRuntime"
	KindBaseModel             = "BaseModel"
	KindClusterBaseModel      = "ClusterBaseModel"
)

// NodeInfo is the part of a Node that accelerator availability needs.
type NodeInfo struct {
	Name   string
	Labels map[string]string
	// Allocatable accelerator resources (nvidia.com/gpu: 8, ...).
	Allocatable map[corev1.ResourceName]int64
	// Ready is false for nodes that are not Ready or are cordoned.
	Ready bool
}

// Stats are object counts, for metrics.
type Stats struct {
	Runtimes int
	Classes  int
	Nodes    int
	Models   int
}

// Index is an in-memory, concurrency-safe, incrementally updated store of
// everything selection decides from, with the indexes that make a decision
// fast: runtimes by scope and format name, classes by name with the set of
// nodes each one discovers, and per-node used accelerator counts. Writers
// take the write lock briefly; decisions share the read lock.
type Index struct {
	mu sync.RWMutex

	// runtimes by key: "<namespace>/<name>" for ServingRuntimes and
	// "/<name>" for ClusterServingRuntimes (namespaces are never empty).
	runtimes map[string]*runtimeEntry
	// byFormat: scope ("" for the cluster) + "\x00" + lower-case format name
	// → the runtimes that list it, sorted by explanation line prefix
	// ("<Kind>/<name>: "). A decision reads tens of runtimes, not
	// thousands, and explains them in order without sorting.
	byFormat map[string][]*runtimeEntry

	models map[string]*modelEntry // same key scheme as runtimes

	classes map[string]*classEntry
	// classList is classes sorted by explanation line prefix
	// ("AcceleratorClass/<name>: "), rebuilt when a class changes (rare), so
	// a decision never sorts 200 classes and writes their lines in order.
	classList []*classEntry
	// classResources counts how many classes name each resource, so that a
	// pod's accelerator need also recognises vendor resources classes add.
	classResources map[corev1.ResourceName]int

	nodes map[string]*nodeEntry
	// labelGen changes whenever the set of nodes or any node's labels
	// change; it invalidates selCache.
	labelGen atomic.Uint64
	selCache selectorCache
	nodeUsed map[string]map[corev1.ResourceName]int64 // by node name; survives node deletes and early pods
	pods     map[string]podUsage

	// headroomMilli is the fit headroom × 1000 (SetFitHeadroom).
	headroomMilli int64
}

type nodeEntry struct {
	info    NodeInfo
	classes []string // names of classes whose discovery matches this node
}

type podUsage struct {
	node     string
	requests map[corev1.ResourceName]int64
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{
		runtimes:       map[string]*runtimeEntry{},
		byFormat:       map[string][]*runtimeEntry{},
		models:         map[string]*modelEntry{},
		classes:        map[string]*classEntry{},
		classResources: map[corev1.ResourceName]int{},
		nodes:          map[string]*nodeEntry{},
		nodeUsed:       map[string]map[corev1.ResourceName]int64{},
		pods:           map[string]podUsage{},
		headroomMilli:  int64(DefaultFitHeadroom * 1000),
	}
}

func objKey(namespace, name string) string { return namespace + "/" + name }

func formatKey(scope, lowerName string) string { return scope + "\x00" + lowerName }

// UpsertServingRuntime adds or replaces a namespaced runtime.
func (x *Index) UpsertServingRuntime(o *v1beta1.ServingRuntime) {
	if o == nil {
		return
	}
	c := o.DeepCopy()
	e := compileRuntime(KindServingRuntime, c.Namespace, c.Name, c.CreationTimestamp.Time, &c.Spec)
	e.labels = c.Labels
	x.putRuntime(e)
}

// DeleteServingRuntime removes a namespaced runtime.
func (x *Index) DeleteServingRuntime(namespace, name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropRuntimeLocked(objKey(namespace, name))
}

// UpsertClusterServingRuntime adds or replaces a cluster runtime.
func (x *Index) UpsertClusterServingRuntime(o *v1beta1.ClusterServingRuntime) {
	if o == nil {
		return
	}
	c := o.DeepCopy()
	e := compileRuntime(KindClusterServingRuntime, "", c.Name, c.CreationTimestamp.Time, &c.Spec)
	e.labels = c.Labels
	x.putRuntime(e)
}

// DeleteClusterServingRuntime removes a cluster runtime.
func (x *Index) DeleteClusterServingRuntime(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropRuntimeLocked(objKey("", name))
}

func (x *Index) putRuntime(e *runtimeEntry) {
	x.mu.Lock()
	defer x.mu.Unlock()
	key := objKey(e.namespace, e.name)
	x.dropRuntimeLocked(key)
	x.runtimes[key] = e
	for _, n := range e.formatNames() {
		fk := formatKey(e.namespace, n)
		b := x.byFormat[fk]
		i, _ := slices.BinarySearchFunc(b, e.linePrefix, func(r *runtimeEntry, p string) int { return strings.Compare(r.linePrefix, p) })
		x.byFormat[fk] = slices.Insert(b, i, e)
	}
}

func (x *Index) dropRuntimeLocked(key string) {
	old, ok := x.runtimes[key]
	if !ok {
		return
	}
	delete(x.runtimes, key)
	for _, n := range old.formatNames() {
		fk := formatKey(old.namespace, n)
		b := x.byFormat[fk]
		if i, found := slices.BinarySearchFunc(b, old.linePrefix, func(r *runtimeEntry, p string) int { return strings.Compare(r.linePrefix, p) }); found {
			b = slices.Delete(b, i, i+1)
		}
		if len(b) == 0 {
			delete(x.byFormat, fk)
		} else {
			x.byFormat[fk] = b
		}
	}
}

// UpsertBaseModel adds or replaces a namespaced model. The index keeps its
// merged view (spec over status.discovered) and whether it awaits metadata,
// so it must be fed whole objects, status included.
func (x *Index) UpsertBaseModel(o *v1beta1.BaseModel) {
	if o == nil {
		return
	}
	c := o.DeepCopy()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.models[objKey(c.Namespace, c.Name)] = compileObject(KindBaseModel, &c.ObjectMeta, c.Spec, c.Status)
}

// DeleteBaseModel removes a namespaced model.
func (x *Index) DeleteBaseModel(namespace, name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.models, objKey(namespace, name))
}

// UpsertClusterBaseModel adds or replaces a cluster model, as
// UpsertBaseModel does.
func (x *Index) UpsertClusterBaseModel(o *v1beta1.ClusterBaseModel) {
	if o == nil {
		return
	}
	c := o.DeepCopy()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.models[objKey("", c.Name)] = compileObject(KindClusterBaseModel, &c.ObjectMeta, c.Spec, c.Status)
}

// DeleteClusterBaseModel removes a cluster model.
func (x *Index) DeleteClusterBaseModel(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.models, objKey("", name))
}

// UpsertAcceleratorClass adds or replaces a class and re-discovers its nodes.
func (x *Index) UpsertAcceleratorClass(o *v1beta1.AcceleratorClass) {
	if o == nil {
		return
	}
	e := compileClass(o.DeepCopy())
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropClassLocked(e.name)
	x.classes[e.name] = e
	for _, r := range e.obj.Spec.Resources {
		x.classResources[corev1.ResourceName(r.Name)]++
	}
	for _, n := range x.nodes {
		if e.matchesNode(n.info) {
			e.nodes[n.info.Name] = n
			n.classes = append(n.classes, e.name)
			if n.info.Ready {
				x.countNode(e, n, 1)
			}
		}
	}
	x.rebuildClassListLocked()
}

func (x *Index) rebuildClassListLocked() {
	x.classList = x.classList[:0]
	for _, c := range x.classes {
		x.classList = append(x.classList, c)
	}
	byStrategy := slices.Clone(x.classList)
	for i, s := range strategiesByIndex {
		slices.SortFunc(byStrategy, func(a, b *classEntry) int { return strategyOrder(s, a, b) })
		for r, c := range byStrategy {
			c.rank[i] = r
		}
	}
	sort.Slice(x.classList, func(i, j int) bool { return x.classList[i].linePrefix < x.classList[j].linePrefix })
}

// account adds a node's free accelerators to the histograms of its
// classes; unaccount removes them. Every change to a node's readiness,
// allocatable or usage is wrapped in the pair, so the histograms always
// equal a fresh count and a decision reads them instead of the nodes.
func (x *Index) account(n *nodeEntry, delta int32) {
	if n == nil || !n.info.Ready {
		return
	}
	for _, name := range n.classes {
		if c := x.classes[name]; c != nil {
			x.countNode(c, n, delta)
		}
	}
}

// countNode adds (delta +1) or removes (-1) a Ready node's free and
// allocatable accelerators to or from a class's counts.
func (x *Index) countNode(c *classEntry, n *nodeEntry, delta int32) {
	c.addFree(x.free(n, c.histRes), delta)
	c.allocTotal += int64(delta) * n.info.Allocatable[c.histRes]
}

// DeleteAcceleratorClass removes a class.
func (x *Index) DeleteAcceleratorClass(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropClassLocked(name)
}

func (x *Index) dropClassLocked(name string) {
	old, ok := x.classes[name]
	if !ok {
		return
	}
	delete(x.classes, name)
	for _, r := range old.obj.Spec.Resources {
		rn := corev1.ResourceName(r.Name)
		if x.classResources[rn]--; x.classResources[rn] <= 0 {
			delete(x.classResources, rn)
		}
	}
	for _, n := range old.nodes {
		n.classes = removeString(n.classes, name)
	}
	x.rebuildClassListLocked()
}

// UpsertNode adds or replaces a node. Class membership is recomputed only
// when the labels changed, so status heartbeats stay cheap.
func (x *Index) UpsertNode(info NodeInfo) {
	info = copyNodeInfo(info)
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.nodes[info.Name]; ok {
		if maps.Equal(old.info.Labels, info.Labels) {
			x.account(old, -1)
			old.info = info
			x.account(old, +1)
			return
		}
		x.dropNodeLocked(info.Name)
	}
	x.labelGen.Add(1)
	n := &nodeEntry{info: info}
	x.nodes[info.Name] = n
	for _, c := range x.classes {
		if c.matchesNode(info) {
			c.nodes[info.Name] = n
			n.classes = append(n.classes, c.name)
		}
	}
	x.account(n, +1)
}

// DeleteNode removes a node.
func (x *Index) DeleteNode(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropNodeLocked(name)
}

func (x *Index) dropNodeLocked(name string) {
	n, ok := x.nodes[name]
	if !ok {
		return
	}
	x.account(n, -1)
	x.labelGen.Add(1)
	delete(x.nodes, name)
	for _, c := range n.classes {
		if ce := x.classes[c]; ce != nil {
			delete(ce.nodes, name)
		}
	}
}

// SetPodUsage records the accelerator requests of a bound, non-terminated
// pod (replacing what was recorded for the same key).
func (x *Index) SetPodUsage(podKey, nodeName string, requests map[corev1.ResourceName]int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropPodLocked(podKey)
	if nodeName == "" {
		return
	}
	n := x.nodes[nodeName]
	x.account(n, -1)
	defer x.account(n, +1)
	u := podUsage{node: nodeName, requests: map[corev1.ResourceName]int64{}}
	used := x.nodeUsed[nodeName]
	if used == nil {
		used = map[corev1.ResourceName]int64{}
		x.nodeUsed[nodeName] = used
	}
	for r, q := range requests {
		if q <= 0 {
			continue
		}
		u.requests[r] = q
		used[r] += q
	}
	x.pods[podKey] = u
}

// DeletePodUsage forgets a pod (deleted, finished or unbound).
func (x *Index) DeletePodUsage(podKey string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropPodLocked(podKey)
}

func (x *Index) dropPodLocked(podKey string) {
	u, ok := x.pods[podKey]
	if !ok {
		return
	}
	delete(x.pods, podKey)
	n := x.nodes[u.node]
	x.account(n, -1)
	defer x.account(n, +1)
	used := x.nodeUsed[u.node]
	for r, q := range u.requests {
		if used[r] -= q; used[r] <= 0 {
			delete(used, r)
		}
	}
	if len(used) == 0 {
		delete(x.nodeUsed, u.node)
	}
}

// Stats counts what the index holds.
func (x *Index) Stats() Stats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return Stats{Runtimes: len(x.runtimes), Classes: len(x.classes), Nodes: len(x.nodes), Models: len(x.models)}
}

// free is what is left of a resource on a node.
func (x *Index) free(n *nodeEntry, r corev1.ResourceName) int64 {
	f := n.info.Allocatable[r] - x.nodeUsed[n.info.Name][r]
	if f < 0 {
		return 0
	}
	return f
}

func copyNodeInfo(in NodeInfo) NodeInfo {
	out := NodeInfo{Name: in.Name, Ready: in.Ready, Labels: make(map[string]string, len(in.Labels)), Allocatable: make(map[corev1.ResourceName]int64, len(in.Allocatable))}
	for k, v := range in.Labels {
		out.Labels[k] = v
	}
	for k, v := range in.Allocatable {
		out.Allocatable[k] = v
	}
	return out
}

func removeString(list []string, s string) []string {
	out := list[:0]
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}

// timeNewer orders newest first; used by the runtime order.
var timeZero time.Time

func timeNewer(a, b time.Time) int {
	switch {
	case a.After(b):
		return -1
	case b.After(a):
		return 1
	}
	return 0
}
