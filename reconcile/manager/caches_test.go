package manager

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
)

// watches counts the watches a fake clientset served, by resource and
// selectors: one informer cache each.
func watches(actions []k8stesting.Action) map[string]int {
	out := map[string]int{}
	for _, a := range actions {
		w, ok := a.(k8stesting.WatchActionImpl)
		if !ok {
			continue
		}
		r := w.GetWatchRestrictions()
		out[w.GetResource().Resource+" labels="+r.Labels.String()+" fields="+r.Fields.String()]++
	}
	return out
}

// Rule 3: every controller the manager runs by default asks the shared
// factories for its informers, so each kind (with the same selectors) is
// listed, watched and cached once per process. The serving groups and
// LoRA adapters controllers read the same pods; the AcceleratorClass
// status controller the same classes as the others.
func TestEveryCacheOnce(t *testing.T) {
	kube, berth := kubefake.NewClientset(), berthfake.NewSimpleClientset()
	cfg := Config{Workers: 1}
	enabled, err := selected(cfg)
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	ctrls := build(kube, berth, prometheus.NewRegistry(), cfg, cfg.Options, enabled, log)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runAll(ctx, ctrls, log) }()
	defer func() { cancel(); <-done }()
	require.Eventually(t, func() bool {
		for _, c := range ctrls {
			if !c.synced() {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // a second informer of a kind would have started with the first

	for _, set := range []map[string]int{watches(kube.Actions()), watches(berth.Actions())} {
		for key, n := range set {
			assert.Equal(t, 1, n, "%s is watched %d times", key, n)
		}
	}
	kw := watches(kube.Actions())
	assert.Contains(t, kw, "pods labels=ome.io/inferenceservice fields=", "the serving groups' and the adapters' pods")
	assert.Contains(t, watches(berth.Actions()), "acceleratorclasses labels= fields=")
}
