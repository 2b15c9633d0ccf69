package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

const (
	svcPrefix = "InferenceService mistral-7b-instruct/mistral-7b-instruct: "
	// What a service naming OME's Llama model and runtime (OME's
	// config/samples/isvc/meta/llama-3-1-8b-instruct.yaml) finds missing.
	noLlama   = `spec.model.name: no BaseModel "llama-3-1-8b-instruct" in namespace mistral-7b-instruct and no ClusterBaseModel "llama-3-1-8b-instruct"`
	noSRT     = `spec.runtime.name: no ServingRuntime "srt-llama-3-1-8b-instruct" in namespace mistral-7b-instruct and no ClusterServingRuntime "srt-llama-3-1-8b-instruct"`
	fixModel  = "if the name is a typo, fix spec.model.name"
	fixRT     = "if the name is a typo, fix spec.runtime.name"
	onceItIs  = "; admitted unpinned: berth decides once it exists; "
	waitModel = "waiting: " + noLlama + "; berth pins a runtime once it exists; " + fixModel
)

func namesModel(name string) func(*v1beta1.InferenceService) {
	return func(i *v1beta1.InferenceService) { i.Spec.Model = &v1beta1.ModelRef{Name: name} }
}

func namesRuntime(name string) func(*v1beta1.InferenceService) {
	return func(i *v1beta1.InferenceService) { i.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: name} }
}

func forge(i *v1beta1.InferenceService) {
	if i.Annotations == nil {
		i.Annotations = map[string]string{}
	}
	i.Annotations[v1beta1.AnnotationResolvedRuntime] = pinWinner
	i.Annotations[v1beta1.AnnotationModelMetadataRevision] = "forged"
	i.Annotations[v1beta1.AnnotationRuntimeRevision] = "forged"
}

// A service whose spec.model.name or spec.runtime.name names an object
// that does not exist yet is admitted unpinned, on CREATE and on UPDATE,
// with one warning naming what is missing, and ome.io/decision says the
// same (issue 11: `kubectl apply -f dir/` in file-name order).
func TestServiceNamingAMissingModelOrRuntimeIsAdmittedUnpinned(t *testing.T) {
	for _, tc := range []struct {
		name         string
		world        func(*testing.T) *world
		op           admissionv1.Operation
		opt          func(*admissionv1.AdmissionRequest)
		edit         []func(*v1beta1.InferenceService) // of the service sent (and, on UPDATE, not of the stored one)
		storedPinned bool                              // UPDATE: the stored service was pinned; else it waited
		wantWarnings []string
		wantDecision string
	}{
		{name: "create, model missing", world: seedWorld, op: admissionv1.Create, edit: fns(namesModel("llama-3-1-8b-instruct")),
			wantWarnings: []string{svcPrefix + noLlama + onceItIs + fixModel}, wantDecision: waitModel},
		{name: "create, model missing, dry-run", world: seedWorld, op: admissionv1.Create, opt: dryRun, edit: fns(namesModel("llama-3-1-8b-instruct")),
			wantWarnings: []string{svcPrefix + noLlama + onceItIs + fixModel}, wantDecision: waitModel},
		{name: "create with a forged pin and forged nudges", world: seedWorld, op: admissionv1.Create, edit: fns(namesModel("llama-3-1-8b-instruct"), forge),
			wantWarnings: []string{svcPrefix + noLlama + onceItIs + fixModel}, wantDecision: waitModel},
		{name: "create, runtime missing", world: seedWorld, op: admissionv1.Create, edit: fns(namesRuntime("srt-llama-3-1-8b-instruct")),
			wantWarnings: []string{svcPrefix + noSRT + onceItIs + fixRT},
			wantDecision: "waiting: " + noSRT + "; berth pins a runtime once it exists; " + fixRT},
		{name: "create, both missing (OME's sample first)", world: seedWorld, op: admissionv1.Create,
			edit:         fns(namesModel("llama-3-1-8b-instruct"), namesRuntime("srt-llama-3-1-8b-instruct")),
			wantWarnings: []string{svcPrefix + noLlama + "; " + noSRT + "; admitted unpinned: berth decides once both exist; if a name is a typo, fix spec.model.name or spec.runtime.name"},
			wantDecision: "waiting: " + noLlama + "; " + noSRT + "; berth pins a runtime once both exist; if a name is a typo, fix spec.model.name or spec.runtime.name"},
		{name: "create, model awaits metadata and runtime missing", world: func(t *testing.T) *world { return pendingWorld(t) }, op: admissionv1.Create,
			edit:         fns(namesRuntime("srt-llama-3-1-8b-instruct")),
			wantWarnings: []string{wantPendingWarning, svcPrefix + noSRT + onceItIs + fixRT},
			wantDecision: wantPendingDecision + "\nwaiting: " + noSRT + "; berth pins a runtime once it exists; " + fixRT},
		{name: "update of a service that waits (a nudge, or kubectl apply again)", world: seedWorld, op: admissionv1.Update,
			edit: fns(namesModel("llama-3-1-8b-instruct")), wantWarnings: []string{svcPrefix + noLlama + onceItIs + fixModel}, wantDecision: waitModel},
		{name: "update of a pinned service to a model not created yet", world: seedWorld, op: admissionv1.Update, storedPinned: true,
			edit: fns(namesModel("llama-3-1-8b-instruct")), wantWarnings: []string{svcPrefix + noLlama + onceItIs + fixModel}, wantDecision: waitModel},
		{name: "update of a pinned service that edits in a pin to a runtime not created yet", world: seedWorld, op: admissionv1.Update, storedPinned: true,
			edit: fns(namesRuntime("srt-llama-3-1-8b-instruct"), func(i *v1beta1.InferenceService) {
				i.Annotations[v1beta1.AnnotationResolvedRuntime] = "ClusterServingRuntime/srt-llama-3-1-8b-instruct"
			}),
			wantWarnings: []string{svcPrefix + noSRT + onceItIs + fixRT},
			wantDecision: "waiting: " + noSRT + "; berth pins a runtime once it exists; " + fixRT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.world(t)
			isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
			var old *v1beta1.InferenceService
			if tc.op == admissionv1.Update {
				stored := isvc.DeepCopy()
				if !tc.storedPinned {
					apply(stored, tc.edit)
				}
				old, _ = admitISVC(t, w, admissionv1.Create, stored, nil)
				require.Equal(t, tc.storedPinned, old.Annotations[v1beta1.AnnotationResolvedRuntime] != "")
				isvc = old.DeepCopy()
				isvc.Spec.Engine.MaxReplicas = ptrTo(int32(2))
			}
			apply(isvc, tc.edit)
			out, resp := admitWith(t, w, tc.op, isvc, old, tc.opt)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			assert.Equal(t, tc.wantWarnings, resp.Warnings)
			assert.Equal(t, map[string]string{AnnotationDecision: tc.wantDecision}, out.Annotations, "no pin, no forged nudge: only why it waits")
		})
	}
}

func fns(f ...func(*v1beta1.InferenceService)) []func(*v1beta1.InferenceService) { return f }

func apply(isvc *v1beta1.InferenceService, edits []func(*v1beta1.InferenceService)) {
	for _, f := range edits {
		f(isvc)
	}
}

// Only a named reference that does not exist waits, and only when the
// request brings it. Everything else denies exactly as before.
func TestWhatStillDenies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     []func(*v1beta1.InferenceService)
		world    func(*world)                    // applied after the stored service was admitted (UPDATE)
		update   func(*v1beta1.InferenceService) // nil: CREATE
		disable  bool                            // the model is disabled
		wantCode string
		wantMsg  string
	}{
		{name: "no model at all", edit: fns(func(i *v1beta1.InferenceService) { i.Spec.Model = nil }), wantCode: selection.CodeModelNotFound,
			wantMsg: svcPrefix + "spec.model is required: set spec.model.name to a BaseModel in namespace mistral-7b-instruct or a ClusterBaseModel"},
		{name: "no model at all, and a runtime not created yet", edit: fns(func(i *v1beta1.InferenceService) { i.Spec.Model = nil }, namesRuntime("srt-llama-3-1-8b-instruct")),
			wantCode: selection.CodeModelNotFound,
			wantMsg:  svcPrefix + "spec.model is required: set spec.model.name to a BaseModel in namespace mistral-7b-instruct or a ClusterBaseModel"},
		{name: "a disabled model, and a runtime not created yet", edit: fns(namesRuntime("srt-llama-3-1-8b-instruct"), func(*v1beta1.InferenceService) {}),
			disable: true, wantCode: selection.CodeModelInvalid,
			wantMsg: svcPrefix + "spec.model.name: BaseModel/mistral-7b-instruct is disabled; enable it or choose another model"},
		{name: "unknown model kind", edit: fns(func(i *v1beta1.InferenceService) { i.Spec.Model.Kind = ptrTo("Model") }), wantCode: selection.CodeInvalidInput,
			wantMsg: svcPrefix + `spec.model.kind "Model" is not BaseModel or ClusterBaseModel`},
		{name: "the named runtime exists but cannot serve the model", edit: fns(namesRuntime("srt-mistral-7b-instruct"), namesModel("mistral-7b-instruct"),
			func(i *v1beta1.InferenceService) { i.Spec.ProtocolVersion = ptrTo(v1beta1.ProtocolKServeV2) }),
			wantCode: selection.CodeRuntimeIncompatible},
		// (A pinned service whose runtime was deleted keeps its pin on an
		// unrelated update: TestPinHeldWhileItsRuntimeIsGone.)
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := seedWorld(t)
			if tc.disable {
				m := mistralModel()
				m.Spec.Disabled = ptrTo(true)
				w.index.UpsertBaseModel(m)
			}
			obs := &recordingObserver{}
			isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
			apply(isvc, tc.edit)
			var old *v1beta1.InferenceService
			op := admissionv1.Create
			if tc.update != nil {
				stored, resp := admitISVC(t, w, op, isvc, nil)
				require.True(t, resp.Allowed, "%+v", resp.Result)
				require.NotEmpty(t, stored.Annotations[v1beta1.AnnotationResolvedRuntime])
				tc.world(w)
				old, isvc, op = stored, stored.DeepCopy(), admissionv1.Update
				tc.update(isvc)
			}
			h := w.isvcs()
			h.Observer = obs
			req := request(t, op, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name)
			if old != nil {
				req.OldObject.Raw = []byte(mustJSON(old))
			}
			req.Object.Raw = applyPatch(t, req.Object.Raw, h.Mutate(ctx, req))
			resp := h.Validate(ctx, req)
			require.False(t, resp.Allowed)
			assert.Equal(t, []string{tc.wantCode}, obs.denied)
			if tc.wantMsg != "" {
				assert.Equal(t, tc.wantMsg, resp.Result.Message)
			}
		})
	}
}

// The reconciler's nudge (annotation ome.io/runtime-revision) on a service
// that waited for its runtime is an UPDATE without a pin: once the runtime
// exists, berth decides and keeps the nudge.
func TestRuntimeNudgeDecidesOnceTheRuntimeExists(t *testing.T) {
	w := newWorld()
	w.index.UpsertBaseModel(mistralModel())
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-explicit-runtime.yaml")
	waiting, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	require.Empty(t, waiting.Annotations[v1beta1.AnnotationResolvedRuntime])

	w.addCSR(t, "api/v1beta1/testdata/seeds/000-srt-mistral-7b-instruct.yaml", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	nudged := waiting.DeepCopy()
	nudged.Annotations[v1beta1.AnnotationRuntimeRevision] = "ClusterServingRuntime/srt-mistral-7b-instruct@uid-1"
	out, resp := admitISVC(t, w, admissionv1.Update, nudged, waiting)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, pinLow, out.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct@uid-1", out.Annotations[v1beta1.AnnotationRuntimeRevision], "the nudge is the reconciler's; berth keeps it")
}

// Neither nudge annotation is an input of the decision: written by hand on
// a pinned service, it moves nothing.
func TestForgedNudgesOnAPinnedServiceChangeNothing(t *testing.T) {
	for _, key := range []string{v1beta1.AnnotationModelMetadataRevision, v1beta1.AnnotationRuntimeRevision} {
		t.Run(key, func(t *testing.T) {
			w := seedWorld(t)
			stored, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
			require.Equal(t, pinWinner, stored.Annotations[v1beta1.AnnotationResolvedRuntime])
			w.addCSR(t, "api/v1beta1/testdata/seeds/000-srt-mistral-7b-instruct.yaml", time.Now()) // a newer candidate
			forged := stored.DeepCopy()
			forged.Annotations[key] = "forged"
			out, resp := admitISVC(t, w, admissionv1.Update, forged, stored)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			assert.Empty(t, resp.Warnings)
			assert.Equal(t, maps(stored.Annotations, key, "forged"), out.Annotations)
		})
	}
}
