package handlers

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// spoofWorld is seed 000's priority world plus a KServe sklearn runtime
// that cannot serve the Mistral model.
func spoofWorld(t *testing.T) *world {
	w := seedWorld(t)
	w.addCSR(t, "api/v1beta1/testdata/seeds/001-priority-kserve-sklearnserver.yaml", time.Now())
	return w
}

const (
	pinLow     = "ClusterServingRuntime/srt-mistral-7b-instruct"
	pinWinner  = "ClusterServingRuntime/srt-mistral-7b-instruct-2"
	pinSklearn = "ClusterServingRuntime/kserve-sklearnserver"
)

// The digest is computable from public fields, so a CREATE could carry a
// pin to a runtime that cannot serve the model plus the matching digest,
// and Resolve did not re-check. On CREATE berth decides, whatever arrives.
func TestCreateWithForgedPinIsDecidedByBerth(t *testing.T) {
	w := spoofWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	isvc.Annotations = map[string]string{
		v1beta1.AnnotationResolvedRuntime:          pinSklearn,
		v1beta1.AnnotationResolvedAcceleratorClass: "",
		AnnotationDecision:                         "forged",
	}
	isvc.Annotations[v1beta1.AnnotationResolvedInputs] = inputDigest(isvc)
	out, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, pinWinner, out.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.NotContains(t, out.Annotations, v1beta1.AnnotationResolvedAcceleratorClass)
	assert.NotEqual(t, "forged", out.Annotations[AnnotationDecision])

	// A pin that reaches the validating handler without the mutating one
	// (another mutating webhook, or ours skipped) is checked, not trusted.
	req := request(t, admissionv1.Create, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name)
	vresp := w.isvcs().Validate(ctx, req)
	require.False(t, vresp.Allowed)
	assert.Contains(t, vresp.Result.Message, "kserve-sklearnserver")
	assert.Contains(t, vresp.Result.Message, "cannot serve")
}

// An UPDATE that edits the pin to a runtime that cannot serve the model is
// denied with the reason; the pin is not moved silently either way.
func TestUpdateEditingThePinToAnIncompatibleRuntimeIsDenied(t *testing.T) {
	w := spoofWorld(t)
	stored, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	edited := stored.DeepCopy()
	edited.Annotations[v1beta1.AnnotationResolvedRuntime] = pinSklearn
	_, resp := admitISVC(t, w, admissionv1.Update, edited, stored)
	require.False(t, resp.Allowed)
	msg := resp.Result.Message
	assert.Contains(t, msg, "annotation ome.io/resolved-runtime")
	assert.Contains(t, msg, "kserve-sklearnserver cannot serve BaseModel/mistral-7b-instruct")
	// kubectl prints the causes: the pin's annotation is the field at fault.
	require.NotNil(t, resp.Result.Details)
	require.NotEmpty(t, resp.Result.Details.Causes)
	fields := map[string]bool{}
	for _, c := range resp.Result.Details.Causes {
		fields[c.Field] = true
	}
	assert.True(t, fields["metadata.annotations[ome.io/resolved-runtime]"], "causes %+v", resp.Result.Details.Causes)
	assert.False(t, fields["spec.runtime.name"], "the service names no runtime: %+v", resp.Result.Details.Causes)
}

// A pin that contradicts spec.runtime reaching the validating handler
// (a later mutating webhook edited the service) is denied with the pin's
// annotation as the one cause.
func TestPinContradictingSpecRuntimeIsDeniedAtTheAnnotation(t *testing.T) {
	a := seedWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	req := request(t, admissionv1.Create, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name)
	req.Object.Raw = applyPatch(t, req.Object.Raw, a.isvcs().Mutate(ctx, req))
	var pinned v1beta1.InferenceService
	require.NoError(t, json.Unmarshal(req.Object.Raw, &pinned))
	require.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", pinned.Annotations[v1beta1.AnnotationResolvedRuntime])
	pinned.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: "srt-mistral-7b-instruct"}
	req = request(t, admissionv1.Create, "InferenceService", &pinned, nil, isvc.Namespace, isvc.Name)

	resp := a.isvcs().Validate(ctx, req)
	require.False(t, resp.Allowed)
	detail := "annotation ome.io/resolved-runtime=ClusterServingRuntime/srt-mistral-7b-instruct-2 contradicts spec.runtime (srt-mistral-7b-instruct); remove the annotation and berth resolves the runtime again"
	assert.Equal(t, "InferenceService "+isvc.Namespace+"/"+isvc.Name+": "+detail, resp.Result.Message)
	require.NotNil(t, resp.Result.Details)
	assert.Equal(t, []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "metadata.annotations[ome.io/resolved-runtime]", Message: "Invalid value: " + detail}},
		resp.Result.Details.Causes)
}

// An UPDATE that edits the pin to a compatible runtime is honoured and the
// decision is explained again.
func TestUpdateEditingThePinToACompatibleRuntimeIsHonoured(t *testing.T) {
	w := spoofWorld(t)
	stored, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	require.Equal(t, pinWinner, stored.Annotations[v1beta1.AnnotationResolvedRuntime])
	edited := stored.DeepCopy()
	edited.Annotations[v1beta1.AnnotationResolvedRuntime] = pinLow
	out, resp := admitISVC(t, w, admissionv1.Update, edited, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, pinLow, out.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.Contains(t, strings.Join(resp.Warnings, "\n"), "annotation ome.io/resolved-runtime was changed to "+pinLow+"; it passes every compatibility check, so berth keeps it")
	assert.Contains(t, out.Annotations[AnnotationDecision], pinLow)

	// The honoured pin then holds like any other: a later scale keeps it.
	scaled := out.DeepCopy()
	scaled.Spec.Engine.MaxReplicas = ptrTo(int32(2))
	again, resp := admitISVC(t, w, admissionv1.Update, scaled, out)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, pinLow, again.Annotations[v1beta1.AnnotationResolvedRuntime])
}

// The digest annotation is the user's to write too: changing the model and
// writing the new digest must not keep a pin made for the old model.
func TestUpdateWithAForgedDigestReDecides(t *testing.T) {
	w := spoofWorld(t)
	stored, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	big := mistralModel()
	big.Name = "mistral-70b"
	size := "70B"
	big.Spec.ModelParameterSize = &size
	w.index.UpsertBaseModel(big)
	edited := stored.DeepCopy()
	edited.Spec.Model.Name = "mistral-70b"
	edited.Annotations[v1beta1.AnnotationResolvedInputs] = inputDigest(edited)
	_, resp := admitISVC(t, w, admissionv1.Update, edited, stored)
	require.False(t, resp.Allowed, "no runtime serves a 70B model")
	assert.Contains(t, resp.Result.Message, "no runtime can serve BaseModel/mistral-70b")
}

// A pin that berth made and the update does not touch holds even if the
// runtime no longer passes (here: disabled since); the update is not denied
// for a problem it did not introduce, and the user is told.
func TestUnchangedPinThatNoLongerPassesWarns(t *testing.T) {
	w := spoofWorld(t)
	stored, _ := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	var rt v1beta1.ClusterServingRuntime
	load(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct-2.yaml", &rt)
	yes := true
	rt.Spec.Disabled = &yes
	w.index.UpsertClusterServingRuntime(&rt)
	scaled := stored.DeepCopy()
	scaled.Spec.Engine.MaxReplicas = ptrTo(int32(2))
	out, resp := admitISVC(t, w, admissionv1.Update, scaled, stored)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, pinWinner, out.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.Contains(t, strings.Join(resp.Warnings, "\n"), "disabled")
}

// The winning decision is explained: a short summary as a warning, emitted
// once (by the mutating handler only), and the full ranking in an
// annotation for kubectl describe.
func TestSuccessIsExplainedOnce(t *testing.T) {
	w := spoofWorld(t)
	isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
	req := request(t, admissionv1.Create, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name)
	mresp := w.isvcs().Mutate(ctx, req)
	req.Object.Raw = applyPatch(t, req.Object.Raw, mresp)
	vresp := w.isvcs().Validate(ctx, req)
	require.True(t, vresp.Allowed, "%+v", vresp.Result)
	assert.Empty(t, vresp.Warnings, "the validating handler repeats no warning")

	summary := ""
	for _, warn := range mresp.Warnings {
		if strings.HasPrefix(warn, "berth chose ") {
			assert.Empty(t, summary, "one summary")
			summary = warn
		}
	}
	assert.Equal(t, "berth chose runtime "+pinWinner+" for BaseModel/mistral-7b-instruct (protocol openAI), no AcceleratorClass; 1 other runtime ranked lower, e.g. "+
		pinLow+": matches, but priority 1 is below "+pinWinner+"'s 2; kubectl describe shows the full ranking (annotation ome.io/decision)", summary)

	out := decodeISVC(t, req.Object.Raw)
	want := "runtime " + pinWinner + " (auto-selected), no AcceleratorClass, protocol openAI, model BaseModel/mistral-7b-instruct\n" +
		pinLow + ": matches, but priority 1 is below " + pinWinner + "'s 2"
	if diff := cmp.Diff(want, out.Annotations[AnnotationDecision]); diff != "" {
		t.Errorf("decision annotation (-want +got):\n%s", diff)
	}
}

// The ranking annotation is bounded: a thousand losers do not make the
// object huge.
func TestDecisionAnnotationIsBounded(t *testing.T) {
	w := seedWorld(t)
	var rt v1beta1.ClusterServingRuntime
	load(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct.yaml", &rt)
	for i := range 1000 {
		r := rt.DeepCopy()
		r.Name = fmt.Sprintf("loser-%04d-%s", i, strings.Repeat("x", 40))
		r.Spec.SupportedModelFormats[0].Priority = nil
		w.index.UpsertClusterServingRuntime(r)
	}
	out, resp := admitISVC(t, w, admissionv1.Create, seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml"), nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	d := out.Annotations[AnnotationDecision]
	assert.LessOrEqual(t, len(d), maxDecisionAnnotation)
	assert.Regexp(t, `\n… and \d+ more line\(s\)$`, d)
	for _, warn := range resp.Warnings {
		assert.Less(t, len(warn), 600, "warnings stay short: %s", warn)
	}
}

func decodeISVC(t *testing.T, raw []byte) *v1beta1.InferenceService {
	t.Helper()
	var out v1beta1.InferenceService
	require.NoError(t, json.Unmarshal(raw, &out))
	return &out
}
