package pin

import (
	"sync"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// Model is the model a service serves, as InputFor feeds it to merge:
// its identity, its spec and its status.discovered. The rest of the
// model's status (conditions, generation) never reaches the pods or the
// revision, whichever cache it came from.
type Model struct {
	Kind      string // "BaseModel" or "ClusterBaseModel"
	Namespace string // "" for a ClusterBaseModel
	Name      string
	// Spec is what the admin wrote, or already the effective spec
	// (v1beta1.EffectiveModelSpec fills only what is unset, so filling
	// twice changes nothing).
	Spec       v1beta1.BaseModelSpec
	Discovered *v1beta1.ModelMetadata // status.discovered
	// ResourceVersion of the model object, "" when nothing identifies its
	// version; a MountCache mounts each version once.
	ResourceVersion string
}

// ModelOf is the Model of a BaseModel (namespace set) or a
// ClusterBaseModel (namespace "") from its spec and status.
func ModelOf(kind, namespace, name string, spec v1beta1.BaseModelSpec, status v1beta1.ModelStatus) *Model {
	return &Model{Kind: kind, Namespace: namespace, Name: name, Spec: spec, Discovered: status.Discovered}
}

// Mount is the model as the pods mount it; nil for a nil model or one of
// another kind (an inline model, which pods do not mount).
func (m *Model) Mount() *merge.ModelMount {
	if m == nil || (m.Kind != merge.KindBaseModel && m.Kind != merge.KindClusterBaseModel) {
		return nil
	}
	return merge.NewModelMount(m.Kind, m.Namespace, m.Name, m.Spec, v1beta1.ModelStatus{Discovered: m.Discovered})
}

// MountCache keeps the mount of each model version (kind, namespace,
// name and ResourceVersion), so that the pods of a model are not each
// given a mount built afresh. A model without a ResourceVersion is
// mounted every time. The mounts it hands out are shared: merge reads
// them and never writes them. The zero value is ready; it is safe for
// concurrent use.
type MountCache struct {
	mu sync.Mutex
	m  map[mountKey]*merge.ModelMount
}

type mountKey struct{ kind, namespace, name, version string }

// mountCacheSize bounds the versions kept; past it the cache starts over.
const mountCacheSize = 1024

// Mount is m.Mount(), the same pointer for the same version of m.
func (c *MountCache) Mount(m *Model) *merge.ModelMount {
	if c == nil || m == nil || m.ResourceVersion == "" {
		return m.Mount()
	}
	k := mountKey{m.Kind, m.Namespace, m.Name, m.ResourceVersion}
	c.mu.Lock()
	mm, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return mm
	}
	mm = m.Mount()
	c.mu.Lock()
	if c.m == nil || len(c.m) >= mountCacheSize {
		c.m = make(map[mountKey]*merge.ModelMount)
	}
	c.m[k] = mm
	c.mu.Unlock()
	return mm
}

// Objects are what a pin names, read back by the caller from its cache.
type Objects struct {
	Runtime *v1beta1.ServingRuntimeSpec
	// Class is the component's class, named by Pin.ClassFor(component);
	// nil when it names none.
	Class    *v1beta1.AcceleratorClass
	Profiles map[string]*v1beta1.ClusterEngineRuntimeProfile // by name
	Model    *Model                                          // nil when the service names none
	// Mounts, when set, mounts Model once per version (MountCache).
	Mounts *MountCache
}

// InputFor is the merge input of one component of isvc under pin p: the
// component's view of the service (its acceleratorOverride in place of
// spec.acceleratorSelector), the pinned runtime and the objects read back.
// The pod webhook sets Group for the pod it composes; merge.Revision of
// the result is the component's revision, for the pod webhook and the
// reconciler alike.
func InputFor(isvc *v1beta1.InferenceService, component string, p Pin, o Objects) merge.Input {
	return merge.Input{
		Service:          isvc.ForComponent(component),
		Component:        component,
		RuntimeKind:      p.RuntimeKind,
		RuntimeName:      p.RuntimeName,
		Runtime:          o.Runtime,
		AcceleratorClass: o.Class,
		Profiles:         o.Profiles,
		Model:            o.Mounts.Mount(o.Model),
	}
}
