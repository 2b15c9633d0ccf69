package handlers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1/validation"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/policy"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/admission"
)

// Runtimes validates ServingRuntimes and ClusterServingRuntimes: each on
// its own (package validation, selection's format checks, merge's
// templates) and against the runtimes of its scope for priority ties.
type Runtimes struct {
	Index    *selection.Index
	Profiles listers.ClusterEngineRuntimeProfileLister
	// Live, when set, lists the runtimes of a scope from the API server for
	// the priority check. Runtime creates and updates are rare, and the
	// informer cache lags: `kubectl apply -f dir/` with two tied runtimes
	// creates the second before the cache has the first. Two creates that
	// are truly concurrent can still both pass (each reads before the other
	// is stored); selection then breaks the tie deterministically (newest
	// creationTimestamp, then name), and the next update of either is told.
	Live *RuntimeLister
	// Retry: waits before looking again for referenced classes and profiles
	// that are missing, for `kubectl apply -f dir/` that creates them a few
	// milliseconds earlier (see InferenceServices.Retry).
	Retry []time.Duration
	// Policies are the ServingPolicies whose image rules the runtime's
	// images must follow (nil: none; see policy.go).
	Policies *PolicySource
}

// RuntimeLister reads runtimes from the API server (a quorum read). Either
// function may be nil: that scope is then checked against the cache.
type RuntimeLister struct {
	Namespaced func(ctx context.Context, namespace string) ([]v1beta1.ServingRuntime, error)
	Cluster    func(ctx context.Context) ([]v1beta1.ClusterServingRuntime, error)
}

// ValidateNamespaced admits a ServingRuntime.
func (h *Runtimes) ValidateNamespaced(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if skip(req) {
		return admission.Allowed()
	}
	var sr, old v1beta1.ServingRuntime
	if deny := decodeObject(req, &sr); deny != nil {
		return deny
	}
	var oldSpec *v1beta1.ServingRuntimeSpec
	if req.Operation == admissionv1.Update {
		if deny := decodeRaw(req, req.OldObject.Raw, "old object", &old); deny != nil {
			return deny
		}
		oldSpec = &old.Spec
	}
	ns := sr.Namespace
	if ns == "" {
		ns = req.Namespace
	}
	return h.validate(ctx, req, runtimeObject{selection.KindServingRuntime, ns, sr.Name}, &sr.Spec, oldSpec)
}

// ValidateCluster admits a ClusterServingRuntime.
func (h *Runtimes) ValidateCluster(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if skip(req) {
		return admission.Allowed()
	}
	var csr, old v1beta1.ClusterServingRuntime
	if deny := decodeObject(req, &csr); deny != nil {
		return deny
	}
	var oldSpec *v1beta1.ServingRuntimeSpec
	if req.Operation == admissionv1.Update {
		if deny := decodeRaw(req, req.OldObject.Raw, "old object", &old); deny != nil {
			return deny
		}
		oldSpec = &old.Spec
	}
	return h.validate(ctx, req, runtimeObject{selection.KindClusterServingRuntime, "", csr.Name}, &csr.Spec, oldSpec)
}

// runtimeObject names the runtime under admission.
type runtimeObject struct{ kind, namespace, name string }

// validate denies what is wrong with spec. On UPDATE an error the stored
// object (old) has too is a warning instead (ratchet): GitOps tools re-apply unchanged runtimes every few
// minutes, and a tie that a later runtime created, or a rule newer than
// the object, must not make those re-applies fail.
func (h *Runtimes) validate(ctx context.Context, req *admissionv1.AdmissionRequest, o runtimeObject, spec, old *v1beta1.ServingRuntimeSpec) *admissionv1.AdmissionResponse {
	peers, warnings := h.peers(ctx, o)
	errs, specWarnings := runtimeErrors(peers, o, spec)
	warnings = append(warnings, specWarnings...)
	warnings = append(warnings, runtimePodWarnings(o, spec)...)
	if old != nil && len(errs) > 0 {
		oldErrs, _ := runtimeErrors(peers, o, old)
		var kept field.ErrorList
		errs, kept = ratchet(errs, oldErrs)
		warnings = append(warnings, keptWarnings(kept, "fix it when you can")...)
	}
	missing := h.missingReferences(spec)
	for _, wait := range h.Retry {
		if len(missing) == 0 || req.Operation != admissionv1.Create {
			break
		}
		time.Sleep(wait)
		missing = h.missingReferences(spec)
	}
	if req.Operation == admissionv1.Create {
		errs = append(errs, missing...)
	} else {
		// On UPDATE a missing reference only warns: the class or profile may
		// be deleted and recreated while the runtime keeps serving.
		for _, m := range missing {
			warnings = append(warnings, causeLine(m))
		}
	}
	sort.Strings(warnings)
	if len(errs) > 0 {
		return invalid(o.kind, o.name, qualified(o.namespace, o.name), errs, dedupe(warnings))
	}
	return h.imagePolicies(o, spec, old).response(o.kind, v1beta1.SchemeGroupVersion.Group, o.name, qualified(o.namespace, o.name), dedupe(warnings))
}

// imagePolicies checks the runtime's images against the ServingPolicies of
// its namespace; a ClusterServingRuntime serves every namespace, so the
// policies that select every namespace apply to it (policy.Set.CheckImages
// with no namespace). On UPDATE a violation of an image the stored runtime
// has too is ratcheted (policy.go).
func (h *Runtimes) imagePolicies(o runtimeObject, spec, old *v1beta1.ServingRuntimeSpec) verdict {
	set := h.Policies.set()
	if set.Len() == 0 {
		return verdict{}
	}
	sub := h.Policies.subject(o.namespace, nil, false)
	vs := set.CheckImages(sub, policy.RuntimeImages(spec))
	var ratcheted []string
	if old != nil && len(vs) > 0 {
		vs, ratcheted = ratchetViolations(vs, set.CheckImages(sub, policy.RuntimeImages(old)), false)
	}
	v := h.Policies.enforce(vs)
	v.warnings = append(ratcheted, v.warnings...)
	return v
}

// liveListTimeout bounds the fresh read of a scope's runtimes.
const liveListTimeout = 1500 * time.Millisecond

// peers is the index the priority check reads: the runtimes of the
// scope freshly listed from the API server when h.Live can, else the cache.
func (h *Runtimes) peers(ctx context.Context, o runtimeObject) (*selection.Index, []string) {
	if h.Live == nil {
		return h.Index, nil
	}
	idx := selection.NewIndex()
	var err error
	// The apiserver gives a webhook 5 s. A slow list must not use them up:
	// after liveListTimeout the cache decides and the user is told.
	ctx, cancel := context.WithTimeout(ctx, liveListTimeout)
	defer cancel()
	switch {
	case o.kind == selection.KindClusterServingRuntime && h.Live.Cluster != nil:
		var list []v1beta1.ClusterServingRuntime
		if list, err = h.Live.Cluster(ctx); err == nil {
			for i := range list {
				idx.UpsertClusterServingRuntime(&list[i])
			}
		}
	case o.kind == selection.KindServingRuntime && h.Live.Namespaced != nil:
		var list []v1beta1.ServingRuntime
		if list, err = h.Live.Namespaced(ctx, o.namespace); err == nil {
			for i := range list {
				idx.UpsertServingRuntime(&list[i])
			}
		}
	default:
		return h.Index, nil
	}
	if err != nil {
		return h.Index, []string{fmt.Sprintf("priority conflicts were checked against the webhook's cache only: listing %ss failed: %v", o.kind, err)}
	}
	return idx, nil
}

// runtimeErrors are the errors of one spec: on its own (the schema's
// complements in package validation, selection's format, size and
// accelerator checks, merge's template checks), and its priority ties with
// the runtimes of peers.
func runtimeErrors(peers *selection.Index, o runtimeObject, spec *v1beta1.ServingRuntimeSpec) (field.ErrorList, []string) {
	at := field.NewPath("spec")
	errs := validation.ValidateServingRuntimeSpec(spec, at)
	formatErrs, warnings := selection.ValidateRuntimeSpec(at, spec)
	errs = append(errs, formatErrs...)
	errs = append(errs, merge.ValidateRuntimeTemplates(spec, at)...)
	// A disabled runtime is never selected, so it cannot conflict.
	if spec.Disabled == nil || !*spec.Disabled {
		errs = append(errs, peers.PriorityConflicts(o.kind, o.namespace, o.name, spec)...)
	}
	return errs, warnings
}

// missingReferences lists AcceleratorClasses and profiles the runtime names
// that do not exist, one error per referring field.
func (h *Runtimes) missingReferences(spec *v1beta1.ServingRuntimeSpec) field.ErrorList {
	classes, profiles := references(spec)
	var out field.ErrorList
	for _, r := range classes {
		if _, ok := h.Index.AcceleratorClass(r.name); !ok {
			out = append(out, fieldError(r.path, fmt.Sprintf("AcceleratorClass %q does not exist; create it first or fix the name", r.name)))
		}
	}
	for _, r := range profiles {
		if h.Profiles == nil {
			break
		}
		if _, err := h.Profiles.Get(r.name); apierrors.IsNotFound(err) {
			out = append(out, fieldError(r.path, fmt.Sprintf("ClusterEngineRuntimeProfile %q does not exist; create it first or fix the name", r.name)))
		}
	}
	return out
}

// reference is a field naming another object.
type reference struct {
	path *field.Path
	name string
}

// references lists the AcceleratorClasses and profiles a runtime names, in
// field order.
func references(spec *v1beta1.ServingRuntimeSpec) (classes, profiles []reference) {
	at := field.NewPath("spec")
	if r := spec.AcceleratorRequirements; r != nil {
		req := at.Child("acceleratorRequirements")
		for i, c := range r.SupportedClasses {
			classes = append(classes, reference{req.Child("supportedClasses").Index(i), c})
		}
		for i, p := range r.PreferenceOrder {
			classes = append(classes, reference{req.Child("preferenceOrder").Index(i).Child("class"), p.Class})
		}
	}
	addConfigs := func(path *field.Path, cfgs []v1beta1.AcceleratorConfiguration) {
		for i, c := range cfgs {
			classes = append(classes, reference{path.Index(i).Child("selector", "acceleratorClass"), c.Selector.AcceleratorClass})
		}
	}
	addProfiles := func(path *field.Path, refs []v1beta1.EngineRuntimeRef) {
		for i, r := range refs {
			profiles = append(profiles, reference{path.Index(i).Child("profileName"), r.ProfileName})
		}
	}
	addConfigs(at.Child("acceleratorConfigurations"), spec.AcceleratorConfigurations)
	if e := spec.EngineConfig; e != nil {
		addConfigs(at.Child("engineConfig", "acceleratorConfigurations"), e.AcceleratorConfigurations)
		addProfiles(at.Child("engineConfig", "engineRuntimes"), e.EngineRuntimes)
	}
	if d := spec.DecoderConfig; d != nil {
		addConfigs(at.Child("decoderConfig", "acceleratorConfigurations"), d.AcceleratorConfigurations)
		addProfiles(at.Child("decoderConfig", "engineRuntimes"), d.EngineRuntimes)
	}
	if r := spec.RouterConfig; r != nil {
		addProfiles(at.Child("routerConfig", "engineRuntimes"), r.EngineRuntimes)
	}
	// An empty name is the schema's to report.
	classes = slices.DeleteFunc(classes, func(r reference) bool { return r.name == "" })
	profiles = slices.DeleteFunc(profiles, func(r reference) bool { return r.name == "" })
	return classes, profiles
}

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
