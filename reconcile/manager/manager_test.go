package manager

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/reconcile/accelerators"
	"github.com/berthdev/berth/reconcile/classsync"
	"github.com/berthdev/berth/reconcile/policy"
	"github.com/berthdev/berth/reconcile/servinggroups"
)

// The two sides of ServingPolicy name the service conditions they share
// alike (neither package imports the other).
func TestPolicyConditionsAgree(t *testing.T) {
	assert.Equal(t, servinggroups.ConditionQuotaExceeded, policy.ConditionQuotaExceeded)
	assert.Equal(t, servinggroups.ConditionPolicyCompliant, policy.ConditionPolicyCompliant)
}

func TestSelected(t *testing.T) {
	all := map[string]bool{ServingGroups: true, Models: true, AcceleratorStatus: true, AcceleratorSync: false, Policy: true}
	got, err := selected(Config{})
	require.NoError(t, err)
	assert.Equal(t, all, got, "nil runs every controller")

	got, err = selected(Config{AcceleratorStatus: accelerators.AcceleratorStatusOptions{Disabled: true}})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{ServingGroups: true, Models: true, AcceleratorStatus: false, AcceleratorSync: false, Policy: true}, got, "the older spelling still leaves it out")

	got, err = selected(Config{AcceleratorSync: classsync.Options{KueueSync: true}})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{ServingGroups: true, Models: true, AcceleratorStatus: true, AcceleratorSync: true, Policy: true}, got, "discovery or the Kueue sync asked for")

	got, err = selected(Config{Policy: policy.Options{Disabled: true}})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{ServingGroups: true, Models: true, AcceleratorStatus: true, AcceleratorSync: false, Policy: false}, got, "--serving-policies=false leaves policy out")

	_, err = selected(Config{Controllers: []string{AcceleratorSync}})
	assert.EqualError(t, err, "accelerator-sync asks for neither AcceleratorClass discovery nor the Kueue sync")

	got, err = selected(Config{Controllers: []string{Models}})
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{Models: true}, got)

	_, err = selected(Config{Controllers: []string{"model"}})
	require.Error(t, err)
	assert.Equal(t, `unknown controller "model" (known: servinggroups, models, accelerator-status, accelerator-sync, policy)`, err.Error())

	_, err = selected(Config{Controllers: []string{}})
	assert.EqualError(t, err, "no controller selected")
}

// The first controller that fails stops the others; its error, named,
// is returned. Controllers ending because ctx is done are not failures.
func TestRunAllStopsOnFirstFailure(t *testing.T) {
	stopped := make(chan string, 2)
	blocking := func(name string) func(context.Context) error {
		return func(ctx context.Context) error {
			<-ctx.Done()
			stopped <- name
			return ctx.Err()
		}
	}
	boom := errors.New("caches did not sync")
	ctrls := []controller{
		{name: "a", run: blocking("a")},
		{name: "b", run: func(context.Context) error { return boom }},
		{name: "c", run: blocking("c")},
	}
	done := make(chan error, 1)
	go func() { done <- runAll(context.Background(), ctrls, slog.Default()) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, boom)
		assert.Equal(t, "controller b: caches did not sync", err.Error())
	case <-time.After(5 * time.Second):
		t.Fatal("runAll did not return after a controller failed")
	}
	assert.ElementsMatch(t, []string{"a", "c"}, []string{<-stopped, <-stopped})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, runAll(ctx, []controller{{name: "a", run: blocking("a")}}, slog.Default()))
}
