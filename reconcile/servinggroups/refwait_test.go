package servinggroups

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/reconcile/plan"
)

const (
	noLlama = `spec.model.name: no BaseModel "llama" in namespace ns and no ClusterBaseModel "llama"`
	noSRT   = `spec.runtime.name: no ServingRuntime "srt" in namespace ns and no ClusterServingRuntime "srt"`
)

// declaredModel is a ClusterBaseModel whose spec says everything: resolved
// without discovery.
func declaredModel(name string) *v1beta1.ClusterBaseModel {
	cm := clusterModel(name, "hf://meta-llama/Llama-3.1-8B-Instruct")
	cm.Spec.ModelFormat = v1beta1.ModelFormat{Name: "safetensors"}
	cm.Spec.ModelArchitecture, cm.Spec.ModelParameterSize = ptr("LlamaForCausalLM"), ptr("8B")
	return cm
}

func namingRuntime(isvc *v1beta1.InferenceService, name string, kind *string) *v1beta1.InferenceService {
	isvc.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: name, Kind: kind}
	return isvc
}

func TestServiceWait(t *testing.T) {
	declared := modelFromObject(declaredModel("llama"))
	rev := plan.ModelMetadataRevision(declared.spec, declared.status)
	local := modelFromObject(clusterModel("llama", "/raid/models/llama")) // nothing discovers it
	localRev := plan.ModelMetadataRevision(local.spec, local.status)
	const srt = "ClusterServingRuntime/srt@uid-srt"
	withAnn := func(kv ...string) *v1beta1.InferenceService {
		isvc := unpinned("chat")
		for i := 0; i < len(kv); i += 2 {
			isvc.Annotations[kv[i]] = kv[i+1]
		}
		return isvc
	}
	pinned := serviceObj("chat", "rt", 1)
	for _, tc := range []struct {
		name      string
		isvc      *v1beta1.InferenceService
		refs      refs
		wantNudge map[string]string
		wantWhy   []string
		wantWait  *unresolved
	}{
		{name: "pinned: nothing, whatever is missing", isvc: pinned, refs: refs{modelMissing: "x", runtimeMissing: "y"}},
		{name: "model missing", isvc: unpinned("chat"), refs: refs{modelMissing: noLlama[len("spec.model.name: "):]},
			wantWait: &unresolved{ReasonModelNotFound, "InferenceService ns/chat waits: " + noLlama + "; the webhook pins a runtime once it is created; if the name is a typo, fix spec.model.name"}},
		{name: "runtime missing", isvc: unpinned("chat"), refs: refs{model: declared, runtimeMissing: noSRT[len("spec.runtime.name: "):]},
			wantWait: &unresolved{ReasonRuntimeNotFound, "InferenceService ns/chat waits: " + noSRT + "; the webhook pins a runtime once it is created; if the name is a typo, fix spec.runtime.name"}},
		{name: "both missing: the model's reason", isvc: unpinned("chat"), refs: refs{modelMissing: noLlama[len("spec.model.name: "):], runtimeMissing: noSRT[len("spec.runtime.name: "):]},
			wantWait: &unresolved{ReasonModelNotFound, "InferenceService ns/chat waits: " + noLlama + "; " + noSRT + "; the webhook pins a runtime once both are created; if a name is a typo, fix spec.model.name or spec.runtime.name"}},
		{name: "model awaits metadata, runtime exists: the model's wait", isvc: unpinned("chat"), refs: refs{model: modelWith(plan.ModelOutcome{}), runtime: srt},
			wantWait: &unresolved{ReasonModelMetadataPending, "InferenceService ns/chat waits for the metadata of ClusterBaseModel llama (its metadata has not been read yet); the webhook pins a runtime once it is known"}},
		{name: "both exist: one nudge with both", isvc: unpinned("chat"), refs: refs{model: declared, runtime: srt},
			wantNudge: map[string]string{v1beta1.AnnotationModelMetadataRevision: rev, v1beta1.AnnotationRuntimeRevision: srt},
			wantWhy:   []string{"the metadata of ClusterBaseModel llama is known (revision " + rev + ")", "ClusterServingRuntime/srt exists"}},
		{name: "the runtime was created after the model's nudge", isvc: withAnn(v1beta1.AnnotationModelMetadataRevision, rev), refs: refs{model: declared, runtime: srt},
			wantNudge: map[string]string{v1beta1.AnnotationRuntimeRevision: srt}, wantWhy: []string{"ClusterServingRuntime/srt exists"}},
		{name: "the runtime was recreated", isvc: withAnn(v1beta1.AnnotationModelMetadataRevision, rev, v1beta1.AnnotationRuntimeRevision, "ClusterServingRuntime/srt@old"),
			refs: refs{model: declared, runtime: srt}, wantNudge: map[string]string{v1beta1.AnnotationRuntimeRevision: srt}, wantWhy: []string{"ClusterServingRuntime/srt exists"}},
		{name: "already nudged for both", isvc: withAnn(v1beta1.AnnotationModelMetadataRevision, rev, v1beta1.AnnotationRuntimeRevision, srt), refs: refs{model: declared, runtime: srt}},
		{name: "a model nothing discovers is nudged, so the webhook answers", isvc: unpinned("chat"), refs: refs{model: local},
			wantNudge: map[string]string{v1beta1.AnnotationModelMetadataRevision: localRev}, wantWhy: []string{"the metadata of ClusterBaseModel llama is known (revision " + localRev + ")"}},
		{name: "names nothing", isvc: unpinned("chat")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, w := serviceWait(tc.isvc, tc.refs)
			assert.Equal(t, tc.wantWait, w)
			if tc.wantNudge == nil {
				assert.Nil(t, n)
				return
			}
			require.NotNil(t, n)
			assert.Equal(t, tc.wantNudge, n.set.Annotations())
			assert.Equal(t, tc.wantWhy, n.why)
		})
	}
}

// serviceRefs finds what a service names as selection does: the
// namespaced object first, spec.*.kind restricting the lookup.
func TestServiceRefs(t *testing.T) {
	sr := &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "ns-srt", Namespace: "ns", UID: "uid-ns-srt"}}
	csr := runtimeObj("srt", false)
	csr.UID = "uid-srt"
	kind := func(k string) *string { return &k }
	f := newModelFixture(t, nil, sr, csr, declaredModel("llama"))
	for _, tc := range []struct {
		name string
		isvc *v1beta1.InferenceService
		want refs
	}{
		{name: "cluster runtime", isvc: namingRuntime(unpinned("chat"), "srt", nil), want: refs{runtime: "ClusterServingRuntime/srt@uid-srt"}},
		{name: "namespaced runtime", isvc: namingRuntime(unpinned("chat"), "ns-srt", nil), want: refs{runtime: "ServingRuntime/ns-srt@uid-ns-srt"}},
		{name: "kind ServingRuntime skips the cluster one", isvc: namingRuntime(unpinned("chat"), "srt", kind("ServingRuntime")),
			want: refs{runtimeMissing: `no ServingRuntime "srt" in namespace ns`}},
		{name: "kind ClusterServingRuntime skips the namespaced one", isvc: namingRuntime(unpinned("chat"), "ns-srt", kind("ClusterServingRuntime")),
			want: refs{runtimeMissing: `no ClusterServingRuntime "ns-srt"`}},
		{name: "missing runtime", isvc: namingRuntime(unpinned("chat"), "nope", nil),
			want: refs{runtimeMissing: `no ServingRuntime "nope" in namespace ns and no ClusterServingRuntime "nope"`}},
		{name: "unknown runtime kind: the webhook's to deny", isvc: namingRuntime(unpinned("chat"), "srt", kind("Runtime")), want: refs{}},
		{name: "missing BaseModel", isvc: func() *v1beta1.InferenceService {
			i := unpinned("chat")
			i.Spec.Model.Kind = kind(KindBaseModel)
			return i
		}(), want: refs{modelMissing: `no BaseModel "llama" in namespace ns`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.c.serviceRefs(tc.isvc)
			require.NoError(t, err)
			if tc.isvc.Spec.Model.Kind == nil {
				require.NotNil(t, got.model)
				assert.Equal(t, "ClusterBaseModel llama", got.model.ref())
			}
			got.model = nil
			assert.Equal(t, tc.want, got)
		})
	}
}

// drain empties the service queue once the service's status shows.
func drain(t *testing.T, f *modelFixture) {
	t.Helper()
	require.NoError(t, wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		s, err := f.c.services.InferenceServices("ns").Get("chat")
		return err == nil && len(s.Status.Conditions) > 0, err
	}))
	time.Sleep(50 * time.Millisecond)
	for f.c.queue.Len() > 0 {
		k, _ := f.c.queue.Get()
		f.c.queue.Forget(k)
		f.c.queue.Done(k)
	}
}

// nextKey waits for the informers to queue a service and returns its key.
func nextKey(t *testing.T, f *modelFixture) string {
	t.Helper()
	require.NoError(t, wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return f.c.queue.Len() > 0, nil
	}))
	key, _ := f.c.queue.Get()
	f.c.queue.Done(key)
	return key
}

// OME's sample service applied before its model and runtime (kubectl
// applies a directory in file-name order): it waits, saying what is
// missing, without Degraded; each creation queues it; once both exist it
// is nudged once, with both annotations.
func TestServiceWaitsForItsModelAndRuntimeThenIsNudged(t *testing.T) {
	f := newModelFixture(t, nil, namingRuntime(unpinned("chat"), "srt", nil))
	_, err := f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err)
	isvc, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, metav1.Condition{Type: v1beta1.ConditionResolved, Status: metav1.ConditionFalse, Reason: ReasonModelNotFound, ObservedGeneration: 1,
		Message: "InferenceService ns/chat waits: " + noLlama + "; " + noSRT + "; the webhook pins a runtime once both are created; if a name is a typo, fix spec.model.name or spec.runtime.name"},
		withoutTime(serviceCondition(isvc, v1beta1.ConditionResolved)))
	assert.Equal(t, ReasonModelNotFound, serviceCondition(isvc, v1beta1.ConditionReady).Reason)
	assert.Equal(t, metav1.ConditionFalse, serviceCondition(isvc, v1beta1.ConditionDegraded).Status, "waiting is not degraded")
	assert.Zero(t, f.patches())

	// The model is created: its informer queues the service, which now
	// waits for the runtime.
	drain(t, f)
	_, err = f.berth.OmeV1beta1().ClusterBaseModels().Create(f.ctx, declaredModel("llama"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, "ns/chat", nextKey(t, f))
	f.waitCache(KindClusterBaseModel, "", "llama")
	_, err = f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err)
	isvc, err = f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	c := serviceCondition(isvc, v1beta1.ConditionResolved)
	assert.Equal(t, ReasonRuntimeNotFound, c.Reason)
	assert.Equal(t, "InferenceService ns/chat waits: "+noSRT+"; the webhook pins a runtime once it is created; if the name is a typo, fix spec.runtime.name", c.Message)
	assert.Zero(t, f.patches(), "no nudge: the webhook would wait again")

	// The runtime is created: every service is queued, and this one is
	// nudged once, with both annotations.
	drain(t, f)
	rt := runtimeObj("srt", false)
	rt.UID = types.UID("uid-srt")
	_, err = f.berth.OmeV1beta1().ClusterServingRuntimes().Create(f.ctx, rt, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, "ns/chat", nextKey(t, f))
	require.NoError(t, wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		_, err := f.c.clusterRuntimes.Get("srt")
		return err == nil, nil
	}))
	_, err = f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err)
	isvc, err = f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	cm := declaredModel("llama")
	assert.Equal(t, plan.ModelMetadataRevision(cm.Spec, cm.Status), isvc.Annotations[v1beta1.AnnotationModelMetadataRevision])
	assert.Equal(t, "ClusterServingRuntime/srt@uid-srt", isvc.Annotations[v1beta1.AnnotationRuntimeRevision])
	assert.Equal(t, 1, f.patches(), "one nudge")
}

func withoutTime(c metav1.Condition) metav1.Condition {
	c.LastTransitionTime = metav1.Time{}
	return c
}

// A runtime nudge the webhook refuses puts its answer on the service.
func TestRefusedRuntimeNudgeIsSaid(t *testing.T) {
	rt := runtimeObj("srt", false)
	rt.UID = "uid-srt"
	isvc := namingRuntime(serviceObj("chat", "x", 1), "srt", nil)
	delete(isvc.Annotations, v1beta1.AnnotationResolvedRuntime)
	f := newModelFixture(t, nil, rt, isvc)
	denial := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
		Message: `admission webhook "isvc.berth.dev" denied the request: spec.model is required`}}
	f.berth.PrependReactor("patch", "inferenceservices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, denial
	})
	_, err := f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err)
	got, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	c := serviceCondition(got, v1beta1.ConditionResolved)
	assert.Equal(t, ReasonResolveRefused, c.Reason)
	assert.Equal(t, "InferenceService ns/chat: ClusterServingRuntime/srt exists, but the webhook refused to resolve the service: "+denial.Error(), c.Message)
}

// The webhook decides on the nudge's UPDATE from its own cache; when that
// lagged it admits the update unpinned and the annotations already equal
// what serviceWait writes. renudge asks again, after 2s then 4s, three
// nudges in all, and never for a pinned service.
func TestRenudge(t *testing.T) {
	declared := modelFromObject(declaredModel("llama"))
	rev := plan.ModelMetadataRevision(declared.spec, declared.status)
	const srt = "ClusterServingRuntime/srt@uid-srt"
	withAnn := func(kv ...string) *v1beta1.InferenceService {
		isvc := unpinned("chat")
		for i := 0; i < len(kv); i += 2 {
			isvc.Annotations[kv[i]] = kv[i+1]
		}
		return isvc
	}
	both := refs{model: declared, runtime: srt}
	for _, tc := range []struct {
		name        string
		isvc        *v1beta1.InferenceService
		refs        refs
		since       time.Duration
		wantNudge   map[string]string
		wantRequeue time.Duration
	}{
		{name: "nudged once, 2s ago: again, attempt 2", isvc: withAnn(v1beta1.AnnotationModelMetadataRevision, rev, v1beta1.AnnotationRuntimeRevision, srt), refs: both, since: 2 * time.Second,
			wantNudge: map[string]string{v1beta1.AnnotationModelMetadataRevision: rev + "#2", v1beta1.AnnotationRuntimeRevision: srt + "#2"}},
		{name: "nudged once, just now: look again in 1.5s", isvc: withAnn(v1beta1.AnnotationModelMetadataRevision, rev), refs: both, since: 500 * time.Millisecond,
			wantRequeue: 1500 * time.Millisecond},
		{name: "attempt 2, 4s ago: attempt 3", isvc: withAnn(v1beta1.AnnotationModelMetadataRevision, rev+"#2"), refs: refs{model: declared}, since: 4 * time.Second,
			wantNudge: map[string]string{v1beta1.AnnotationModelMetadataRevision: rev + "#3"}},
		{name: "attempt 2, 3s ago: wait for 4s", isvc: withAnn(v1beta1.AnnotationModelMetadataRevision, rev+"#2"), refs: refs{model: declared}, since: 3 * time.Second,
			wantRequeue: time.Second},
		{name: "three nudges made: the service is NotPinned", isvc: withAnn(v1beta1.AnnotationModelMetadataRevision, rev+"#3"), refs: refs{model: declared}, since: time.Hour},
		{name: "never nudged: serviceWait's business", isvc: unpinned("chat"), refs: both, since: time.Hour},
		{name: "pinned", isvc: serviceObj("chat", "rt", 1), refs: both, since: time.Hour},
		{name: "a forged suffix counts as attempts made", isvc: withAnn(v1beta1.AnnotationRuntimeRevision, srt+"#9"), refs: both, since: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, requeue := renudge(tc.isvc, tc.refs, tc.since)
			assert.Equal(t, tc.wantRequeue, requeue)
			if tc.wantNudge == nil {
				assert.Nil(t, n)
				return
			}
			require.NotNil(t, n)
			assert.Equal(t, tc.wantNudge, n.set.Annotations())
			// serviceWait reads the suffixed values as nudged: no flip-flop.
			after := tc.isvc.DeepCopy()
			for k, v := range n.set.Annotations() {
				after.Annotations[k] = v
			}
			sn, sw := serviceWait(after, tc.refs)
			assert.Nil(t, sn)
			assert.Nil(t, sw)
		})
	}
}
