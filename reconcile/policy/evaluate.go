package policy

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	policyset "github.com/berthdev/berth/policy"
)

// policyService is a pinned service as policy checks it: the pinned
// decision read back as the service sync reads it (resolve), composed
// with merge.ComposeService, and its accelerators.
type policyService struct {
	key     string
	created int64 // creation time (unix seconds): the order of admission
	// refused: a ResourceQuota refuses its pods (QuotaExceeded=True); it
	// is counted after the services whose pods the quota admitted.
	refused bool
	in      policyset.Service
	acc     map[corev1.ResourceName]int64
}

// evaluate is one policy's verdicts: for every service it selects (by
// key), its violations of this policy, as admission words them. Services
// are checked in each selected namespace with the policy compiled alone
// (the rules of one policy never depend on another's, so its violations
// are those admission finds with every policy, at a cost that does not
// grow with the number of policies).
func (p *Controller) evaluate(sp *policyv1alpha1.ServingPolicy, namespaces []*corev1.Namespace) (map[string][]string, error) {
	set := policyset.Compile([]*policyv1alpha1.ServingPolicy{sp}, policyset.Options{ExemptNamespaces: []string{p.opts.Namespace}})
	out := map[string][]string{}
	for _, ns := range namespaces {
		if !namespaceSelected(sp, ns, p.exempt) {
			continue
		}
		svcs, err := p.objects.services.InferenceServices(ns.Name).List(labels.Everything())
		if err != nil {
			return nil, err
		}
		var resolved []policyService
		for _, s := range svcs {
			if ps, ok := p.policyService(s, ns.Labels); ok {
				resolved = append(resolved, ps)
			}
		}
		for k, v := range namespaceVerdicts(set, sp.Name, resolved) {
			out[k] = v
		}
	}
	return out, nil
}

// namespaceVerdicts checks the pinned services of one namespace against
// the set and keeps the violations of one policy, for the services it
// selects. Services are taken in the order they were created (then by
// name), each with the accelerators of those before it in use: a namespace
// budget is reported on the services admitted past it, as admission would
// have denied them had they come one at a time. Services a ResourceQuota
// refuses come last: after a burst admission could not serialise, the
// services the quota let run are within the budget and those it refused
// are past it.
func namespaceVerdicts(set *policyset.Set, name string, svcs []policyService) map[string][]string {
	svcs = slices.Clone(svcs)
	slices.SortStableFunc(svcs, func(a, b policyService) int {
		return cmp.Or(compareBool(a.refused, b.refused), cmp.Compare(a.created, b.created), cmp.Compare(a.key, b.key))
	})
	out := map[string][]string{}
	inUse := map[corev1.ResourceName]int64{}
	for _, s := range svcs {
		if slices.Contains(set.For(s.in.Subject), name) {
			in := s.in
			in.NamespaceInUse = cloneUse(inUse)
			msgs := []string{}
			for _, v := range set.CheckService(in) {
				if v.Policy == name {
					msgs = append(msgs, v.Message)
				}
			}
			out[s.key] = msgs
		}
		for r, n := range s.acc {
			inUse[r] += n
		}
	}
	return out
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func cloneUse(m map[corev1.ResourceName]int64) map[corev1.ResourceName]int64 {
	out := make(map[corev1.ResourceName]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// policyService reads a service's pinned decision back (resolve, as the
// service sync does) and composes it; ok is false for a service that is
// not pinned, does not resolve, or is being deleted: it is neither
// checked nor counted.
func (p *Controller) policyService(isvc *v1beta1.InferenceService, nsLabels map[string]string) (policyService, bool) {
	if isvc.DeletionTimestamp != nil {
		return policyService{}, false
	}
	dec, ok := p.objects.resolve(isvc)
	if !ok {
		return policyService{}, false
	}
	roles, _ := merge.ComposeService(merge.ServiceInput{Service: isvc, RuntimeKind: dec.pin.RuntimeKind, RuntimeName: dec.pin.RuntimeName,
		Runtime: dec.runtime, ClassFor: dec.classFor, Profiles: dec.profiles, Model: dec.model.Mount()})
	classes := map[string]*v1beta1.AcceleratorClass{}
	var classList []*v1beta1.AcceleratorClass
	if dec.class != nil {
		classes[v1beta1.ComponentEngine] = dec.class
		classList = append(classList, dec.class)
	}
	if dec.decoderClass != nil {
		classes[v1beta1.ComponentDecoder] = dec.decoderClass
		classList = append(classList, dec.decoderClass)
	}
	svcLabels := isvc.Labels
	if svcLabels == nil {
		svcLabels = map[string]string{}
	}
	in := policyset.Service{
		Subject: policyset.Subject{Namespace: isvc.Namespace, NamespaceLabels: nsLabels, ServiceLabels: svcLabels},
		Service: isvc, RuntimeKind: dec.pin.RuntimeKind, RuntimeName: dec.pin.RuntimeName, RuntimeLabels: dec.runtimeLabels,
		RuntimeSpec: dec.runtime, Classes: classes, Roles: roles,
	}
	return policyService{key: isvc.Namespace + "/" + isvc.Name, created: isvc.CreationTimestamp.Unix(), in: in,
		refused: meta.IsStatusConditionTrue(isvc.Status.Conditions, ConditionQuotaExceeded),
		acc:     policyset.Accelerators(roles, classList...)}, true
}
