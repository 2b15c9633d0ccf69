package handlers

import (
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/policy"
	"github.com/berthdev/berth/selection"
)

// selectIndex is Index.Select with the ServingPolicies that apply to the
// service as selection's gate: a class or runtime a policy forbids loses,
// with the policy named in the explanation. Without one, plain Select.
func (h *InferenceServices) selectIndex(isvc *v1beta1.InferenceService) (*selection.Decision, error) {
	set := h.Policies.set()
	if set.Len() == 0 {
		return h.Index.Select(isvc)
	}
	sub := h.Policies.subject(isvc.Namespace, isvc.Labels, true)
	if len(set.For(sub)) == 0 {
		return h.Index.Select(isvc)
	}
	g := set.Gate(sub, isvc, h.namespaceInUse(isvc.Namespace, isvc.Name))
	return h.Index.SelectWith(isvc, selection.SelectOptions{Gate: g})
}

// policyViolations checks the service's decision d and its composed pods
// (roles) against the policies that apply to it.
func (h *InferenceServices) policyViolations(isvc *v1beta1.InferenceService, d *choice, roles []merge.ComposedRole) []policy.Violation {
	set := h.Policies.set()
	if set.Len() == 0 {
		return nil
	}
	sub := h.Policies.subject(isvc.Namespace, isvc.Labels, true)
	if len(set.For(sub)) == 0 {
		return nil
	}
	classes := map[string]*v1beta1.AcceleratorClass{}
	if c := d.AcceleratorClass; c != nil {
		classes[v1beta1.ComponentEngine] = c
	}
	if d.decoder != nil && d.decoder.AcceleratorClass != nil {
		classes[v1beta1.ComponentDecoder] = d.decoder.AcceleratorClass
	}
	return set.CheckService(policy.Service{
		Subject:        sub,
		Service:        isvc,
		RuntimeKind:    d.Runtime.Kind,
		RuntimeName:    d.Runtime.Name,
		RuntimeSpec:    d.Runtime.Spec,
		RuntimeLabels:  h.Policies.runtimeLabels(d.Runtime),
		Classes:        classes,
		Roles:          roles,
		NamespaceInUse: h.namespaceInUse(isvc.Namespace, isvc.Name),
	})
}

// checkPolicies is the policy verdict on a decided service: its
// violations, and on UPDATE those of the stored object under the same
// decision, ratcheted (ratchetViolations). Warnings of the ratchet come
// first.
func (h *InferenceServices) checkPolicies(isvc, old *v1beta1.InferenceService, d *choice, roles []merge.ComposedRole) (verdict, []string) {
	vs := h.policyViolations(isvc, d, roles)
	if len(vs) == 0 {
		return verdict{}, nil
	}
	var ratcheted []string
	if old != nil {
		oldRoles, _ := merge.ComposeService(h.serviceInput(old, d))
		grew := total(policy.Accelerators(roles, d.AcceleratorClass, d.decoderClass())) >
			total(policy.Accelerators(oldRoles, d.AcceleratorClass, d.decoderClass()))
		vs, ratcheted = ratchetViolations(vs, h.policyViolations(old, d, oldRoles), grew)
	}
	return h.Policies.enforce(vs), ratcheted
}

func total(m map[corev1.ResourceName]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// decoderClass is the decoder's own class, nil when it has none.
func (c *choice) decoderClass() *v1beta1.AcceleratorClass {
	if c.decoder == nil {
		return nil
	}
	return c.decoder.AcceleratorClass
}

// policyResponse answers a decided service: denied by the policy
// violations that deny, else allowed with warnings (the handler's, then
// the policies'), with audit annotations either way.
func (h *InferenceServices) policyResponse(req *admissionv1.AdmissionRequest, isvc, old *v1beta1.InferenceService, d *choice, roles []merge.ComposedRole, warnings []string) *admissionv1.AdmissionResponse {
	v, ratcheted := h.checkPolicies(isvc, old, d, roles)
	return v.response("InferenceService", v1beta1.SchemeGroupVersion.Group, isvc.Name, objectName(req), append(warnings, ratcheted...))
}

// namespaceInUse sums the accelerators of the InferenceServices pinned in
// namespace, except the one named exclude (the service being admitted),
// each counted as policy.Accelerators counts its composed pods.
func (h *InferenceServices) namespaceInUse(namespace, exclude string) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	if h.Services == nil {
		return out
	}
	all, err := h.Services.InferenceServices(namespace).List(everything)
	if err != nil {
		return out
	}
	for _, s := range all {
		if s.Name == exclude {
			continue
		}
		for r, n := range h.usage.of(s, h.serviceAccelerators) {
			out[r] += n
		}
	}
	return out
}

// serviceAccelerators composes a stored, pinned service under its pin and
// counts its accelerators; nil when unpinned or the pin no longer
// resolves (nothing of it can be created then).
func (h *InferenceServices) serviceAccelerators(s *v1beta1.InferenceService) map[corev1.ResourceName]int64 {
	p := pinOf(s)
	if p.runtime == "" {
		return nil
	}
	c, err := h.resolvePinned(s, p)
	if err != nil {
		return nil
	}
	roles, _ := merge.ComposeService(h.serviceInput(s, c))
	return policy.Accelerators(roles, c.AcceleratorClass, c.decoderClass())
}

// usageCache memoises each stored service's accelerators by its UID, its
// generation (spec changes) and its pin annotations, so an admission does
// not compose every service of the namespace again. A service's entry is
// replaced when any of them changes; the map starts over past
// usageCacheSize entries (deleted services).
type usageCache struct {
	mu sync.Mutex
	m  map[types.UID]usageEntry
}

type usageEntry struct {
	generation int64
	pin        pinned
	use        map[corev1.ResourceName]int64
}

const usageCacheSize = 4096

func (c *usageCache) of(s *v1beta1.InferenceService, compute func(*v1beta1.InferenceService) map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
	if s.UID == "" {
		return compute(s)
	}
	p := pinOf(s)
	c.mu.Lock()
	e, ok := c.m[s.UID]
	c.mu.Unlock()
	if ok && e.generation == s.Generation && e.pin == p {
		return e.use
	}
	use := compute(s)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= usageCacheSize {
		c.m = map[types.UID]usageEntry{}
	}
	c.m[s.UID] = usageEntry{generation: s.Generation, pin: p, use: use}
	c.mu.Unlock()
	return use
}
