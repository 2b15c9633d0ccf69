package handlers

import (
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
)

// composeCache remembers, per version of a component's inputs, its
// revision (merge.Revision) and the plan of each group role and pairing
// (merge.NewPlan). Every pod of a component has the same revision and is
// composed from the same plan; hashing the inputs or building the plan
// costs more than laying the plan over a pod, so a scale-up of many pods
// does each once. The key holds the identity of each input version: the
// service's UID and resourceVersion, and the runtime and class objects
// themselves (the index replaces them on every update, so a pointer is a
// version), the profiles' and the model's resourceVersions. Inputs that
// nothing identifies (no resourceVersion: not from the API server) are
// never cached.
type composeCache struct {
	mu sync.Mutex
	m  map[revisionKey]*composed
}

type revisionKey struct {
	service, component string
	runtime            *v1beta1.ServingRuntimeSpec
	class              *v1beta1.AcceleratorClass
	profiles           string
	model              string // kind/namespace/name@resourceVersion, "" for none
}

// composed is what one key's inputs give; written under the cache's lock.
type composed struct {
	rev   string
	plans map[planKey]*merge.Plan
}

// planKey is what a plan is built for besides the inputs: the group role
// and the pairing its templates render ({{.Pairing}}).
type planKey struct{ role, pairing string }

// composeCacheSize bounds the number of input versions kept; past it the
// cache starts over.
const composeCacheSize = 4096

// compose completes pod from in (as merge.ComposePod) and returns the
// revision of in (as merge.Revision).
func (c *composeCache) compose(in merge.Input, model selection.Model, pod *corev1.Pod) (string, error) {
	k, ok := cacheKey(in, model)
	if !ok {
		if err := merge.ComposePod(in, pod); err != nil {
			return "", err
		}
		return merge.Revision(in)
	}
	pl, err := c.plan(k, in)
	if err != nil {
		return "", err // not cached: the denial is rare and says why
	}
	if err := pl.Compose(pod, in.Group); err != nil {
		return "", err
	}
	return c.revision(k, in)
}

func (c *composeCache) entry(k revisionKey) *composed {
	if c.m == nil || len(c.m) >= composeCacheSize {
		c.m = make(map[revisionKey]*composed) // simple bound: start over
	}
	e := c.m[k]
	if e == nil {
		e = &composed{}
		c.m[k] = e
	}
	return e
}

func (c *composeCache) plan(k revisionKey, in merge.Input) (*merge.Plan, error) {
	c.mu.Lock()
	pk := planKey{in.Group.Role, in.Group.Pairing}
	pl := c.entry(k).plans[pk]
	c.mu.Unlock()
	if pl != nil {
		return pl, nil
	}
	pl, err := merge.NewPlan(in)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	e := c.entry(k)
	if e.plans == nil {
		e.plans = map[planKey]*merge.Plan{}
	}
	e.plans[pk] = pl
	c.mu.Unlock()
	return pl, nil
}

func (c *composeCache) revision(k revisionKey, in merge.Input) (string, error) {
	c.mu.Lock()
	rev := c.entry(k).rev
	c.mu.Unlock()
	if rev != "" {
		return rev, nil
	}
	rev, err := merge.Revision(in)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.entry(k).rev = rev
	c.mu.Unlock()
	return rev, nil
}

// cacheKey identifies the versions of in's inputs; ok is false when
// something lacks a version.
func cacheKey(in merge.Input, model selection.Model) (revisionKey, bool) {
	mv, ok := modelVersion(in, model)
	if in.Service.ResourceVersion == "" || !ok {
		return revisionKey{}, false
	}
	return revisionKey{
		service:   string(in.Service.UID) + "/" + in.Service.ResourceVersion,
		component: in.Component, runtime: in.Runtime, class: in.AcceleratorClass,
		profiles: profileVersions(in.Profiles), model: mv,
	}, true
}

// modelVersion identifies the version of the mounted model; ok is false
// when nothing does (an object without a resourceVersion).
func modelVersion(in merge.Input, m selection.Model) (string, bool) {
	if in.Model == nil {
		return "", true
	}
	if m.ResourceVersion == "" {
		return "", false
	}
	return m.Kind + "/" + m.Namespace + "/" + m.Name + "@" + m.ResourceVersion, true
}

// profileVersions identifies the cached profiles' versions, in name order.
func profileVersions(profiles map[string]*v1beta1.ClusterEngineRuntimeProfile) string {
	if len(profiles) == 0 {
		return ""
	}
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('@')
		b.WriteString(profiles[n].ResourceVersion)
		b.WriteByte(',')
	}
	return b.String()
}
