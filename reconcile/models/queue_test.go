package models

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/reconcile/plan"
)

// drainQueue empties the queue and returns what it held.
func drainQueue(c *Controller) []string {
	var keys []string
	for c.queue.Len() > 0 {
		k, _ := c.queue.Get()
		keys = append(keys, k)
		c.queue.Forget(k)
		c.queue.Done(k)
	}
	return keys
}

// A model is queued when added, deleted, on a resync or when its spec,
// labels or annotations change; never for its status alone (the
// controller's own write, which would also reset a failure's backoff).
func TestModelQueueRules(t *testing.T) {
	c := New(kubefake.NewSimpleClientset(), berthfake.NewSimpleClientset(), nil, Options{})
	old := clusterModel("llama", "hf://meta-llama/Llama-3.1-8B-Instruct")
	old.ResourceVersion = "1"
	with := func(edit func(*v1beta1.ClusterBaseModel)) *v1beta1.ClusterBaseModel {
		n := old.DeepCopy()
		n.ResourceVersion = "2"
		edit(n)
		return n
	}
	tests := []struct {
		name     string
		old, cur any
		want     []string
	}{
		{name: "added", cur: old, want: []string{"ClusterBaseModel/llama"}},
		{name: "resync", old: old, cur: old.DeepCopy(), want: []string{"ClusterBaseModel/llama"}},
		{name: "spec", old: old, cur: with(func(m *v1beta1.ClusterBaseModel) { m.Generation = 2 }), want: []string{"ClusterBaseModel/llama"}},
		{name: "labels", old: old, cur: with(func(m *v1beta1.ClusterBaseModel) { m.Labels = map[string]string{"a": "b"} }), want: []string{"ClusterBaseModel/llama"}},
		{name: "status only", old: old, cur: with(func(m *v1beta1.ClusterBaseModel) {
			m.Status = plan.ModelStatusAfter(plan.ModelFacts{Generation: 1, Spec: m.Spec, Now: time.Now()}, plan.ModelOutcome{Reason: plan.ReasonUnavailable})
		})},
		{name: "not a model", cur: &v1beta1.InferenceService{}},
		{name: "namespaced", cur: &v1beta1.BaseModel{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}, want: []string{"BaseModel/ns/m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.modelChanged(tt.old, tt.cur)
			assert.Equal(t, tt.want, drainQueue(c))
		})
	}
}

// Run starts the informers and workers: a declared model gets its status
// (one write, counted through Options.Writes), and Run returns once ctx
// is done.
func TestRunWritesStatus(t *testing.T) {
	m := clusterModel("declared", "hf://meta-llama/Llama-3.1-8B-Instruct")
	m.Spec.ModelFormat = v1beta1.ModelFormat{Name: "safetensors"}
	m.Spec.ModelArchitecture, m.Spec.ModelParameterSize = ptr("LlamaForCausalLM"), ptr("8B")
	bc := berthfake.NewSimpleClientset(m)
	writes := make(chan string, 8)
	c := New(kubefake.NewSimpleClientset(), bc, nil, Options{Writes: func(verb, resource string) { writes <- verb + " " + resource }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		o, err := bc.OmeV1beta1().ClusterBaseModels().Get(ctx, "declared", metav1.GetOptions{})
		return err == nil && len(o.Status.Conditions) > 0, err
	}))
	assert.Equal(t, "update clusterbasemodels/status", <-writes)
	assert.True(t, c.Synced())
	assert.Equal(t, map[string]float64{plan.ReasonDeclared: 1}, c.m.Discoveries())
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ctx was done")
	}
}
