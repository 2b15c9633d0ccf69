package servinggroups

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// modelFixture runs the serving side of the wait (nudge,
// ModelMetadataPending) against client-go fakes; model status is written
// as the model controller (reconcile/models) would.
type modelFixture struct {
	t     *testing.T
	kube  *kubefake.Clientset
	berth *berthfake.Clientset
	c     *Controller
	ctx   context.Context
}

func newModelFixture(t *testing.T, kubeObjs []runtime.Object, berthObjs ...runtime.Object) *modelFixture {
	t.Helper()
	bc := berthfake.NewSimpleClientset(berthObjs...)
	kc := kubefake.NewSimpleClientset(kubeObjs...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := New(kc, bc, Options{Now: time.Now})
	c.kubeInformers.Start(ctx.Done())
	c.berthInformers.Start(ctx.Done())
	for !c.Synced() {
		time.Sleep(5 * time.Millisecond)
	}
	return &modelFixture{t: t, kube: kc, berth: bc, c: c, ctx: ctx}
}

func clusterModel(name, uri string) *v1beta1.ClusterBaseModel {
	return &v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1beta1.BaseModelSpec{Storage: &v1beta1.StorageSpec{StorageURI: ptr(uri)}}}
}

// waitCache waits until the cache holds what the clientset holds (the
// fake clientset keeps resourceVersion empty, so contents are compared).
func (f *modelFixture) waitCache(kind, ns, name string) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		var spec v1beta1.BaseModelSpec
		var st v1beta1.ModelStatus
		if kind == KindBaseModel {
			o, err := f.berth.OmeV1beta1().BaseModels(ns).Get(f.ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			spec, st = o.Spec, o.Status
		} else {
			o, err := f.berth.OmeV1beta1().ClusterBaseModels().Get(f.ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			spec, st = o.Spec, o.Status
		}
		m, err := f.c.getModel(kind, ns, name)
		return m != nil && apiequality.Semantic.DeepEqual(m.spec, spec) && apiequality.Semantic.DeepEqual(m.status, st), err
	})
	require.NoError(f.t, err)
}

func (f *modelFixture) clusterModel(name string) *v1beta1.ClusterBaseModel {
	f.t.Helper()
	o, err := f.berth.OmeV1beta1().ClusterBaseModels().Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return o
}

var waitNow = time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)

func llamaDiscovered() *v1beta1.ModelMetadata {
	return &v1beta1.ModelMetadata{ModelFormat: &v1beta1.ModelFormat{Name: "safetensors"}, ModelArchitecture: ptr("LlamaForCausalLM"),
		ModelParameterSize: ptr("8.03B"), ParameterCount: ptr(int64(8_030_261_248)), WeightsBytes: ptr(int64(16_060_522_496)),
		Source: "hf://meta-llama/Llama-3.1-8B-Instruct@0e9e39f"}
}

func modelWith(outcome plan.ModelOutcome) *model {
	cm := clusterModel("llama", "hf://meta-llama/Llama-3.1-8B-Instruct")
	m := modelFromObject(cm)
	if outcome.Reason != "" || outcome.Metadata != nil {
		m.status = plan.ModelStatusAfter(plan.ModelFacts{Generation: m.generation, Spec: m.spec, Now: waitNow}, outcome)
	}
	return m
}

func unpinned(name string) *v1beta1.InferenceService {
	isvc := serviceObj(name, "rt", 1)
	delete(isvc.Annotations, v1beta1.AnnotationResolvedRuntime)
	isvc.Spec.Model = &v1beta1.ModelRef{Name: "llama"}
	return isvc
}

func TestModelWait(t *testing.T) {
	resolved := modelWith(plan.ModelOutcome{Metadata: llamaDiscovered()})
	rev := plan.ModelMetadataRevision(resolved.spec, resolved.status)
	nudged := unpinned("chat")
	nudged.Annotations[v1beta1.AnnotationModelMetadataRevision] = rev
	stale := unpinned("chat")
	stale.Annotations[v1beta1.AnnotationModelMetadataRevision] = "0123456789"
	pinned := serviceObj("chat", "rt", 1)
	pinned.Spec.Model = &v1beta1.ModelRef{Name: "llama"}

	tests := []struct {
		name     string
		isvc     *v1beta1.InferenceService
		model    *model
		nudge    string
		waits    bool
		contains string
	}{
		{name: "pinned", isvc: pinned, model: modelWith(plan.ModelOutcome{})},
		{name: "no model", isvc: unpinned("chat")},
		{name: "never read", isvc: unpinned("chat"), model: modelWith(plan.ModelOutcome{}), waits: true, contains: "has not been read yet"},
		{name: "discovery failed", isvc: unpinned("chat"), model: modelWith(plan.ModelOutcome{Reason: "Unauthorized", Message: "the Hub refused hf://meta-llama/Llama-3.1-8B-Instruct@main"}),
			waits: true, contains: "Unauthorized: the Hub refused"},
		{name: "resolved: nudge", isvc: unpinned("chat"), model: resolved, nudge: rev},
		{name: "resolved since an older nudge", isvc: stale, model: resolved, nudge: rev},
		{name: "already nudged", isvc: nudged, model: resolved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nudge, wait := modelWait(tt.isvc, tt.model)
			assert.Equal(t, tt.nudge, nudge)
			require.Equal(t, tt.waits, wait != nil)
			if wait != nil {
				assert.Equal(t, ReasonModelMetadataPending, wait.reason)
				assert.Contains(t, wait.message, "ClusterBaseModel llama")
				assert.Contains(t, wait.message, tt.contains)
			}
		})
	}
}

func serviceCondition(isvc *v1beta1.InferenceService, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(isvc.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// A service applied with its model waits, saying why, and is nudged once
// the model's metadata is known; the nudge is sent once.
func TestServiceWaitsForModelThenIsNudged(t *testing.T) {
	f := newModelFixture(t, nil, runtimeObj("rt", false), clusterModel("llama", "hf://meta-llama/Llama-3.1-8B-Instruct"), unpinned("chat"))
	_, err := f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err)
	isvc, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	resolvedCond := serviceCondition(isvc, v1beta1.ConditionResolved)
	assert.Equal(t, metav1.ConditionFalse, resolvedCond.Status)
	assert.Equal(t, ReasonModelMetadataPending, resolvedCond.Reason)
	assert.Contains(t, resolvedCond.Message, "waits for the metadata of ClusterBaseModel llama")
	assert.Equal(t, ReasonModelMetadataPending, serviceCondition(isvc, v1beta1.ConditionReady).Reason)
	degraded := serviceCondition(isvc, v1beta1.ConditionDegraded)
	assert.Equal(t, metav1.ConditionFalse, degraded.Status, "waiting is not degraded")
	assert.Empty(t, isvc.Annotations[v1beta1.AnnotationModelMetadataRevision])
	assert.Empty(t, f.pods(), "nothing runs before the webhook pins")

	// The model resolves: its informer event queues the service. (Let the
	// service's own status event pass, then empty the queue.)
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
	cm := f.clusterModel("llama")
	cm.Status = plan.ModelStatusAfter(plan.ModelFacts{Generation: cm.Generation, Spec: cm.Spec, Now: waitNow}, plan.ModelOutcome{Metadata: llamaDiscovered()})
	_, err = f.berth.OmeV1beta1().ClusterBaseModels().UpdateStatus(f.ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	f.waitCache(KindClusterBaseModel, "", "llama")
	require.NoError(t, wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return f.c.queue.Len() > 0, nil
	}))
	key, _ := f.c.queue.Get()
	assert.Equal(t, "ns/chat", key)
	f.c.queue.Done(key)

	_, err = f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err)
	isvc, err = f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	want := plan.ModelMetadataRevision(cm.Spec, cm.Status)
	assert.Equal(t, want, isvc.Annotations[v1beta1.AnnotationModelMetadataRevision])
	assert.Equal(t, 1, f.patches(), "one nudge")

	// The webhook did not pin (none runs here): the service is NotPinned,
	// and is not nudged again for the same metadata.
	require.NoError(t, wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		s, err := f.c.services.InferenceServices("ns").Get("chat")
		return err == nil && s.Annotations[v1beta1.AnnotationModelMetadataRevision] == want, err
	}))
	_, err = f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err)
	assert.Equal(t, 1, f.patches())
	isvc, err = f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, ReasonNotPinned, serviceCondition(isvc, v1beta1.ConditionResolved).Reason)
}

func (f *modelFixture) patches() int {
	n := 0
	for _, a := range f.berth.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "inferenceservices" {
			n++
		}
	}
	return n
}

func (f *modelFixture) pods() []runtime.Object {
	l, err := f.kube.CoreV1().Pods("ns").List(f.ctx, metav1.ListOptions{})
	require.NoError(f.t, err)
	var out []runtime.Object
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out
}

// The reconciler composes the revision from the same model input as the
// pod webhook (webhook/handlers/model.go: merge.NewModelMount of the
// selection model's effective spec and discovered metadata), whatever the
// admin wrote and whatever was discovered.
func TestDecisionCarriesTheModel(t *testing.T) {
	discovered := plan.ModelOutcome{Metadata: llamaDiscovered()}
	tests := []struct {
		name    string
		uri     string
		edit    func(*v1beta1.BaseModelSpec)
		outcome plan.ModelOutcome
	}{
		{name: "discovered hf model", uri: "hf://meta-llama/Llama-3.1-8B-Instruct", outcome: discovered},
		{name: "admin wrote a format version only", uri: "hf://meta-llama/Llama-3.1-8B-Instruct", outcome: discovered,
			edit: func(s *v1beta1.BaseModelSpec) { s.ModelFormat.Version = ptr("2") }},
		{name: "admin wrote the architecture", uri: "hf://meta-llama/Llama-3.1-8B-Instruct", outcome: discovered,
			edit: func(s *v1beta1.BaseModelSpec) { s.ModelArchitecture = ptr("MyLlama") }},
		{name: "declared, never discovered", uri: "hf://meta-llama/Llama-3.1-8B-Instruct", outcome: plan.ModelOutcome{Reason: plan.ReasonDeclared},
			edit: func(s *v1beta1.BaseModelSpec) {
				s.ModelFormat.Name, s.ModelArchitecture, s.ModelParameterSize = "safetensors", ptr("LlamaForCausalLM"), ptr("8B")
			}},
		{name: "pvc", uri: "pvc://models/llama", outcome: discovered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isvc := serviceObj("chat", "rt", 1)
			isvc.Spec.Model = &v1beta1.ModelRef{Name: "llama"}
			isvc.Annotations[v1beta1.AnnotationModelDownloaderImage] = "downloader:v1"
			cm := clusterModel("llama", tt.uri)
			if tt.edit != nil {
				tt.edit(&cm.Spec)
			}
			cm.Status = plan.ModelStatusAfter(plan.ModelFacts{Generation: 1, Spec: cm.Spec, Now: waitNow}, tt.outcome)
			f := newModelFixture(t, nil, runtimeObj("rt", false), cm, isvc)

			dec, unres := f.c.resolve(isvc)
			require.Nil(t, unres)
			in := dec.input(isvc, v1beta1.ComponentEngine)
			require.NotNil(t, in.Model)
			webhook := merge.NewModelMount(KindClusterBaseModel, "", "llama", v1beta1.EffectiveModelSpec(cm.Spec, cm.Status),
				v1beta1.ModelStatus{Discovered: cm.Status.Discovered})
			assert.Equal(t, webhook, in.Model)
			ours, err := merge.Revision(in)
			require.NoError(t, err)
			in.Model = webhook
			theirs, err := merge.Revision(in)
			require.NoError(t, err)
			assert.Equal(t, theirs, ours)
		})
	}
}

// Discovery that changes what is mounted changes the revision: the
// discovered weights size the download volume.
func TestDiscoveryChangesTheRevision(t *testing.T) {
	isvc := serviceObj("chat", "rt", 1)
	isvc.Spec.Model = &v1beta1.ModelRef{Name: "llama"}
	isvc.Annotations[v1beta1.AnnotationModelDownloaderImage] = "downloader:v1"
	cm := clusterModel("llama", "hf://meta-llama/Llama-3.1-8B-Instruct")
	in := merge.Input{Service: isvc, Component: v1beta1.ComponentEngine, RuntimeKind: "ClusterServingRuntime", RuntimeName: "rt",
		Runtime: &runtimeObj("rt", false).Spec}
	in.Model = merge.NewModelMount(KindClusterBaseModel, "", "llama", cm.Spec, v1beta1.ModelStatus{})
	before, err := merge.Revision(in)
	require.NoError(t, err)
	st := plan.ModelStatusAfter(plan.ModelFacts{Generation: 1, Spec: cm.Spec, Now: waitNow}, plan.ModelOutcome{Metadata: llamaDiscovered()})
	in.Model = merge.NewModelMount(KindClusterBaseModel, "", "llama", cm.Spec, st)
	after, err := merge.Revision(in)
	require.NoError(t, err)
	assert.NotEqual(t, before, after)
}

// A pinned service whose model was deleted keeps its pods and says so.
func TestPinnedServiceWithoutItsModel(t *testing.T) {
	isvc := serviceObj("chat", "rt", 1)
	isvc.Spec.Model = &v1beta1.ModelRef{Name: "gone"}
	f := newModelFixture(t, nil, runtimeObj("rt", false), isvc)
	_, unres := f.c.resolve(isvc)
	require.NotNil(t, unres)
	assert.Equal(t, ReasonModelMissing, unres.reason)
	assert.Contains(t, unres.message, `"gone"`)
}

// A nudge the webhook refuses (it cannot resolve the service) puts its
// answer on the service.
func TestRefusedNudgeIsSaid(t *testing.T) {
	cm := clusterModel("llama", "hf://meta-llama/Llama-3.1-8B-Instruct")
	cm.Status = plan.ModelStatusAfter(plan.ModelFacts{Generation: 1, Spec: cm.Spec, Now: waitNow}, plan.ModelOutcome{Metadata: llamaDiscovered()})
	f := newModelFixture(t, nil, cm, unpinned("chat"))
	// As the apiserver returns a webhook's denial: its code and message, no
	// reason.
	denial := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
		Message: `admission webhook "isvc.berth.dev" denied the request: no runtime supports model ClusterBaseModel llama`}}
	f.berth.PrependReactor("patch", "inferenceservices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, denial
	})
	_, err := f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err, "a refusal is not retried with backoff")
	isvc, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	c := serviceCondition(isvc, v1beta1.ConditionResolved)
	assert.Equal(t, ReasonResolveRefused, c.Reason)
	assert.Contains(t, c.Message, "no runtime supports model ClusterBaseModel llama")
	assert.Equal(t, metav1.ConditionTrue, serviceCondition(isvc, v1beta1.ConditionDegraded).Status)
}
