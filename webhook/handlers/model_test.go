package handlers

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
)

const (
	mistralRef   = "BaseModel/mistral-7b-instruct"
	mistralHF    = "hf://mistralai/Mistral-7B-Instruct-v0.3"
	testDownload = "registry.example/downloader:v1"
	// pendingText is what ModelAwaitsMetadata says of omeMistral.
	pendingText = "model metadata not yet known: modelFormat.name, modelArchitecture and modelParameterSize are not in the spec; discovery from " + mistralHF + " is pending"
	// wantPendingWarning is the one warning of an admission that waits.
	wantPendingWarning = "InferenceService mistral-7b-instruct/mistral-7b-instruct: " + mistralRef + ": " + pendingText +
		"; admitted unpinned: it will be pinned once " + mistralRef + "'s metadata is known"
	wantPendingDecision = "waiting for " + mistralRef + "'s metadata: " + pendingText + "; berth pins a runtime once it is known"
)

// omeMistral is seed 000's model in OME's catalogue shape (OME's
// config/models/mistralai/Mistral-7B-Instruct-v0.3.yaml): storage only,
// no format, architecture or size. opts change it.
func omeMistral(opts ...func(*v1beta1.BaseModel)) *v1beta1.BaseModel {
	m := &v1beta1.BaseModel{ObjectMeta: metav1.ObjectMeta{Name: "mistral-7b-instruct", Namespace: "mistral-7b-instruct", Generation: 1, ResourceVersion: "10"}}
	m.Spec.Vendor = ptrTo("mistralai")
	m.Spec.DisplayName = ptrTo("mistralai.mistral-7b-instruct-v0.3")
	m.Spec.Storage = &v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF)}
	for _, f := range opts {
		f(m)
	}
	return m
}

// known is the model once discovery read its files: what seed 000's
// runtimes ask for, MetadataResolved for its generation.
func known(m *v1beta1.BaseModel) {
	m.Status.Discovered = &v1beta1.ModelMetadata{
		ModelFormat:        &v1beta1.ModelFormat{Name: "safetensors", Version: ptrTo("1.0.0")},
		ModelFramework:     &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: ptrTo("4.36.2")},
		ModelArchitecture:  ptrTo("MistralForCausalLM"),
		ModelParameterSize: ptrTo("7.25B"),
	}
	m.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionMetadataResolved, Status: metav1.ConditionTrue, ObservedGeneration: m.Generation, Reason: "Discovered"}}
	m.ResourceVersion = "11"
}

func withStorage(st v1beta1.StorageSpec) func(*v1beta1.BaseModel) {
	return func(m *v1beta1.BaseModel) { m.Spec.Storage = &st }
}

// pendingWorld is seed 000's runtimes with the OME-shaped model, whose
// metadata is not known yet.
func pendingWorld(t *testing.T, opts ...func(*v1beta1.BaseModel)) *world {
	w := seedWorld(t)
	w.downloader = testDownload
	w.index.UpsertBaseModel(omeMistral(opts...))
	return w
}

// present answers existence checks from a list of "namespace/name".
func present(objs ...string) Lookup {
	return func(_ context.Context, ns, name string) (bool, bool) { return slices.Contains(objs, ns+"/"+name), true }
}

// unknown is a cache that has not synced and an API server that did not answer.
func unknown(context.Context, string, string) (bool, bool) { return false, false }

func dryRun(req *admissionv1.AdmissionRequest) { req.DryRun = ptrTo(true) }

// admitWith runs mutate then validate like admitISVC, with a request option.
func admitWith(t *testing.T, w *world, op admissionv1.Operation, isvc, old *v1beta1.InferenceService, opt func(*admissionv1.AdmissionRequest)) (*v1beta1.InferenceService, *admissionv1.AdmissionResponse) {
	t.Helper()
	req := request(t, op, "InferenceService", isvc, old, isvc.Namespace, isvc.Name)
	if opt != nil {
		opt(req)
	}
	resp := w.isvcs().Mutate(ctx, req)
	req.Object.Raw = applyPatch(t, req.Object.Raw, resp)
	vresp := w.isvcs().Validate(ctx, req)
	var out v1beta1.InferenceService
	require.NoError(t, json.Unmarshal(req.Object.Raw, &out))
	return &out, mergeResponses(resp, vresp)
}

// A service whose model awaits metadata is admitted without a pin, with
// one warning that names the model and what is missing, on CREATE and
// UPDATE, dry-run or not; it is never denied for that.
func TestServiceOfAModelAwaitingMetadataIsAdmittedUnpinned(t *testing.T) {
	failed := func(m *v1beta1.BaseModel) {
		m.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionMetadataResolved, Status: metav1.ConditionFalse, ObservedGeneration: 1,
			Reason: "Unauthorized", Message: mistralHF + ": 401: set storage.key to a Secret with a token"}}
	}
	const failedText = "model metadata not yet known: modelFormat.name, modelArchitecture and modelParameterSize are not in the spec; discovery from " +
		mistralHF + " failed: Unauthorized: " + mistralHF + ": 401: set storage.key to a Secret with a token"
	for _, tc := range []struct {
		name         string
		model        []func(*v1beta1.BaseModel)
		op           admissionv1.Operation
		opt          func(*admissionv1.AdmissionRequest)
		forgedPin    bool
		wantWarning  string
		wantDecision string
	}{
		{name: "create", op: admissionv1.Create, wantWarning: wantPendingWarning, wantDecision: wantPendingDecision},
		{name: "create, dry-run", op: admissionv1.Create, opt: dryRun, wantWarning: wantPendingWarning, wantDecision: wantPendingDecision},
		{name: "create with a forged pin", op: admissionv1.Create, forgedPin: true, wantWarning: wantPendingWarning, wantDecision: wantPendingDecision},
		{name: "update", op: admissionv1.Update, wantWarning: wantPendingWarning, wantDecision: wantPendingDecision},
		{name: "update, dry-run", op: admissionv1.Update, opt: dryRun, wantWarning: wantPendingWarning, wantDecision: wantPendingDecision},
		{name: "update that edits in a pin", op: admissionv1.Update, forgedPin: true, wantWarning: wantPendingWarning, wantDecision: wantPendingDecision},
		{name: "discovery failed", model: []func(*v1beta1.BaseModel){failed}, op: admissionv1.Create,
			wantWarning:  "InferenceService mistral-7b-instruct/mistral-7b-instruct: " + mistralRef + ": " + failedText + "; admitted unpinned: it will be pinned once " + mistralRef + "'s metadata is known",
			wantDecision: "waiting for " + mistralRef + "'s metadata: " + failedText + "; berth pins a runtime once it is known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := pendingWorld(t, tc.model...)
			isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
			var old *v1beta1.InferenceService
			if tc.op == admissionv1.Update {
				old, _ = admitISVC(t, w, admissionv1.Create, isvc, nil)
				isvc = old.DeepCopy()
				isvc.Spec.Engine.MaxReplicas = ptrTo(int32(2))
			}
			if tc.forgedPin {
				if isvc.Annotations == nil {
					isvc.Annotations = map[string]string{}
				}
				isvc.Annotations[v1beta1.AnnotationResolvedRuntime] = pinWinner
				isvc.Annotations[v1beta1.AnnotationModelDownloaderImage] = "evil/image:latest"
			}
			out, resp := admitWith(t, w, tc.op, isvc, old, tc.opt)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			assert.Equal(t, []string{tc.wantWarning}, resp.Warnings)
			assert.Equal(t, map[string]string{AnnotationDecision: tc.wantDecision}, out.Annotations, "no pin, no downloader: only why it waits")
		})
	}
}

// The reconciler's nudge (annotation ome.io/model-metadata-revision) on a
// service that waited is an UPDATE without a pin: berth decides as usual,
// and pins the downloader of the hf:// model.
func TestNudgeDecidesOnceTheMetadataIsKnown(t *testing.T) {
	w := pendingWorld(t)
	waiting, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	require.Empty(t, waiting.Annotations[v1beta1.AnnotationResolvedRuntime])

	// The nudge before discovery finished changes nothing.
	nudged := waiting.DeepCopy()
	nudged.Annotations[v1beta1.AnnotationModelMetadataRevision] = "10"
	out, resp := admitISVC(t, w, admissionv1.Update, nudged, waiting)
	require.True(t, resp.Allowed)
	assert.Equal(t, []string{wantPendingWarning}, resp.Warnings)
	assert.Empty(t, out.Annotations[v1beta1.AnnotationResolvedRuntime])

	w.index.UpsertBaseModel(omeMistral(known))
	nudged = out.DeepCopy()
	nudged.Annotations[v1beta1.AnnotationModelMetadataRevision] = "11"
	out, resp = admitISVC(t, w, admissionv1.Update, nudged, out)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, pinWinner, out.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.Equal(t, testDownload, out.Annotations[v1beta1.AnnotationModelDownloaderImage])
	assert.Equal(t, "11", out.Annotations[v1beta1.AnnotationModelMetadataRevision], "the nudge is the reconciler's; berth keeps it")
	assert.Equal(t, "runtime "+pinWinner+" (auto-selected), no AcceleratorClass, protocol openAI, model "+mistralRef+"\n"+
		pinLow+": matches, but priority 1 is below "+pinWinner+"'s 2", out.Annotations[AnnotationDecision])
	assert.Equal(t, []string{"the cluster has no AcceleratorClass, so free nvidia.com/gpu was not checked", "berth chose runtime " + pinWinner + " for " + mistralRef + " (protocol openAI), no AcceleratorClass; 1 other runtime ranked lower, e.g. " +
		pinLow + ": matches, but priority 1 is below " + pinWinner + "'s 2; kubectl describe shows the full ranking (annotation ome.io/decision)"}, resp.Warnings)
}

// The nudge annotation is not an input of the decision: written by hand on
// a pinned service it moves nothing, even when a newer runtime would win.
func TestForgedMetadataRevisionOnAPinnedServiceChangesNothing(t *testing.T) {
	w := pendingWorld(t, known)
	stored, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	require.Equal(t, pinWinner, stored.Annotations[v1beta1.AnnotationResolvedRuntime])
	w.addCSR(t, "api/v1beta1/testdata/seeds/000-srt-mistral-7b-instruct.yaml", time.Now()) // a newer candidate
	w.downloader = "registry.example/downloader:v2"

	forged := stored.DeepCopy()
	forged.Annotations[v1beta1.AnnotationModelMetadataRevision] = "forged"
	out, resp := admitISVC(t, w, admissionv1.Update, forged, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Empty(t, resp.Warnings)
	want := maps(stored.Annotations, v1beta1.AnnotationModelMetadataRevision, "forged")
	assert.Equal(t, want, out.Annotations, "pin, decision and downloader are unchanged")
}

// maps copies m with k set to v.
func maps(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

// A pinned service keeps its pin while its model's metadata is read again
// (the model's spec changed, discovery runs for the new generation).
func TestPinHoldsWhileMetadataIsReadAgain(t *testing.T) {
	w := pendingWorld(t, known)
	stored, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	require.Equal(t, pinWinner, stored.Annotations[v1beta1.AnnotationResolvedRuntime])
	w.index.UpsertBaseModel(omeMistral(known, func(m *v1beta1.BaseModel) { m.Generation = 2 }))

	scaled := stored.DeepCopy()
	scaled.Spec.Engine.MaxReplicas = ptrTo(int32(2))
	out, resp := admitISVC(t, w, admissionv1.Update, scaled, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, stored.Annotations, out.Annotations)
	assert.Equal(t, []string{mistralRef + "'s metadata is being read again (" + pendingText + "); the pinned decision holds meanwhile"}, resp.Warnings)

	pod := w.pods()
	require.NoError(t, w.services.Add(out))
	presp := pod.Mutate(ctx, podRequest(t, out, "engine"))
	assert.True(t, presp.Allowed, "pods still compose: %+v", presp.Result)
}

// The downloader image is pinned when the decided model is downloaded into
// its pods (merge's rule), with the decision; a later flag change does
// not move it, and deciding again re-pins it.
func TestDownloaderImageIsPinnedWithTheDecision(t *testing.T) {
	always := v1beta1.AlwaysDownload
	for _, tc := range []struct {
		name    string
		storage *v1beta1.StorageSpec
		want    string // "" : no annotation
	}{
		{name: "hf:// is downloaded", storage: &v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF)}, want: testDownload},
		{name: "s3:// is downloaded", storage: &v1beta1.StorageSpec{StorageURI: ptrTo("s3://models/mistral")}, want: testDownload},
		{name: "gs:// is downloaded", storage: &v1beta1.StorageSpec{StorageURI: ptrTo("gs://models/mistral")}, want: testDownload},
		{name: "oci:// is downloaded", storage: &v1beta1.StorageSpec{StorageURI: ptrTo("oci://n/ns/b/models/o/mistral")}, want: testDownload},
		{name: "hf:// on a node cache is not", storage: &v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF), Path: ptrTo("/raid/models/mistral")}},
		{name: "hf:// with AlwaysDownload is, path or not", storage: &v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF), Path: ptrTo("/raid/models/mistral"), DownloadPolicy: &always}, want: testDownload},
		{name: "pvc:// is mounted", storage: &v1beta1.StorageSpec{StorageURI: ptrTo("pvc://models/mistral")}},
		{name: "a local path is mounted", storage: &v1beta1.StorageSpec{StorageURI: ptrTo("/raid/models/mistral")}},
		{name: "no storage", storage: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := pendingWorld(t, known, func(m *v1beta1.BaseModel) { m.Spec.Storage = tc.storage })
			w.claims = present("mistral-7b-instruct/models")
			isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
			out, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			got, ok := out.Annotations[v1beta1.AnnotationModelDownloaderImage]
			assert.Equal(t, tc.want != "", ok)
			assert.Equal(t, tc.want, got)

			// merge downloads exactly when berth pinned a downloader.
			pod := composeEngine(t, w, out)
			var images []string
			for _, c := range pod.Spec.InitContainers {
				if c.Name == merge.ModelDownloaderName {
					images = append(images, c.Image)
				}
			}
			if tc.want != "" {
				assert.Equal(t, []string{tc.want}, images)
			} else {
				assert.Empty(t, images)
			}

			w.downloader = "registry.example/downloader:v2"
			scaled := out.DeepCopy()
			scaled.Spec.Engine.MaxReplicas = ptrTo(int32(2))
			held, _ := admitISVC(t, w, admissionv1.Update, scaled, out)
			assert.Equal(t, out.Annotations, held.Annotations, "the pin holds, downloader included")

			unpinned := held.DeepCopy()
			delete(unpinned.Annotations, v1beta1.AnnotationResolvedRuntime)
			again, _ := admitISVC(t, w, admissionv1.Update, unpinned, held)
			if tc.want != "" {
				assert.Equal(t, "registry.example/downloader:v2", again.Annotations[v1beta1.AnnotationModelDownloaderImage], "deciding again re-pins it")
			} else {
				assert.NotContains(t, again.Annotations, v1beta1.AnnotationModelDownloaderImage)
			}
		})
	}
}

// A service pinned before berth downloaded models has no downloader pin;
// the next update that holds its pin adds the current one.
func TestHeldPinWithoutDownloaderGetsOne(t *testing.T) {
	w := pendingWorld(t, known)
	stored, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	delete(stored.Annotations, v1beta1.AnnotationModelDownloaderImage)
	scaled := stored.DeepCopy()
	scaled.Spec.Engine.MaxReplicas = ptrTo(int32(2))
	out, resp := admitISVC(t, w, admissionv1.Update, scaled, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, maps(stored.Annotations, v1beta1.AnnotationModelDownloaderImage, testDownload), out.Annotations)
}

// What the model's storage needs in the service's namespace is checked at
// admission, naming the field; what cannot be checked is a warning.
func TestModelStorageIsCheckedAtAdmission(t *testing.T) {
	const ns = "mistral-7b-instruct"
	const deny = "InferenceService mistral-7b-instruct/mistral-7b-instruct is invalid:\n- spec.model.name: " + mistralRef + ": spec.storage."
	for _, tc := range []struct {
		name            string
		storage         v1beta1.StorageSpec
		secrets, claims Lookup
		wantDenial      string
		wantWarnings    []string
	}{
		{name: "unknown scheme", storage: v1beta1.StorageSpec{StorageURI: ptrTo("vendor://cohere/models/x")},
			wantDenial: deny + `storageUri: storage URI "vendor://cohere/models/x": unsupported scheme "vendor"; supported: hf://, s3://, gs://, oci://, pvc:// and absolute local paths`},
		{name: "missing Secret", storage: v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF), Key: ptrTo("hf-token")}, secrets: present("other-ns/hf-token"),
			wantDenial: deny + `key: Secret "hf-token" does not exist in namespace mistral-7b-instruct; the model's downloader reads its credentials from it: create it there, or fix the model's storage.key`},
		{name: "missing claim", storage: v1beta1.StorageSpec{StorageURI: ptrTo("pvc://models/mistral")}, claims: present(),
			wantDenial: deny + `storageUri: PersistentVolumeClaim "models" does not exist in namespace mistral-7b-instruct; the pods mount the model from it: create it there, or use a model whose claim is in this namespace`},
		{name: "Secret exists", storage: v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF), Key: ptrTo("creds")}, secrets: present(ns + "/creds")},
		{name: "claim exists", storage: v1beta1.StorageSpec{StorageURI: ptrTo("pvc://models/mistral")}, claims: present(ns + "/models")},
		// Only a downloader reads storage.key in the service's namespace:
		// OME's node cache (its model agent reads the key in its own
		// namespace), a host path and a claim need no Secret there.
		{name: "node cache needs no Secret", storage: v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF), Path: ptrTo("/raid/models/mistral"), Key: ptrTo("hf-token")},
			secrets: present()},
		{name: "claim needs no Secret", storage: v1beta1.StorageSpec{StorageURI: ptrTo("pvc://models/mistral"), Key: ptrTo("creds")},
			secrets: present(), claims: present(ns + "/models")},
		{name: "host path needs no Secret", storage: v1beta1.StorageSpec{StorageURI: ptrTo("/data/mistral"), Key: ptrTo("creds")}, secrets: present()},
		{name: "node cache model downloaded anyway needs its Secret",
			storage:    v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF), Path: ptrTo("/raid/models/mistral"), Key: ptrTo("hf-token"), DownloadPolicy: ptrTo(v1beta1.AlwaysDownload)},
			secrets:    present(),
			wantDenial: deny + `key: Secret "hf-token" does not exist in namespace mistral-7b-instruct; the model's downloader reads its credentials from it: create it there, or fix the model's storage.key`},
		{name: "cache not synced: claim", storage: v1beta1.StorageSpec{StorageURI: ptrTo("pvc://models/mistral"), Key: ptrTo("creds")}, secrets: unknown, claims: unknown,
			wantWarnings: []string{
				`cannot check that PersistentVolumeClaim "models" (` + mistralRef + ` spec.storage.storageUri) exists in namespace mistral-7b-instruct: neither the webhook's cache nor the API server answered; the service's pods cannot start without it`,
			}},
		{name: "API server did not answer: Secret", storage: v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF), Key: ptrTo("creds")}, secrets: unknown, claims: unknown,
			wantWarnings: []string{
				`cannot check that Secret "creds" (` + mistralRef + ` spec.storage.key) exists in namespace mistral-7b-instruct: neither the webhook's cache nor the API server answered; the service's pods cannot start without it`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := pendingWorld(t, known, withStorage(tc.storage))
			w.secrets, w.claims = tc.secrets, tc.claims
			isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
			req := request(t, admissionv1.Create, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name)
			req.Object.Raw = applyPatch(t, req.Object.Raw, w.isvcs().Mutate(ctx, req))
			resp := w.isvcs().Validate(ctx, req)
			if tc.wantDenial != "" {
				require.False(t, resp.Allowed)
				assert.Equal(t, tc.wantDenial, resp.Result.Message)
				require.Len(t, resp.Result.Details.Causes, 1)
				assert.Equal(t, "spec.model.name", resp.Result.Details.Causes[0].Field)
				return
			}
			require.True(t, resp.Allowed, "%+v", resp.Result)
			assert.Equal(t, tc.wantWarnings, resp.Warnings)
		})
	}
}

// A model awaiting metadata is checked too: its storage is known.
func TestStorageOfAPendingModelIsChecked(t *testing.T) {
	w := pendingWorld(t, withStorage(v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF), Key: ptrTo("hf-token")}))
	w.secrets = present()
	_, resp := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, `spec.storage.key: Secret "hf-token" does not exist in namespace mistral-7b-instruct`)
}

// On UPDATE, a Secret deleted since the service was admitted is a warning:
// the update did not introduce it.
func TestMissingSecretOnUpdateIsRatcheted(t *testing.T) {
	w := pendingWorld(t, known, withStorage(v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF), Key: ptrTo("hf-token")}))
	w.secrets = present("mistral-7b-instruct/hf-token")
	stored, resp := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	w.secrets = present()
	scaled := stored.DeepCopy()
	scaled.Spec.Engine.MaxReplicas = ptrTo(int32(2))
	req := request(t, admissionv1.Update, "InferenceService", scaled, stored, scaled.Namespace, scaled.Name)
	vresp := w.isvcs().Validate(ctx, req)
	require.True(t, vresp.Allowed, "%+v", vresp.Result)
	assert.Equal(t, []string{"spec.model.name: " + mistralRef + `: spec.storage.key: Secret "hf-token" does not exist in namespace mistral-7b-instruct; the model's downloader reads its credentials from it: create it there, or fix the model's storage.key` +
		" (not introduced by this update, so not denied; pods of this service cannot be created until it is fixed)"}, vresp.Warnings)
}

// podRequest is the CREATE of the reconciler's skeleton pod for a
// component of the service.
func podRequest(t *testing.T, isvc *v1beta1.InferenceService, component string) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := json.Marshal(merge.SkeletonPod(isvc, component, merge.GroupIdentity{}))
	require.NoError(t, err)
	req := &admissionv1.AdmissionRequest{UID: "p", Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Kind: "Pod"}, Namespace: isvc.Namespace}
	req.Object.Raw = raw
	return req
}

// composeEngine admits the engine pod of a stored service.
func composeEngine(t *testing.T, w *world, isvc *v1beta1.InferenceService) *corev1.Pod {
	t.Helper()
	return composeWith(t, w, w.pods(), isvc)
}

// composeWith admits the engine pod with a given handler (its revision
// cache lives as long as it does).
func composeWith(t *testing.T, w *world, pods *Pods, isvc *v1beta1.InferenceService) *corev1.Pod {
	t.Helper()
	require.NoError(t, w.services.Add(isvc))
	req := podRequest(t, isvc, v1beta1.ComponentEngine)
	resp := pods.Mutate(ctx, req)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	var pod corev1.Pod
	require.NoError(t, json.Unmarshal(applyPatch(t, req.Object.Raw, resp), &pod))
	return &pod
}

// The engine pod mounts the decided model, and its revision is the one
// the reconciler computes from the model object (merge.NewModelMount of
// its spec and status): both sides pass the same input.
func TestPodMountsTheModelWithTheReconcilersRevision(t *testing.T) {
	for _, tc := range []struct {
		name      string
		storage   v1beta1.StorageSpec
		wantMount corev1.VolumeMount
		wantClaim string // "" : not a claim
	}{
		{name: "hf download", storage: v1beta1.StorageSpec{StorageURI: ptrTo(mistralHF)},
			wantMount: corev1.VolumeMount{Name: merge.ModelVolumeName, MountPath: merge.ModelMountPath, ReadOnly: true}},
		{name: "pvc", storage: v1beta1.StorageSpec{StorageURI: ptrTo("pvc://models/mistral")},
			wantMount: corev1.VolumeMount{Name: merge.ModelVolumeName, MountPath: merge.ModelMountPath, ReadOnly: true, SubPath: "mistral"}, wantClaim: "models"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := omeMistral(known, withStorage(tc.storage))
			w := pendingWorld(t)
			w.index.UpsertBaseModel(model)
			isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
			out, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			out.UID, out.ResourceVersion = "uid-svc", "5" // as stored: the revision cache is used
			pods := w.pods()
			pod := composeWith(t, w, pods, out)

			c := pod.Spec.Containers[0]
			assert.Contains(t, c.VolumeMounts, tc.wantMount)
			assert.Contains(t, c.Env, corev1.EnvVar{Name: merge.EnvModelPath, Value: merge.ModelMountPath})
			var claim string
			for _, v := range pod.Spec.Volumes {
				if v.Name == merge.ModelVolumeName && v.PersistentVolumeClaim != nil {
					claim = v.PersistentVolumeClaim.ClaimName
				}
			}
			assert.Equal(t, tc.wantClaim, claim)

			var rt v1beta1.ClusterServingRuntime
			load(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct-2.yaml", &rt)
			want, err := merge.Revision(merge.Input{
				Service: out.ForComponent(v1beta1.ComponentEngine), Component: v1beta1.ComponentEngine,
				RuntimeKind: selection.KindClusterServingRuntime, RuntimeName: rt.Name, Runtime: &rt.Spec,
				Profiles: map[string]*v1beta1.ClusterEngineRuntimeProfile{},
				Model:    merge.NewModelMount(merge.KindBaseModel, model.Namespace, model.Name, model.Spec, model.Status),
			})
			require.NoError(t, err)
			assert.Equal(t, want, pod.Annotations[v1beta1.AnnotationRevision])

			// Discovery writes status (a new resourceVersion): the cached
			// revision is not reused when the model's mount changes.
			bigger := model.DeepCopy()
			bigger.Status.Discovered.WeightsBytes = ptrTo(int64(15 << 30))
			bigger.ResourceVersion = "12"
			w.index.UpsertBaseModel(bigger)
			pod2 := composeWith(t, w, pods, out)
			want2, err := merge.Revision(merge.Input{
				Service: out.ForComponent(v1beta1.ComponentEngine), Component: v1beta1.ComponentEngine,
				RuntimeKind: selection.KindClusterServingRuntime, RuntimeName: rt.Name, Runtime: &rt.Spec,
				Profiles: map[string]*v1beta1.ClusterEngineRuntimeProfile{},
				Model:    merge.NewModelMount(merge.KindBaseModel, bigger.Namespace, bigger.Name, bigger.Spec, bigger.Status),
			})
			require.NoError(t, err)
			if tc.wantClaim == "" {
				require.NotEqual(t, want, want2, "the download volume is sized from the model")
			}
			assert.Equal(t, want2, pod2.Annotations[v1beta1.AnnotationRevision])
		})
	}
}

// The model's metadata arrives between the two handlers: the mutating one
// left the service unpinned to wait (without the downloader image it pins
// with a decision), and the validating one admits it as it is instead of
// composing pods from a decision of its own, which would lack that image.
// The reconciler's nudge brings it back through both handlers to be
// pinned. (The real-node suite's gated-model test met this race.)
func TestMetadataArrivingBetweenTheHandlersDoesNotDeny(t *testing.T) {
	w := pendingWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	req := request(t, admissionv1.Create, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name)
	resp := w.isvcs().Mutate(ctx, req)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	req.Object.Raw = applyPatch(t, req.Object.Raw, resp)
	w.index.UpsertBaseModel(omeMistral(known))
	vresp := w.isvcs().Validate(ctx, req)
	require.True(t, vresp.Allowed, "%+v", vresp.Result)
	var out v1beta1.InferenceService
	require.NoError(t, json.Unmarshal(req.Object.Raw, &out))
	assert.Equal(t, map[string]string{AnnotationDecision: wantPendingDecision}, out.Annotations, "left waiting, unpinned")
}
