package handlers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// seedRuntime is seed 000's first priority runtime under another name.
func seedRuntime(t *testing.T, name string, priority int32) *v1beta1.ClusterServingRuntime {
	var csr v1beta1.ClusterServingRuntime
	load(t, "api/v1beta1/testdata/seeds/000-priority-srt-mistral-7b-instruct.yaml", &csr)
	csr.Name = name
	csr.Spec.SupportedModelFormats[0].Priority = &priority
	return &csr
}

// A runtime arg with an unterminated template reached pods literally; it is
// denied when the runtime is applied, naming the field.
func TestRuntimeUnterminatedTemplateIsDenied(t *testing.T) {
	w := newWorld()
	csr := seedRuntime(t, "unterminated", 1)
	csr.Spec.EngineConfig.Runner.Args = []string{"--port=8080", "--served-model-name={{.Name"}
	resp := w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", csr, nil, "", csr.Name))
	require.False(t, resp.Allowed)
	want := []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.engineConfig.runner.args[1]",
		Message: `Invalid value: "--served-model-name={{.Name": template action {{.Name is not closed: berth would pass it to the engine literally; add }}`}}
	require.NotNil(t, resp.Result.Details)
	if diff := cmp.Diff(want, resp.Result.Details.Causes); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
	assert.Contains(t, resp.Result.Message, "ClusterServingRuntime unterminated is invalid")
}

// Duplicate env names in one container collapsed silently (the last won).
func TestRuntimeDuplicateEnvIsDenied(t *testing.T) {
	w := newWorld()
	csr := seedRuntime(t, "dup-env", 1)
	csr.Spec.EngineConfig.Runner.Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}}
	resp := w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", csr, nil, "", csr.Name))
	require.False(t, resp.Allowed)
	want := []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueDuplicate, Field: "spec.engineConfig.runner.env[1].name",
		Message: `Duplicate value: "A": also spec.engineConfig.runner.env[0].name; only the last definition would reach the pod, so remove one`}}
	require.NotNil(t, resp.Result.Details)
	if diff := cmp.Diff(want, resp.Result.Details.Causes); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}

// `kubectl apply -f dir/` with two tied runtimes: the second arrives before
// the informer has delivered the first. The conflict check reads the
// runtimes from the API server, not only the cache.
func TestRuntimeConflictChecksAFreshRead(t *testing.T) {
	w := newWorld() // the cache has not seen "first" yet
	first, second := seedRuntime(t, "first", 1), seedRuntime(t, "second", 1)
	h := w.runtimes()
	h.Live = &RuntimeLister{
		Cluster: func(context.Context) ([]v1beta1.ClusterServingRuntime, error) {
			return []v1beta1.ClusterServingRuntime{*first}, nil
		},
	}
	resp := h.ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", second, nil, "", second.Name))
	require.False(t, resp.Allowed, "the tie with the runtime the cache has not seen yet is denied")
	assert.Contains(t, resp.Result.Message, "ClusterServingRuntime/first")

	// Namespaced runtimes are read from their namespace.
	sr := func(name string) *v1beta1.ServingRuntime {
		return &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns1"}, Spec: *first.Spec.DeepCopy()}
	}
	var asked string
	h.Live.Namespaced = func(_ context.Context, ns string) ([]v1beta1.ServingRuntime, error) {
		asked = ns
		return []v1beta1.ServingRuntime{*sr("a")}, nil
	}
	resp = h.ValidateNamespaced(ctx, request(t, admissionv1.Create, "ServingRuntime", sr("b"), nil, "ns1", "b"))
	require.False(t, resp.Allowed)
	assert.Equal(t, "ns1", asked)
	assert.Contains(t, resp.Result.Message, "ServingRuntime/a")

	// When the read fails, the cache decides and the user is told.
	h.Live.Cluster = func(context.Context) ([]v1beta1.ClusterServingRuntime, error) { return nil, errors.New("etcd is slow") }
	resp = h.ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", second, nil, "", second.Name))
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Contains(t, resp.Warnings, "priority conflicts were checked against the webhook's cache only: listing ClusterServingRuntimes failed: etcd is slow")
}

// GitOps re-applies every runtime every few minutes. A stored runtime that
// a later runtime ties with (both admitted concurrently, or before the rule
// existed) must not be denied for a conflict the update did not introduce.
func TestRuntimeUpdateRatchetsConflicts(t *testing.T) {
	w := newWorld()
	now := time.Now()
	a, b, c := seedRuntime(t, "a", 1), seedRuntime(t, "b", 1), seedRuntime(t, "c", 2)
	a.CreationTimestamp, b.CreationTimestamp = metav1.NewTime(now), metav1.NewTime(now.Add(time.Second))
	for _, r := range []*v1beta1.ClusterServingRuntime{a, b, c} {
		w.index.UpsertClusterServingRuntime(r)
	}

	resp := w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Update, "ClusterServingRuntime", a, a, "", a.Name))
	require.True(t, resp.Allowed, "an unchanged re-apply is admitted: %+v", resp.Result)
	require.Len(t, resp.Warnings, 1)
	assert.Contains(t, resp.Warnings[0], "ClusterServingRuntime/b")
	assert.Contains(t, resp.Warnings[0], "not introduced by this update")

	// Raising a to c's priority introduces a tie with c: denied, naming c only.
	raised := seedRuntime(t, "a", 2)
	resp = w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Update, "ClusterServingRuntime", raised, a, "", a.Name))
	require.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "ClusterServingRuntime/c")
	assert.NotContains(t, resp.Result.Message, "ClusterServingRuntime/b")

	// A CREATE is never ratcheted.
	d := seedRuntime(t, "d", 1)
	resp = w.runtimes().ValidateCluster(ctx, request(t, admissionv1.Create, "ClusterServingRuntime", d, nil, "", d.Name))
	require.False(t, resp.Allowed)
}
