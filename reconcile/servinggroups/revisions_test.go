package servinggroups

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/reconcile/plan"
)

// A pod restored from a record is the pod the webhook composes for the
// same identity from the same inputs: group env, name, labels, hostname.
func TestRestoreIsWhatTheWebhookComposes(t *testing.T) {
	for _, leaderWorker := range []bool{false, true} {
		t.Run(fmt.Sprintf("leaderWorker=%v", leaderWorker), func(t *testing.T) {
			rt := runtimeObj("rt", leaderWorker)
			isvc := serviceObj("chat", "rt", 4)
			dec := &decision{pin: pin.Pin{RuntimeKind: pin.KindClusterServingRuntime, RuntimeName: "rt"}, runtime: &rt.Spec}
			topo := merge.Topology(isvc, dec.runtime)[0]
			c := &Controller{}
			rec, err := c.newRecord(isvc, dec, topo, "rev1")
			require.NoError(t, err)
			var data recordedTemplates
			require.NoError(t, json.Unmarshal(rec.Data.Raw, &data))
			ids := []plan.PodID{{Group: 3}}
			if leaderWorker {
				ids = []plan.PodID{{Group: 3, Role: merge.RoleLeader}, {Group: 3, Role: merge.RoleWorker, Worker: 1}, {Group: 3, Role: merge.RoleWorker, Worker: 2}}
			}
			for _, id := range ids {
				want := skeleton(isvc, topo, id)
				g, err := merge.GroupIdentityFromPod(want)
				require.NoError(t, err)
				in := dec.input(isvc, topo.Component)
				in.Group = g
				require.NoError(t, merge.ComposePod(in, want))
				want.Annotations = mergeMaps(want.Annotations, map[string]string{v1beta1.AnnotationRevision: "rev1"})

				got, err := restore(isvc, topo, id, &data)
				require.NoError(t, err)
				assert.Equal(t, want, got, "pod %+v", id)
			}
		})
	}
}

func TestStableAfter(t *testing.T) {
	cases := []struct {
		name, rev, stableSoFar string
		live                   []string
		want                   string
	}{
		{"a new service: its first revision", "r1", "", nil, "r1"},
		{"every pod runs one revision: it", "r2", "r1", []string{"r1"}, "r1"},
		{"a finished roll", "r2", "r1", []string{"r2"}, "r2"},
		{"a canary: the stable revision so far", "r3", "r1", []string{"r1", "r2"}, "r1"},
		{"no pods: the stable revision so far", "r2", "r1", nil, "r1"},
		{"no record yet, mid-canary: the other revision", "r2", "", []string{"r1", "r2"}, "r1"},
		{"no record yet, three revisions: unknown", "r3", "", []string{"r1", "r2", "r3"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, stableAfter(tc.rev, tc.stableSoFar, tc.live))
		})
	}
}

// records waits until the informer shows n records of the service's engine.
func (f *fixture) records(name string, n int) map[string]*appsv1.ControllerRevision {
	f.t.Helper()
	var recs map[string]*appsv1.ControllerRevision
	require.Eventually(f.t, func() bool {
		isvc, err := f.c.services.InferenceServices("ns").Get(name)
		if err != nil {
			return false
		}
		recs = f.c.records(isvc, v1beta1.ComponentEngine)
		return len(recs) == n
	}, 10*time.Second, 20*time.Millisecond)
	return recs
}

// The canary on the fake clientsets: each revision is recorded once, owned
// by the service; a deleted protected pod comes back from its record,
// marked so the webhook keeps it.
func TestProtectedPodComesBackFromItsRecord(t *testing.T) {
	svc := serviceObj("chat", "rt", 2)
	svc.Spec.RolloutStrategy = &v1beta1.RolloutStrategy{RollingUpdateConfiguration: &v1beta1.RollingUpdateConfiguration{Partition: ptr(intstr.FromInt32(1))}}
	f := newFixture(t, runtimeObj("rt", false), svc)
	f.syncUntil("ns/chat", func() bool { return len(f.pods("ns")) == 2 })
	recs := f.records("chat", 1)
	var oldRev string
	for r, cr := range recs {
		oldRev = r
		assert.Equal(t, RevisionName("chat", "engine", r), cr.Name)
		assert.True(t, metav1.IsControlledBy(cr, svc))
		assert.Equal(t, r, cr.Annotations[annotationStableRevision], "a new service's first revision is stable")
	}

	rt, err := f.berth.OmeV1beta1().ClusterServingRuntimes().Get(f.ctx, "rt", metav1.GetOptions{})
	require.NoError(t, err)
	rt.Spec.EngineConfig.Runner.Image = "engine:v2"
	_, err = f.berth.OmeV1beta1().ClusterServingRuntimes().Update(f.ctx, rt, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		r, err := f.c.clusterRuntimes.Get("rt")
		return err == nil && r.Spec.EngineConfig.Runner.Image == "engine:v2"
	}, 10*time.Second, 20*time.Millisecond)
	_, err = f.c.sync(f.ctx, "ns/chat")
	require.NoError(t, err)
	recs = f.records("chat", 2)
	for r, cr := range recs {
		if r != oldRev {
			assert.Equal(t, oldRev, cr.Annotations[annotationStableRevision], "mid-canary the stable revision is the old one")
		}
	}

	require.NoError(t, f.kube.CoreV1().Pods("ns").Delete(f.ctx, "chat-engine-0", metav1.DeleteOptions{}))
	f.syncUntil("ns/chat", func() bool {
		p, err := f.c.pods.Pods("ns").Get("chat-engine-0")
		return err == nil && p.Annotations[v1beta1.AnnotationRestoredFrom] != ""
	})
	p, err := f.c.pods.Pods("ns").Get("chat-engine-0")
	require.NoError(t, err)
	assert.Equal(t, oldRev, p.Annotations[v1beta1.AnnotationRevision])
	assert.Equal(t, RevisionName("chat", "engine", oldRev), p.Annotations[v1beta1.AnnotationRestoredFrom])
	assert.Equal(t, "engine:v1", p.Spec.Containers[0].Image)
}

// The history keeps RevisionHistoryLimit records beyond the current, the
// stable and the live ones, deleting the oldest.
func TestHistoryIsPruned(t *testing.T) {
	f := newFixture(t, runtimeObj("rt", false), serviceObj("chat", "rt", 1))
	isvc, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	yes := true
	recs := map[string]*appsv1.ControllerRevision{}
	for i := 1; i <= RevisionHistoryLimit+4; i++ {
		rev := fmt.Sprintf("r%02d", i)
		cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: RevisionName("chat", "engine", rev), Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "ome.io/v1beta1", Kind: "InferenceService", Name: "chat", UID: isvc.UID, Controller: &yes}}},
			Revision: int64(i)}
		got, err := f.kube.AppsV1().ControllerRevisions("ns").Create(f.ctx, cr, metav1.CreateOptions{})
		require.NoError(t, err)
		recs[rev] = got
	}
	live := []plan.Pod{{Revision: "r01"}, {Revision: "r03", Terminating: true}}
	f.c.pruneHistory(f.ctx, isvc, "r14", "r02", live, recs)
	list, err := f.kube.AppsV1().ControllerRevisions("ns").List(f.ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, cr := range list.Items {
		names = append(names, cr.Name)
	}
	assert.ElementsMatch(t, []string{"chat-engine-r01", "chat-engine-r02", "chat-engine-r04", "chat-engine-r05", "chat-engine-r06", "chat-engine-r07",
		"chat-engine-r08", "chat-engine-r09", "chat-engine-r10", "chat-engine-r11", "chat-engine-r12", "chat-engine-r13", "chat-engine-r14"}, names,
		"live r01, stable r02 and current r14 stay; of the others (r03, terminating, is not live) the 10 newest")
}

// A record is used only when the service controls it and it records the
// revision its name says; anything else is not restored from.
func TestReadRecordRefusesWhatItCannotTrust(t *testing.T) {
	f := newFixture(t, runtimeObj("rt", false), serviceObj("chat", "rt", 1))
	isvc, err := f.berth.OmeV1beta1().InferenceServices("ns").Get(f.ctx, "chat", metav1.GetOptions{})
	require.NoError(t, err)
	yes := true
	mine := []metav1.OwnerReference{{APIVersion: "ome.io/v1beta1", Kind: "InferenceService", Name: "chat", UID: isvc.UID, Controller: &yes}}
	cases := []struct {
		name, rev string
		owners    []metav1.OwnerReference
		data      string
		want      string
	}{
		{"not controlled by the service", "r1", nil, `{"revision":"r1","pods":[{"spec":{"containers":[]}}]}`, "is not controlled by the InferenceService"},
		{"another revision inside", "r2", mine, `{"revision":"r9","pods":[]}`, `records revision "r9"`},
		{"unreadable data", "r3", mine, `[1,2]`, "cannot unmarshal"},
		{"a good record", "r4", mine, `{"revision":"r4","pods":[{"spec":{"containers":[{"name":"c","image":"i"}]}}]}`, ""},
	}
	for _, tc := range cases {
		cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: RevisionName("chat", "engine", tc.rev), Namespace: "ns", OwnerReferences: tc.owners},
			Data: runtime.RawExtension{Raw: []byte(tc.data)}}
		_, err := f.kube.AppsV1().ControllerRevisions("ns").Create(f.ctx, cr, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := RevisionName("chat", "engine", tc.rev)
			require.Eventually(t, func() bool { _, err := f.c.revisions.ControllerRevisions("ns").Get(name); return err == nil }, 10*time.Second, 20*time.Millisecond)
			data, err := f.c.readRecord(isvc, name, tc.rev)
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, "i", data.Pods[0].Spec.Containers[0].Image)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A record's data is JSON with sorted keys: the apiserver re-encodes data
// so when it patches the record (the garbage collector orphaning it), and
// data is immutable.
func TestRecordDataIsCanonical(t *testing.T) {
	data := recordedTemplates{Revision: "abc", Component: "engine", Pods: []recordedPod{{
		Role: "", Labels: map[string]string{"b": "2", "a": "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i:1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
	}}}
	raw, err := canonicalJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != string(again) {
		t.Errorf("data changes when re-encoded:\n%s\n%s", raw, again)
	}
}
