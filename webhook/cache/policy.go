package cache

import (
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	policylisters "github.com/berthdev/berth/api/client/listers/policy/v1alpha1"
	v1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	"github.com/berthdev/berth/policy"
)

// Policies holds the ServingPolicies in force, compiled (policy.Set), and
// the labels of every namespace, which the policies' namespaceSelectors
// read. The set is compiled again whenever a policy is added, changed or
// deleted, and swapped atomically: an admission reads one pointer, never
// compiles, and sees either the old set or the new one whole.
type Policies struct {
	lister     policylisters.ServingPolicyLister
	namespaces corelisters.NamespaceLister
	exempt     []string

	mu      sync.Mutex // serialises rebuilds
	current atomic.Pointer[policy.Set]
}

// Set is the compiled set in force (nil before the first policy event:
// no policy).
func (p *Policies) Set() *policy.Set { return p.current.Load() }

// NamespaceLabels are the labels of a namespace, nil when the cache has
// not seen it. The map is shared: read only.
func (p *Policies) NamespaceLabels(name string) map[string]string {
	ns, err := p.namespaces.Get(name)
	if err != nil {
		return nil
	}
	return ns.Labels
}

// rebuild compiles every cached policy into a new set and swaps it in.
// Rebuilds are serialised, and each lists the store as it is then, so the
// last one reflects the last event.
func (p *Policies) rebuild() {
	p.mu.Lock()
	defer p.mu.Unlock()
	all, err := p.lister.List(labels.Everything())
	if err != nil {
		return // a cache lister does not fail
	}
	p.current.Store(policy.Compile(all, policy.Options{ExemptNamespaces: p.exempt}))
}

// newPolicies registers the policy and namespace informers; exempt are the
// namespaces no policy applies to besides kube-system (berth's own).
func newPolicies(policies toolscache.SharedIndexInformer, lister policylisters.ServingPolicyLister,
	namespaces toolscache.SharedIndexInformer, exempt []string) (*Policies, error) {
	p := &Policies{lister: lister, namespaces: corelisters.NewNamespaceLister(namespaces.GetIndexer()), exempt: exempt}
	p.current.Store(policy.Compile(nil, policy.Options{ExemptNamespaces: exempt}))
	rebuild := func(any) { p.rebuild() }
	if _, err := policies.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: rebuild, DeleteFunc: rebuild,
		UpdateFunc: func(was, is any) {
			a, okA := was.(*v1alpha1.ServingPolicy)
			b, okB := is.(*v1alpha1.ServingPolicy)
			if okA && okB && a.Generation == b.Generation && a.Generation != 0 {
				return // a status write or a resync: the spec is the same
			}
			p.rebuild()
		},
	}); err != nil {
		return nil, fmt.Errorf("register event handler: %w", err)
	}
	if err := policies.SetTransform(stripPolicy); err != nil {
		return nil, err
	}
	if err := namespaces.SetTransform(stripNamespace); err != nil {
		return nil, err
	}
	return p, nil
}

// stripPolicy drops what compiling a policy does not read: its status
// (written by the reconciler on every audit) and managed fields.
func stripPolicy(obj any) (any, error) {
	sp, ok := obj.(*v1alpha1.ServingPolicy)
	if !ok {
		return obj, nil
	}
	sp.ManagedFields = nil
	sp.Status = v1alpha1.ServingPolicyStatus{}
	return sp, nil
}

// stripNamespace keeps a namespace's name and labels.
func stripNamespace(obj any) (any, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return obj, nil
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns.Name, UID: ns.UID, ResourceVersion: ns.ResourceVersion, Labels: ns.Labels,
	}}, nil
}
