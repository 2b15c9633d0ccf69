package selection

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// The per-class node sets and free-accelerator histograms are maintained
// incrementally; after any sequence of events they must equal a count from
// scratch, or availability would drift from the cluster.
func TestIncrementalIndexMatchesRecount(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			x := NewIndex()
			for step := 0; step < 300; step++ {
				switch r.Intn(7) {
				case 0:
					c := class(fmt.Sprint("c", r.Intn(4))).Obj()
					if r.Intn(2) == 0 {
						c.Spec.Resources[0].Name = "amd.com/gpu"
					}
					x.UpsertAcceleratorClass(c)
				case 1:
					x.DeleteAcceleratorClass(fmt.Sprint("c", r.Intn(4)))
				case 2, 3:
					x.UpsertNode(NodeInfo{Name: fmt.Sprint("n", r.Intn(8)), Labels: map[string]string{"gpu": fmt.Sprint("c", r.Intn(4))},
						Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": int64(r.Intn(9)), "amd.com/gpu": int64(r.Intn(9))}, Ready: r.Intn(4) > 0})
				case 4:
					x.DeleteNode(fmt.Sprint("n", r.Intn(8)))
				case 5:
					x.SetPodUsage(fmt.Sprint("p", r.Intn(10)), fmt.Sprint("n", r.Intn(8)),
						map[corev1.ResourceName]int64{"nvidia.com/gpu": int64(r.Intn(5)), "amd.com/gpu": int64(r.Intn(3))})
				case 6:
					x.DeletePodUsage(fmt.Sprint("p", r.Intn(10)))
				}
				for _, c := range x.classes {
					want := map[int64]int32{}
					wantNodes := 0
					for _, n := range x.nodes {
						if !c.matchesNode(n.info) {
							continue
						}
						wantNodes++
						require.Contains(t, c.nodes, n.info.Name, "step %d", step)
						if n.info.Ready {
							want[x.free(n, c.histRes)]++
						}
					}
					require.Len(t, c.nodes, wantNodes, "step %d", step)
					got := map[int64]int32{}
					for _, h := range c.hist {
						require.Positive(t, h.count)
						got[h.free] = h.count
					}
					require.Equal(t, want, got, "class %s at step %d", c.name, step)
				}
			}
		})
	}
}
