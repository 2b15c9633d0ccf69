package handlers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/version"
)

// The model a service resolves to, at admission:
//
//   - Selection reads the model's merged view: what the admin wrote, with
//     every field left unset filled from status.discovered.
//   - A model that awaits metadata (v1beta1.ModelAwaitsMetadata: no format,
//     architecture or size in the spec, and discovery not finished for this
//     generation) is never a denial. The service is admitted without a pin,
//     with pendingWarning, and annotation ome.io/decision says what it waits
//     for. The reconciler nudges it (annotation
//     ome.io/model-metadata-revision) when the metadata arrives; that
//     UPDATE finds no pin and decides as a CREATE would. The nudge
//     annotation is not an input of the decision: on a pinned service it
//     changes nothing, so writing it by hand is harmless; a CREATE drops
//     it. A model or runtime that does not exist yet waits the same way
//     (await.go).
//   - A pinned service keeps its pin while its model's metadata is read
//     again (the model's spec changed): pods still compose.
//   - When the decided model is downloaded into the pod (merge's rule:
//     see downloaderFor), the downloader image is pinned in annotation
//     ome.io/model-downloader-image, from --model-downloader-image, with
//     the decision: later flag changes do not move it; deciding again
//     re-pins it. Its container runs with args <storageUri> <dest>.
//   - A model served from OME's node cache (merge's DeliveryNodeCache:
//     a remote storageUri with storage.path, downloadPolicy not
//     AlwaysDownload) reaches only nodes labelled with its model-ready
//     label (merge.ModelReadyLabel=Ready), which OME's model agent sets.
//     When the mutating handler decides or holds a pin and no node in
//     the webhook's node cache carries that label, it warns (never
//     denies; nodecache.go): "<Kind>/<name> is served from the node cache
//     at <path> on nodes labelled <key>=Ready, and no node is; run OME's
//     model agent to fill the cache, or set
//     spec.storage.downloadPolicy: AlwaysDownload to download it into
//     each pod".
//   - Pods, and the composition check at admission, get the resolved
//     model in merge.Input.Model (modelMount): the same model the
//     reconciler resolves (spec.model.kind, else a BaseModel of the
//     service's namespace, else the ClusterBaseModel), fed to merge the
//     one way package pin feeds it (pin.Model: spec and
//     status.discovered), so the revision the pod webhook stamps is the
//     reconciler's. The pod webhook's revision
//     cache is keyed by the model's resourceVersion too.
//   - Denied, naming the field: a storage URI with an unknown scheme, the
//     claim of a pvc:// URI that does not exist in the service's
//     namespace, and, only when the model is downloaded into the pods
//     (merge.DeliveryDownload, see downloaderSecret), a Secret named by
//     storage.key that does not exist there: the downloader reads it in
//     that namespace. A model served from OME's node cache, a host path or
//     a claim needs no Secret in the service's namespace, whatever its
//     storage.key says (OME's model agent reads the key in its own
//     namespace). The Secret is looked up by name only (webhook/cache:
//     one metadata GET, no list or watch of Secrets). When the webhook
//     cannot tell (the claims' cache has not synced, or the API server
//     did not answer), it warns instead. On UPDATE, what the stored
//     service already had is a warning (ratcheting).

// DefaultModelDownloaderImage is berth's own downloader (berth model
// download <storageUri> <dest>, KServe's storage-initializer contract:
// hf:// and s3:// with the variables merge documents). KServe's storage
// initializer (e.g. kserve/storage-initializer:v0.16.0) reads the same
// variables and still works through --model-downloader-image. The image is
// pinned on each service, so an upgrade of berth does not change the pods
// of services it pinned before.
var DefaultModelDownloaderImage = version.Image("berth-downloader")

// Lookup says whether a namespaced object exists; known is false when the
// answer is unknown (the cache has not synced and the API server did not
// answer), and the caller warns instead of denying.
type Lookup func(ctx context.Context, namespace, name string) (exists, known bool)

// pendingWarning tells the user the service is admitted unpinned.
func pendingWarning(isvc *v1beta1.InferenceService, m selection.Model) string {
	return fmt.Sprintf("InferenceService %s/%s: %s: %s; admitted unpinned: it will be pinned once %s's metadata is known",
		isvc.Namespace, isvc.Name, m.Ref(), m.Pending, m.Ref())
}

// pendingDecision is annotation ome.io/decision while the service waits.
func pendingDecision(m selection.Model) string {
	return fmt.Sprintf("%s for %s's metadata: %s; berth pins a runtime once it is known", waitingPrefix, m.Ref(), m.Pending)
}

// pendingModel returns the service's model when it awaits metadata.
func (h *InferenceServices) pendingModel(isvc *v1beta1.InferenceService) (selection.Model, bool) {
	m, err := h.Index.Model(isvc)
	return m, err == nil && m.Pending != ""
}

// modelMount is the model merge mounts into engine and decoder pods: the
// decision's model as pin.Model.Mount builds it, the one way the pod
// webhook and the reconciler feed a model to merge (so both compute one
// revision). Its merged Spec is a fixed point of
// v1beta1.EffectiveModelSpec. nil for a model the service describes
// inline (KServe's predictor.model).
func modelMount(m selection.Model) *merge.ModelMount { return selectedModel(m).Mount() }

// downloaderFor is the image to pin for a decision's model, "" for none:
// the configured downloader when merge delivers the model by download
// (merge.ModelMount.Delivery, the rule the pods are composed by).
func (h *InferenceServices) downloaderFor(m selection.Model) string {
	mm := modelMount(m)
	if mm == nil {
		return ""
	}
	if d, err := mm.Delivery(); err != nil || d.How != merge.DeliveryDownload {
		return ""
	}
	return h.DownloaderImage
}

// storageErrors checks what the pods of the service will need from the
// model's storage: a URI berth understands, the Secret of storage.key and
// the claim of a pvc:// URI in the service's namespace (a claim that OME's
// form pvc://{namespace}:{claim}/{sub-path} places in another namespace
// cannot be mounted by the service's pods). Each error is at
// spec.model.name, its detail "<Kind>/<name>: spec.storage.<field>: ...";
// warnings say what could not be checked.
func (h *InferenceServices) storageErrors(ctx context.Context, isvc *v1beta1.InferenceService, m selection.Model) (errs field.ErrorList, warnings []string) {
	st := m.Spec.Storage
	if st == nil {
		return nil, nil
	}
	at := field.NewPath("spec", "model", "name")
	storage := m.Ref() + ": spec.storage."
	check := func(lookup Lookup, kind, name, fieldName, fix string) {
		if lookup == nil {
			return
		}
		switch exists, known := lookup(ctx, isvc.Namespace, name); {
		case !known:
			warnings = append(warnings, fmt.Sprintf("cannot check that %s %q (%s %s) exists in namespace %s: neither the webhook's cache nor the API server answered; the service's pods cannot start without it",
				kind, name, m.Ref(), "spec.storage."+fieldName, isvc.Namespace))
		case !exists:
			errs = append(errs, fieldError(at, fmt.Sprintf("%s%s: %s %q does not exist in namespace %s; %s", storage, fieldName, kind, name, isvc.Namespace, fix)))
		}
	}
	if st.StorageURI != nil {
		loc, err := v1beta1.ParseStorageURI(*st.StorageURI)
		switch {
		case err != nil:
			errs = append(errs, fieldError(at, storage+"storageUri: "+err.Error()))
		case loc.Scheme == v1beta1.SchemePVC && loc.ClaimNamespace != "" && loc.ClaimNamespace != isvc.Namespace:
			errs = append(errs, fieldError(at, fmt.Sprintf("%sstorageUri: PersistentVolumeClaim %q is in namespace %s; pods of namespace %s cannot mount it: create the service in namespace %s, or use a model whose claim is in this namespace",
				storage, loc.ClaimName, loc.ClaimNamespace, isvc.Namespace, loc.ClaimNamespace)))
		case loc.Scheme == v1beta1.SchemePVC:
			check(h.Claims, "PersistentVolumeClaim", loc.ClaimName, "storageUri",
				"the pods mount the model from it: create it there, or use a model whose claim is in this namespace")
		}
	}
	if secret := downloaderSecret(m); secret != "" {
		check(h.Secrets, "Secret", secret, "key",
			"the model's downloader reads its credentials from it: create it there, or fix the model's storage.key")
	}
	return errs, warnings
}

// downloaderSecret is the Secret (storage.key) the model's downloader reads
// in the service's namespace, "" when no downloader runs: merge delivers
// the model another way (ModelMount.Delivery, the rule the pods are
// composed by), or the storage is invalid (storageErrors says so).
func downloaderSecret(m selection.Model) string {
	mm := modelMount(m)
	if mm == nil {
		return ""
	}
	d, err := mm.Delivery()
	if err != nil || d.How != merge.DeliveryDownload {
		return ""
	}
	return d.Secret
}

// checkStorage denies what storageErrors finds, except, on UPDATE, what
// the stored service had already (then a warning). nil: allowed, with the
// returned warnings.
func (h *InferenceServices) checkStorage(ctx context.Context, isvc, old *v1beta1.InferenceService) (field.ErrorList, []string) {
	m, err := h.Index.Model(isvc)
	if err != nil {
		return nil, nil // selection's denial explains a model it cannot find
	}
	errs, warnings := h.storageErrors(ctx, isvc, m)
	if len(errs) > 0 && old != nil {
		if om, err := h.Index.Model(old); err == nil {
			oldErrs, _ := h.storageErrors(ctx, old, om)
			var kept field.ErrorList
			errs, kept = ratchet(errs, oldErrs)
			warnings = append(warnings, keptWarnings(kept, "pods of this service cannot be created until it is fixed")...)
		}
	}
	return errs, warnings
}
