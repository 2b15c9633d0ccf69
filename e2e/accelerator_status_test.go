package e2e

// AcceleratorClass status (issue 14, item 1), end to end: berth-reconciler
// (default flags: --accelerator-status on, --accelerator-status-interval
// 10s) writes each class's Ready nodes, their allocatable accelerators and
// what bound pods leave free, on the real apiserver and the kwok fleet.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/e2eutil"
	"github.com/berthdev/berth/selection"
)

const (
	accStatusClass    = "nvidia-h100-80gb" // deploy/accelerators, discovers the fleet's h100 pool
	accStatusInterval = 10 * time.Second   // berth-reconciler's default --accelerator-status-interval
	accStatusWait     = 3*accStatusInterval + 10*time.Second
)

// fleetH100 is what the fleet file says of the class's nodes: their names
// and allocatable nvidia.com/gpu.
func fleetH100(t *testing.T) (names []string, gpus int64) {
	t.Helper()
	for _, n := range env.Fleet.Nodes() {
		if n.Labels["nvidia.com/gpu.product"] != h100Product {
			continue
		}
		names = append(names, n.Name)
		q := n.Status.Allocatable["nvidia.com/gpu"]
		gpus += q.Value()
	}
	sort.Strings(names)
	require.NotEmpty(t, names, "the fleet has an H100 pool")
	return names, gpus
}

// usedOn sums the nvidia.com/gpu of bound, unfinished pods on nodes, read
// from the API (not from berth).
func usedOn(t *testing.T, ctx context.Context, nodes []string) int64 {
	t.Helper()
	var used int64
	for _, n := range nodes {
		pods, err := env.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n).String()})
		require.NoError(t, err)
		for i := range pods.Items {
			if selection.PodHoldsAccelerators(&pods.Items[i]) {
				used += selection.PodAcceleratorRequests(&pods.Items[i])["nvidia.com/gpu"]
			}
		}
	}
	return used
}

// waitClassStatus polls the class until ok holds, and fails with the last
// status.
func waitClassStatus(t *testing.T, what string, ok func(v1beta1.AcceleratorClassStatus) bool) v1beta1.AcceleratorClassStatus {
	t.Helper()
	bc := berthClient(t)
	return e2eutil.Poll(t, accStatusWait, "AcceleratorClass status: "+what,
		func(ctx context.Context) (v1beta1.AcceleratorClassStatus, error) {
			c, err := bc.OmeV1beta1().AcceleratorClasses().Get(ctx, accStatusClass, metav1.GetOptions{})
			if err != nil {
				return v1beta1.AcceleratorClassStatus{}, err
			}
			return c.Status, nil
		}, ok, func(last v1beta1.AcceleratorClassStatus) string {
			return fmt.Sprintf("last status: nodes=%v total=%d available=%d conditions=%+v",
				last.Nodes, last.TotalAccelerators, last.AvailableAccelerators, last.Conditions)
		})
}

// countWrites counts the class's updates (status writes: nothing else
// writes a shipped class) from now until stop is called.
func accCountWrites(t *testing.T) (stop func() int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := berthClient(t).OmeV1beta1().AcceleratorClasses().Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", accStatusClass).String(), AllowWatchBookmarks: false,
		ResourceVersion: currentClassRV(t)})
	require.NoError(t, err)
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Modified {
				n.Add(1)
			}
		}
	}()
	return func() int64 { cancel(); w.Stop(); <-done; return n.Load() }
}

func currentClassRV(t *testing.T) string {
	c, err := berthClient(t).OmeV1beta1().AcceleratorClasses().Get(ctxT(t, apiTimeout), accStatusClass, metav1.GetOptions{})
	require.NoError(t, err)
	return c.ResourceVersion
}

// The shipped H100 class: its status names the fleet's H100 nodes, totals
// their allocatable, and is Ready with one product. Three pods of 2 GPUs
// lower availableAccelerators by 6 within an interval or two, deleting
// them restores it, cordoning a node takes it out of status.nodes and
// its GPUs out of the total; and the class is written at most once per
// interval meanwhile.
func TestAcceleratorStatus(t *testing.T) {
	ensureOutOfBox(t)
	nodes, total := fleetH100(t)
	ctx := ctxT(t, 5*time.Minute)

	st := waitClassStatus(t, "the fleet's H100 nodes and GPUs", func(s v1beta1.AcceleratorClassStatus) bool {
		return strings.Join(s.Nodes, ",") == strings.Join(nodes, ",") && int64(s.TotalAccelerators) == total &&
			int64(s.AvailableAccelerators) == total-usedOn(t, ctx, nodes)
	})
	assert.Equal(t, int32(len(nodes)), st.AvailableNodes)
	require.NotNil(t, st.LastUpdated)
	if c := meta.FindStatusCondition(st.Conditions, "Ready"); assert.NotNil(t, c) {
		assert.Equal(t, metav1.ConditionTrue, c.Status)
		assert.Equal(t, "NodesReady", c.Reason)
	}
	if c := meta.FindStatusCondition(st.Conditions, "SelectorTooBroad"); assert.NotNil(t, c) {
		assert.Equal(t, metav1.ConditionFalse, c.Status, c.Message)
		assert.Equal(t, "matching nodes are model h100: "+h100Product+fmt.Sprintf(" (%d node(s))", len(nodes)), c.Message)
	}
	before := int64(st.AvailableAccelerators)

	t.Run("pods lower and restore availableAccelerators", func(t *testing.T) {
		stop := accCountWrites(t)
		start := time.Now()
		ns := e2eutil.Namespace(t, env.Kube, "e2e-accstatus")
		for i := range 3 {
			_, err := env.Kube.CoreV1().Pods(ns).Create(ctx, gpuPod(ns, fmt.Sprintf("two-gpus-%d", i), 2), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		for i := range 3 {
			e2eutil.WaitPod(t, env.Kube, ns, fmt.Sprintf("two-gpus-%d", i), 60*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		}
		ran := time.Now()
		waitClassStatus(t, "6 GPUs fewer available", func(s v1beta1.AcceleratorClassStatus) bool { return int64(s.AvailableAccelerators) == before-6 })
		t.Logf("availableAccelerators %d → %d, %s after the 3 pods ran", before, before-6, time.Since(ran).Round(100*time.Millisecond))

		require.NoError(t, env.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{}))
		deleted := time.Now()
		waitClassStatus(t, "the 6 GPUs available again", func(s v1beta1.AcceleratorClassStatus) bool { return int64(s.AvailableAccelerators) == before })
		t.Logf("availableAccelerators back to %d %s after the delete", before, time.Since(deleted).Round(100*time.Millisecond))

		elapsed, writes := time.Since(start), stop()
		bound := int64(elapsed/accStatusInterval) + 1
		t.Logf("%d status write(s) in %s (bound: one per %s, %d)", writes, elapsed.Round(time.Second), accStatusInterval, bound)
		assert.LessOrEqual(t, writes, bound, "at most one write per interval")
		assert.GreaterOrEqual(t, writes, int64(2), "a write for the pods and one for their deletion")
	})

	t.Run("cordoning a node takes it out of status.nodes", func(t *testing.T) {
		node := nodes[0]
		setUnschedulable(t, node, true)
		t.Cleanup(func() { setUnschedulable(t, node, false) })
		var gpus resource.Quantity
		for _, n := range env.Fleet.Nodes() {
			if n.Name == node {
				gpus = n.Status.Allocatable["nvidia.com/gpu"]
			}
		}
		s := waitClassStatus(t, node+" out of status.nodes", func(s v1beta1.AcceleratorClassStatus) bool {
			return !accContains(s.Nodes, node) && len(s.Nodes) == len(nodes)-1
		})
		assert.Equal(t, total-gpus.Value(), int64(s.TotalAccelerators), "the cordoned node's GPUs leave the total")
		assert.Equal(t, int32(len(nodes)-1), s.AvailableNodes)

		setUnschedulable(t, node, false)
		waitClassStatus(t, node+" back in status.nodes", func(s v1beta1.AcceleratorClassStatus) bool { return accContains(s.Nodes, node) })
	})
}

func setUnschedulable(t *testing.T, name string, v bool) {
	t.Helper()
	ctx := ctxT(t, apiTimeout)
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, v)
	_, err := env.Kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

func accContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
