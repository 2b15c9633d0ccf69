package handlers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1/validation"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/admission"
	"github.com/berthdev/berth/webhook/patch"
)

// InferenceServices admits InferenceServices.
type InferenceServices struct {
	Index *selection.Index
	// Profiles are read to compose the service's pods at admission, so that
	// what would fail at pod admission fails here (nil: no profiles).
	Profiles listers.ClusterEngineRuntimeProfileLister
	// Retry lists waits before selecting again when selection fails.
	// `kubectl apply -f dir/` creates a model or runtime and, milliseconds
	// later, the service that needs it; the informer may not have delivered
	// the first yet. Failures are rare, so waiting a little on that path
	// costs nothing on the common one. Nil: no retry (unit tests).
	Retry []time.Duration
	// Observer, when set, counts decisions and denials (metrics).
	Observer DecisionObserver
	// DownloaderImage is pinned in annotation ome.io/model-downloader-image
	// when the decided model is downloaded into its pods (see model.go);
	// "" pins none.
	DownloaderImage string
	// Secrets and Claims say whether the Secret of a model's storage.key
	// and the claim of its pvc:// URI exist in the service's namespace
	// (nil: not checked).
	Secrets, Claims Lookup
	// Policies are the ServingPolicies in force (nil: none; see policy.go).
	Policies *PolicySource
	// Services are the stored InferenceServices, whose pinned accelerators
	// count against namespace budgets (nil: none counted).
	Services listers.InferenceServiceLister
	// ServicesVersion, when set, changes whenever Services does: a
	// namespace's sum is then remembered until it changes.
	ServicesVersion func() uint64

	// inUse remembers the namespace's accelerators in use for one request
	// (see forRequest); nil on the shared handler.
	inUse *requestInUse
}

// DefaultRetry fits in the webhook's 5 s timeout with room for both handlers.
var DefaultRetry = []time.Duration{150 * time.Millisecond, 600 * time.Millisecond}

// DecisionObserver counts selection's outcomes; the
// webhook's Prometheus metrics implement it. Decided is called by the
// mutating handler for each decision berth makes (not for a pin it keeps),
// per component with its own class; Denied by the validating handler with
// selection's denial code ("" when the error is not selection's).
type DecisionObserver interface {
	Decided(component string, m selection.DecisionMetrics)
	Denied(code string)
}

// selectSettled selects, retrying after each wait in h.Retry while it
// fails, except while the model's metadata is pending: that does not
// arrive in milliseconds, and the reconciler nudges the service when it does.
func (h *InferenceServices) selectSettled(ctx context.Context, isvc *v1beta1.InferenceService) (*choice, error) {
	return settle(ctx, h.Retry, func() (*choice, error) { return h.selectOnce(isvc) }, func(err error) bool {
		return selection.Code(err) == selection.CodeModelMetadataPending
	})
}

// settle calls try, and again after each wait in retry while it fails,
// unless final says the error is one waiting does not cure (final nil:
// any error may be). When ctx is done it stops with the last error.
func settle(ctx context.Context, retry []time.Duration, try func() (*choice, error), final func(error) bool) (*choice, error) {
	c, err := try()
	for _, wait := range retry {
		if err == nil || (final != nil && final(err)) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		c, err = try()
	}
	return c, err
}

// Mutate migrates the deprecated predictor, checks what the user sent,
// applies defaults and pins the runtime and AcceleratorClass decision in
// annotations (see pin). It does not deny a service it cannot resolve: the
// validating handler does, with the full explanation. It alone emits the
// decision's warnings, so kubectl shows each once.
func (h *InferenceServices) Mutate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if skip(req) {
		return admission.Allowed()
	}
	h = h.forRequest()
	var isvc v1beta1.InferenceService
	if deny := decodeObject(req, &isvc); deny != nil {
		return deny
	}
	old, deny := decodeOld(req)
	if deny != nil {
		return deny
	}
	roundTrip := isvc.DeepCopy() // the decoded object, before any change
	if isvc.Namespace == "" {
		isvc.Namespace = req.Namespace
	}
	protocolGiven := userProtocol(&isvc)
	warnings, err := MigratePredictor(&isvc)
	if err != nil {
		return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("InferenceService %s: %v", objectName(req), err))
	}
	if errs := foldAliases(&isvc, old); len(errs) > 0 { // OME's accelerator names (aliases.go)
		return invalid("InferenceService", isvc.Name, objectName(req), errs, nil)
	}
	if errs := validation.ValidateComponents(&isvc.Spec); len(errs) > 0 {
		if old == nil || old.Spec.Decoder == nil {
			return invalid("InferenceService", isvc.Name, objectName(req), errs, nil)
		}
		for _, e := range errs { // ratcheting: the stored service had the decoder
			warnings = append(warnings, causeLine(e)+" (not introduced by this update, so not denied; berth defaults the engine)")
		}
	}
	applyDefaults(&isvc)
	followBounds(&isvc, old)
	if isvc.Spec.Predictor != nil && !protocolGiven {
		warnings = append(warnings, h.kserveProtocol(&isvc, old)...)
	}
	warnings = append(warnings, h.pin(ctx, &isvc, old)...)
	warnings = append(warnings, h.nodeCacheWarnings(&isvc)...)

	// The namespace defaulted above is not part of what we write back.
	isvc.Namespace = roundTrip.Namespace
	p, err := patch.Create(req.Object.Raw, roundTrip, &isvc)
	if err != nil {
		return admission.Denied(http.StatusInternalServerError, fmt.Sprintf("InferenceService %s: cannot build patch: %v", objectName(req), err))
	}
	return admission.Patched(p, warnings...)
}

// decodeOld decodes the stored object of an UPDATE (nil otherwise), with
// the namespace defaulted as for the new one.
func decodeOld(req *admissionv1.AdmissionRequest) (*v1beta1.InferenceService, *admissionv1.AdmissionResponse) {
	if req.Operation != admissionv1.Update {
		return nil, nil
	}
	var old v1beta1.InferenceService
	if deny := decodeRaw(req, req.OldObject.Raw, "old object", &old); deny != nil {
		return nil, deny
	}
	if old.Namespace == "" {
		old.Namespace = req.Namespace
	}
	return &old, nil
}

// kserveProtocol settles the protocol of a KServe-shaped service that names
// none. MigratePredictor gave it KServe's default (v1, or v2). On UPDATE the
// stored protocol stays, so an upgrade of berth never changes a running
// service's inputs. On CREATE, a runtime that lists no protocolVersions
// serves only openAI in berth but "any" in KServe: when only such a runtime
// can serve the service, the default is dropped and berth's applies.
func (h *InferenceServices) kserveProtocol(isvc, old *v1beta1.InferenceService) []string {
	if old != nil {
		isvc.Spec.ProtocolVersion = nil
		if p := old.Spec.ProtocolVersion; p != nil {
			proto := *p
			isvc.Spec.ProtocolVersion = &proto
		}
		return nil
	}
	if _, err := h.selectOnce(isvc); err == nil {
		return nil
	}
	probe := isvc.DeepCopy()
	probe.Spec.ProtocolVersion = nil
	if _, err := h.selectOnce(probe); err != nil {
		return nil // the validating handler explains the failure with KServe's protocol
	}
	was := *isvc.Spec.ProtocolVersion
	isvc.Spec.ProtocolVersion = nil
	return []string{fmt.Sprintf("no runtime serves KServe's default protocol %s; a runtime that lists no protocolVersions (KServe: any protocol) serves the service with berth's default, openAI", was)}
}

// applyDefaults fills what every service has: an engine with one replica.
// The protocol default (openAI) is left implicit so that the stored object
// says only what the user asked for.
func applyDefaults(isvc *v1beta1.InferenceService) {
	if isvc.Spec.Engine == nil {
		isvc.Spec.Engine = &v1beta1.EngineSpec{}
	}
	if isvc.Spec.Engine.MinReplicas == nil {
		one := int32(1)
		isvc.Spec.Engine.MinReplicas = &one
	}
	// The scale subresource reads spec.engine.replicas: without it an
	// autoscaler cannot even GET the scale ("the spec replicas field does
	// not exist"). Start at minReplicas; the reconciler clamps into
	// [minReplicas, maxReplicas] and the autoscaler moves it from there.
	if isvc.Spec.Engine.Replicas == nil {
		r := *isvc.Spec.Engine.MinReplicas
		isvc.Spec.Engine.Replicas = &r
	}
}

// followBounds keeps an engine replicas the user did not change within the
// service's own [minReplicas, maxReplicas] when the bounds move (raising
// minReplicas raises a defaulted replicas). A replicas the user changes in
// the same request is left as sent: the validating handler denies it when
// it is out of bounds, so nothing is clamped silently.
func followBounds(isvc, old *v1beta1.InferenceService) {
	if old == nil || old.Spec.Engine == nil || old.Spec.Engine.Replicas == nil {
		return
	}
	e := isvc.Spec.Engine
	if e.Replicas == nil || *e.Replicas != *old.Spec.Engine.Replicas {
		return
	}
	r := *e.Replicas
	if e.MinReplicas != nil && r < *e.MinReplicas {
		r = *e.MinReplicas
	}
	if e.MaxReplicas != nil && *e.MaxReplicas > 0 && r > *e.MaxReplicas {
		r = *e.MaxReplicas
	}
	e.Replicas = &r
}

// Validate denies a service whose model, runtime or class cannot be
// resolved (listing every candidate and why it lost), except one that
// waits for its model's metadata or for a model or runtime it names that
// does not exist yet (await.go), or whose pinned
// decision does not pass, whose pods could not be composed, whose
// lifecycle settings the reconciler cannot honour, updates that change
// a running service's group shape, and what a ServingPolicy denies (after
// the decision, on the composed pods; policy.go). Its only warnings are its
// own (what composing the pods tolerated: composeWarnings) and the
// policies': the mutating handler has explained the decision.
func (h *InferenceServices) Validate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if skip(req) {
		return admission.Allowed()
	}
	h = h.forRequest()
	var isvc v1beta1.InferenceService
	if deny := decodeObject(req, &isvc); deny != nil {
		return deny
	}
	old, deny := decodeOld(req)
	if deny != nil {
		return deny
	}
	if isvc.Namespace == "" {
		isvc.Namespace = req.Namespace
	}
	if isvc.Spec.Predictor != nil {
		if _, err := MigratePredictor(isvc.DeepCopy()); err != nil {
			return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("InferenceService %s: %v", objectName(req), err))
		}
	}
	storageErrs, warnings := h.checkStorage(ctx, &isvc, old)
	if len(storageErrs) > 0 {
		return invalid("InferenceService", isvc.Name, objectName(req), storageErrs, warnings)
	}
	if resp := h.validateHeld(req, &isvc, old, warnings); resp != nil {
		return resp
	}
	if leftWaiting(&isvc) {
		return admission.Allowed(warnings...) // the mutating handler warned; the service waits (await.go)
	}
	d, err := h.resolve(ctx, &isvc, old)
	if err != nil {
		if _, ok := h.waits(&isvc, old, err); ok {
			return admission.Allowed(warnings...) // the mutating handler warned; the service waits (await.go)
		}
		if h.Observer != nil {
			h.Observer.Denied(selection.Code(err))
		}
		return unresolved(isvc.Name, err)
	}
	if errs := validateLifecycle(&isvc, d.Decision); len(errs) > 0 {
		return admission.Invalid("InferenceService", isvc.Name, errs)
	}
	if old != nil { // the CRD's transition rule says the same
		if errs := validation.ValidateGangPolicyUpdate(&old.Spec, &isvc.Spec); len(errs) > 0 {
			return admission.Invalid("InferenceService", isvc.Name, errs)
		}
	}
	roles, errs := h.compose(&isvc, d)
	warnings = append(warnings, composeWarnings(roles)...)
	if old != nil && len(errs) > 0 {
		var kept field.ErrorList
		_, oldErrs := h.compose(old, d)
		errs, kept = ratchet(errs, oldErrs)
		warnings = append(warnings, keptWarnings(kept, "pods of this service cannot be created until it is fixed")...)
	}
	if len(errs) > 0 {
		head := fmt.Sprintf("InferenceService %s: the pods berth would create for it cannot be composed:", objectName(req))
		return invalidWithHead("ome.io", "InferenceService", isvc.Name, head, errs, warnings)
	}
	if old != nil {
		if msg := shapeChange(old, &isvc); msg != "" {
			return admission.Denied(http.StatusUnprocessableEntity, fmt.Sprintf("InferenceService %s: %s", objectName(req), msg))
		}
	}
	return h.policyResponse(req, &isvc, old, d, roles, warnings)
}

// resolve is the decision Validate checks: the pin, verified as an
// explicit choice, or a fresh selection when there is none. A pin that
// the update did not touch (same pin, same inputs as the stored object)
// and that no longer passes is read as it is: the mutating handler warned,
// and the update did not introduce the problem.
func (h *InferenceServices) resolve(ctx context.Context, isvc, old *v1beta1.InferenceService) (*choice, error) {
	cur := pinOf(isvc)
	if !pin.Pinned(isvc) {
		return h.selectSettled(ctx, isvc)
	}
	// A pin the request introduces is checked again while it fails: the
	// mutating call may have reached another replica of the webhook, whose
	// cache already held the model, runtime or class this replica's cache
	// has not seen yet. A pin berth made a moment ago is not denied for
	// this replica's lag. A pin the update keeps is checked once.
	retry := h.Retry
	if old != nil && cur == pinOf(old) {
		retry = nil
	}
	c, err := settle(ctx, retry, func() (*choice, error) { return h.verifyPin(isvc, cur) }, nil)
	if err == nil {
		return c, nil
	}
	if old != nil && cur == pinOf(old) && inputDigest(isvc) == inputDigest(old) {
		return h.resolvePinned(isvc, cur)
	}
	return nil, err
}

// groupShape is what the reconciler cannot change in place: whether a
// component runs single-pod or leader/worker groups, and whether the
// service is prefill/decode disaggregated.
func groupShape(isvc *v1beta1.InferenceService) string {
	s := "single-pod engine"
	if e := isvc.Spec.Engine; e != nil && (e.Leader != nil || e.Worker != nil) {
		s = "multi-node engine"
	}
	if isvc.Spec.Decoder != nil {
		s += " with decoder (prefill/decode)"
	}
	return s
}

// shapeChange explains an update the reconciler cannot roll: a group shape
// change while groups exist. Scaling to zero first, or recreating, is the fix.
func shapeChange(old, cur *v1beta1.InferenceService) string {
	if old.Status.ReadyReplicas == 0 && len(old.Status.Components) == 0 {
		return ""
	}
	running := old.Status.ReadyReplicas
	for _, c := range old.Status.Components {
		running += c.Replicas
	}
	if running == 0 {
		return ""
	}
	if was, is := groupShape(old), groupShape(cur); was != is {
		return fmt.Sprintf("changing the group shape from %q to %q would orphan %d running group(s) that cannot be rolled in place; scale spec.engine.minReplicas and maxReplicas to 0 first, or delete and recreate the service", was, is, running)
	}
	return ""
}

// validateLifecycle checks what the reconciler will do with the service
// under the resolved runtime: the names it generates for groups fit DNS
// labels, and the rollout strategy can make progress.
func validateLifecycle(isvc *v1beta1.InferenceService, d *selection.Decision) field.ErrorList {
	topo := merge.Topology(isvc, d.Runtime.Spec)
	var most int32
	for _, t := range topo {
		n := max(t.Replicas, t.MinReplicas)
		if t.MaxReplicas > 0 {
			n = t.MaxReplicas
		}
		most = max(most, n)
	}
	errs := validation.ValidateLifecycle(&isvc.Spec, most)
	errs = append(errs, validation.ValidateGangPolicy(&isvc.Spec, gangRoles(topo))...)
	errs = append(errs, validation.ValidateRatio(&isvc.Spec, len(gangRoles(topo)) == 2)...)
	errs = append(errs, validation.ValidateAdapters(&isvc.Spec)...)
	errs = append(errs, replicasWithinBounds(isvc, topo)...)
	if err := merge.ValidateNames(isvc.Name, topo); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), isvc.Name, err.Error()))
	}
	return errs
}

// gangRoles are the roles of a prefill/decode gang under the resolved
// topology (the runtime's decoderConfig counts); none without a decoder.
func gangRoles(topo []merge.ComponentTopology) []validation.GangRole {
	var roles []validation.GangRole
	for _, t := range topo {
		if t.Component == v1beta1.ComponentEngine || t.Component == v1beta1.ComponentDecoder {
			roles = append(roles, validation.GangRole{Component: t.Component, Replicas: t.Replicas})
		}
	}
	if len(roles) < 2 {
		return nil
	}
	return roles
}

// replicasWithinBounds denies a component's replicas outside its
// [minReplicas, maxReplicas] (the service's over the runtime's): the
// reconciler would clamp it, and `kubectl scale --replicas 4` silently
// giving one group is worse than a denial that names the bound.
func replicasWithinBounds(isvc *v1beta1.InferenceService, topo []merge.ComponentTopology) field.ErrorList {
	own := map[string]*v1beta1.ComponentExtensionSpec{}
	if s := isvc.Spec.Engine; s != nil {
		own[v1beta1.ComponentEngine] = &s.ComponentExtensionSpec
	}
	if s := isvc.Spec.Decoder; s != nil {
		own[v1beta1.ComponentDecoder] = &s.ComponentExtensionSpec
	}
	if s := isvc.Spec.Router; s != nil {
		own[v1beta1.ComponentRouter] = &s.ComponentExtensionSpec
	}
	var errs field.ErrorList
	for _, t := range topo {
		ext := own[t.Component]
		if ext == nil || ext.Replicas == nil {
			continue
		}
		p := field.NewPath("spec", t.Component, "replicas")
		switch r := *ext.Replicas; {
		case t.MaxReplicas > 0 && r > t.MaxReplicas:
			errs = append(errs, field.Invalid(p, r, fmt.Sprintf("is above maxReplicas %d (of the service, else its runtime); raise spec.%s.maxReplicas to scale further", t.MaxReplicas, t.Component)))
		case r < t.MinReplicas:
			errs = append(errs, field.Invalid(p, r, fmt.Sprintf("is below minReplicas %d (of the service, else its runtime); lower spec.%s.minReplicas to scale down further", t.MinReplicas, t.Component)))
		}
	}
	return errs
}
