package servinggroups

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestRefusal(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"a LimitRange's refusal", apierrors.NewForbidden(pods, "x", errors.New("minimum memory usage per Container is 1Gi.  No request is specified")), true},
		{"an invalid pod", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "x", nil), true},
		{"a webhook's denial", apierrors.NewBadRequest("admission webhook denied the request"), true},
		{"a quota's refusal has its own condition", apierrors.NewForbidden(pods, "x", errors.New("exceeded quota: q, requested: cpu=1")), false},
		{"a conflict is retried", apierrors.NewConflict(pods, "x", errors.New("changed")), false},
		{"not found", apierrors.NewNotFound(pods, "x"), false},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), false},
		{"a server error is retried", apierrors.NewInternalError(errors.New("etcd")), false},
		{"not an API error", errors.New("connection refused"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, refusal(tc.err)) })
	}
}

func TestProblemsCondition(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "s-engine-0", errors.New("no"))
	owner := &metav1.OwnerReference{Kind: "ReplicaSet", Name: "rs"}
	cases := []struct {
		name                string
		probs               *syncProblems
		wantReason, wantMsg string
		wantOK              bool
	}{
		{name: "nothing", probs: &syncProblems{}},
		{name: "nil", probs: nil},
		{name: "a refused create", probs: &syncProblems{refused: []*writeError{{"creating", "pod", "s-engine-0", forbidden}}},
			wantReason: ReasonFailedCreate, wantOK: true,
			wantMsg: `the apiserver refused creating pod s-engine-0: pods "s-engine-0" is forbidden: no`},
		{name: "a refused update", probs: &syncProblems{refused: []*writeError{{"updating", "Service", "s", forbidden}}},
			wantReason: ReasonFailedUpdate, wantOK: true,
			wantMsg: `the apiserver refused updating Service s: pods "s-engine-0" is forbidden: no`},
		{name: "a create outranks an update", probs: &syncProblems{refused: []*writeError{{"updating", "Service", "s", forbidden}, {"creating", "pod", "p", forbidden}}},
			wantReason: ReasonFailedCreate, wantOK: true,
			wantMsg: `the apiserver refused updating Service s: pods "s-engine-0" is forbidden: no; the apiserver refused creating pod p: pods "s-engine-0" is forbidden: no`},
		{name: "a name conflict outranks everything", probs: func() *syncProblems {
			p := &syncProblems{refused: []*writeError{{"creating", "pod", "p", forbidden}}}
			p.conflict("Service", "s", owner)
			p.conflict("pod", "s-engine-0", nil)
			return p
		}(), wantReason: ReasonNameConflict, wantOK: true,
			wantMsg: "not controlled by this InferenceService, so never adopted or counted: Service s (controlled by ReplicaSet rs), pod s-engine-0 (no controller); " +
				"delete or rename them (an object left by `kubectl delete --cascade=orphan` belongs to nobody); " +
				`the apiserver refused creating pod p: pods "s-engine-0" is forbidden: no`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg, ok := tc.probs.condition()
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.wantReason, reason)
			assert.Equal(t, tc.wantMsg, msg)
		})
	}
}

func TestSetProblemsOverReadyAndDegraded(t *testing.T) {
	st := v1beta1.InferenceServiceStatus{Conditions: []metav1.Condition{
		{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, Reason: "GroupsNotReady", Message: "engine: 0/1 groups ready"},
		{Type: v1beta1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: "AsExpected"},
	}}
	p := &syncProblems{}
	p.conflict("pod", "s-engine-0", nil)
	setProblems(&st, p, 3)
	ready := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionReady)
	assert.Equal(t, ReasonNameConflict, ready.Reason)
	assert.Contains(t, ready.Message, "engine: 0/1 groups ready; not controlled")
	deg := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionDegraded)
	assert.Equal(t, metav1.ConditionTrue, deg.Status)
	assert.Equal(t, ReasonNameConflict, deg.Reason)
	assert.Equal(t, int64(3), deg.ObservedGeneration)
}

func TestForeignPods(t *testing.T) {
	isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "isvc-uid"}}
	labels := func(group string) map[string]string {
		return map[string]string{v1beta1.LabelInferenceService: "s", v1beta1.LabelComponent: "engine", v1beta1.LabelGroupIndex: group}
	}
	mine := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-engine-0", Labels: labels("0"),
		OwnerReferences: []metav1.OwnerReference{ownerRef(isvc)}}}
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s-engine-1", UID: types.UID("o"), Labels: labels("1")}}
	elsewhere := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses", Labels: labels("2")}}
	owned, foreign := foreignPods([]*corev1.Pod{mine, orphan, elsewhere}, isvc)
	assert.Equal(t, []*corev1.Pod{mine}, owned)
	if assert.Len(t, foreign["engine"], 1) {
		f := foreign["engine"][0]
		assert.Equal(t, "s-engine-1", f.Name)
		assert.True(t, f.Foreign)
		assert.Equal(t, int32(1), f.Group)
	}
}

// A refused create turns Ready and Degraded to one reason: one Warning
// event, although Ready (listed first) makes none of its own.
func TestConditionEventsOnePerReason(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	c := &Controller{recorder: rec}
	isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	cur := []metav1.Condition{
		{Type: v1beta1.ConditionResolved, Status: metav1.ConditionTrue, Reason: "Resolved"},
		{Type: v1beta1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonFailedCreate, Message: "0/1; refused"},
		{Type: v1beta1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: ReasonFailedCreate, Message: "refused"},
	}
	c.conditionEvents(isvc, nil, cur)
	c.conditionEvents(isvc, cur, cur) // a retry with the same reason says nothing
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	assert.Equal(t, []string{"Warning FailedCreate refused"}, got)
}

// Objects of the service's names that nobody labelled for it (no
// informer sees them): the pod's create is refused as AlreadyExists and
// the Service exists; neither is adopted, the service is Degraded
// NameConflict naming both, and nothing is created in the pod's place.
func TestSyncUnlabelledObjectsAreNameConflicts(t *testing.T) {
	f := newFixture(t, runtimeObj("rt", false), serviceObj("chat", "rt", 1))
	theirs := metav1.ObjectMeta{Name: "chat", Namespace: "ns", Labels: map[string]string{"app": "theirs"}}
	_, err := f.kube.CoreV1().Services("ns").Create(f.ctx, &corev1.Service{ObjectMeta: theirs}, metav1.CreateOptions{})
	require.NoError(t, err)
	theirs.Name = "chat-engine-0"
	require.NoError(t, f.kube.Tracker().Add(&corev1.Pod{ObjectMeta: theirs})) // past the fixture's stand-in webhook
	var deg *metav1.Condition
	f.syncUntil("ns/chat", func() bool {
		s, err := f.c.services.InferenceServices("ns").Get("chat")
		require.NoError(t, err)
		deg = meta.FindStatusCondition(s.Status.Conditions, v1beta1.ConditionDegraded)
		return deg != nil && deg.Reason == ReasonNameConflict && strings.Contains(deg.Message, "pod chat-engine-0")
	})
	assert.Contains(t, deg.Message, "Service chat (no controller)")
	pod, err := f.kube.CoreV1().Pods("ns").Get(f.ctx, "chat-engine-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, pod.OwnerReferences, "not adopted")
	svc, err := f.kube.CoreV1().Services("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, svc.OwnerReferences, "not adopted")
	assert.Nil(t, svc.Spec.Selector, "not changed")
}
