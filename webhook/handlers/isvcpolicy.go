package handlers

import (
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/policy"
	"github.com/berthdev/berth/selection"
)

// selectIndex is Index.Select with the ServingPolicies that apply to the
// service as selection's gate: a class or runtime a policy forbids loses,
// with the policy named in the explanation. Without one, plain Select.
func (h *InferenceServices) selectIndex(isvc *v1beta1.InferenceService) (*selection.Decision, error) {
	set := h.Policies.set()
	if set.Len() == 0 || set.Exempt(isvc.Namespace) {
		return h.Index.Select(isvc)
	}
	// No For first: the gate finds the applicable policies itself (a gate
	// of none allows everything), and the namespace's use is remembered.
	sub := h.Policies.subject(isvc.Namespace, isvc.Labels, true)
	g := set.Gate(sub, isvc, h.namespaceInUse(isvc.Namespace, isvc.Name))
	return h.Index.SelectWith(isvc, selection.SelectOptions{Gate: g})
}

// policyViolations checks the service's decision d and its composed pods
// (roles) against the policies that apply to it.
func (h *InferenceServices) policyViolations(isvc *v1beta1.InferenceService, d *choice, roles []merge.ComposedRole) []policy.Violation {
	set := h.Policies.set()
	if set.Len() == 0 || set.Exempt(isvc.Namespace) {
		return nil
	}
	sub := h.Policies.subject(isvc.Namespace, isvc.Labels, true)
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
		RuntimeLabels:  d.Runtime.Labels,
		Classes:        classes,
		Roles:          roles,
		NamespaceInUse: h.namespaceInUse(isvc.Namespace, isvc.Name),
	})
}

// checkPolicies is the policy verdict on a decided service: its
// violations, and on UPDATE those the stored object has under its own pin,
// ratcheted (ratchetViolations). A stored object without a pin, or whose
// pin no longer resolves, ratchets nothing. Warnings of the ratchet are
// returned apart.
func (h *InferenceServices) checkPolicies(isvc, old *v1beta1.InferenceService, d *choice, roles []merge.ComposedRole) (verdict, []string) {
	vs := h.policyViolations(isvc, d, roles)
	if len(vs) == 0 {
		return verdict{}, nil
	}
	var ratcheted []string
	if old != nil {
		if od := h.storedDecision(isvc, old, d); od != nil {
			oldRoles, _ := merge.ComposeService(h.serviceInput(old, od))
			grew := total(policy.Accelerators(roles, d.AcceleratorClass, d.decoderClass())) >
				total(policy.Accelerators(oldRoles, od.AcceleratorClass, od.decoderClass()))
			vs, ratcheted = ratchetViolations(vs, h.policyViolations(old, od, oldRoles), grew)
		}
	}
	return h.Policies.enforce(vs), ratcheted
}

// storedDecision is the decision the stored object was pinned to: d when
// the update keeps the pin, else the stored pin re-read (nil when there is
// none or it no longer resolves).
func (h *InferenceServices) storedDecision(isvc, old *v1beta1.InferenceService, d *choice) *choice {
	p := pinOf(old)
	switch {
	case !pin.Pinned(old):
		return nil
	case p == pinOf(isvc):
		return d
	}
	od, err := h.resolvePinned(old, p)
	if err != nil {
		return nil
	}
	return od
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

// requestInUse is one request's namespaceInUse, computed at most once
// (selection's gate and the check of the composed service both read it).
type requestInUse struct {
	namespace, exclude string
	use                map[corev1.ResourceName]int64
}

// forRequest is the handler for one request: a copy that remembers what
// the request computes once (the copy shares everything else).
func (h *InferenceServices) forRequest() *InferenceServices {
	c := *h
	c.inUse = &requestInUse{}
	return &c
}

// namespaceInUse sums the accelerators of the InferenceServices pinned in
// namespace, except the one named exclude (the service being admitted),
// each counted as policy.Accelerators counts its composed pods. The sum is
// remembered for the request, and across requests until the services
// change (ServicesVersion). The map is shared: read only.
func (h *InferenceServices) namespaceInUse(namespace, exclude string) map[corev1.ResourceName]int64 {
	if m := h.inUse; m != nil && m.use != nil && m.namespace == namespace && m.exclude == exclude {
		return m.use
	}
	if h.Services == nil || h.Policies == nil {
		return map[corev1.ResourceName]int64{}
	}
	var version uint64
	versioned := h.ServicesVersion != nil
	if versioned {
		version = h.ServicesVersion()
		if use, ok := h.Policies.usage.namespace(namespace, exclude, version); ok {
			return use
		}
	}
	out := map[corev1.ResourceName]int64{}
	all, err := h.Services.InferenceServices(namespace).List(everything)
	if err != nil {
		return out
	}
	for _, s := range all {
		if s.Name == exclude {
			continue
		}
		for r, n := range h.Policies.usage.of(s, h.serviceAccelerators) {
			out[r] += n
		}
	}
	if versioned {
		h.Policies.usage.rememberNamespace(namespace, exclude, version, out)
	}
	if h.inUse != nil {
		*h.inUse = requestInUse{namespace: namespace, exclude: exclude, use: out}
	}
	return out
}

// serviceAccelerators composes a stored, pinned service under its pin and
// counts its accelerators; nil when unpinned or the pin no longer
// resolves (nothing of it can be created then).
func (h *InferenceServices) serviceAccelerators(s *v1beta1.InferenceService) map[corev1.ResourceName]int64 {
	p := pinOf(s)
	if !pin.Pinned(s) {
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
	// sums are namespaces' sums (without one service) at a version of the
	// services (InferenceServices.ServicesVersion); read only.
	sums map[sumKey]sumEntry
}

type sumKey struct{ namespace, exclude string }

type sumEntry struct {
	version uint64
	use     map[corev1.ResourceName]int64
}

// namespace is the remembered sum of a namespace without exclude, if the
// services have not changed since (version).
func (c *usageCache) namespace(namespace, exclude string, version uint64) (map[corev1.ResourceName]int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.sums[sumKey{namespace, exclude}]
	return e.use, ok && e.version == version
}

// rememberNamespace keeps a namespace's sum at version.
func (c *usageCache) rememberNamespace(namespace, exclude string, version uint64, use map[corev1.ResourceName]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sums == nil || len(c.sums) >= usageCacheSize {
		c.sums = map[sumKey]sumEntry{}
	}
	c.sums[sumKey{namespace, exclude}] = sumEntry{version: version, use: use}
}

type usageEntry struct {
	generation int64
	pin        pin.Pin
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
