package plan

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berthdev/berth/api/v1beta1"
)

// bytesource reads small numbers from fuzz input; 0 when it runs out.
type bytesource struct{ b []byte }

func (s *bytesource) n(mod int) int {
	if len(s.b) == 0 || mod <= 0 {
		return 0
	}
	v := int(s.b[0]) % mod
	s.b = s.b[1:]
	return v
}

func pick[T any](s *bytesource, xs ...T) T { return xs[s.n(len(xs))] }

// fuzzInput decodes a component: a spec, pods with unique names and UIDs
// (whole groups, then strays), and a backoff memory.
func fuzzInput(data []byte) (Spec, []Pod, Backoff) {
	s := &bytesource{data}
	spec := Spec{
		Component: "engine", Replicas: int32(s.n(7)), Workers: int32(s.n(4)), MultiNode: s.n(2) == 1,
		Revision:       pick(s, "new", "old"),
		Partition:      pick(s, intstr.FromInt32(int32(s.n(6))), intstr.FromString(fmt.Sprintf("%d%%", s.n(101))), intstr.FromString("x")),
		MaxUnavailable: pick(s, intstr.IntOrString{}, intstr.FromInt32(int32(s.n(4))), intstr.FromString(fmt.Sprintf("%d%%", s.n(101)))),
		Recovery:       pick(s, v1beta1.RecoveryPolicy(""), v1beta1.ServingGroupRecreate, v1beta1.RoleRecreate, v1beta1.RecoveryNone),
		RestartGrace:   time.Duration(s.n(4)) * 10 * time.Second,
		BackoffBase:    time.Duration(s.n(3)) * 5 * time.Second, BackoffMax: time.Duration(s.n(3)) * time.Minute,
	}
	// Well-formed groups first, mostly Ready, then pods of any identity.
	var ids []ident
	for g := range int32(s.n(7)) {
		ids = append(ids, expected(specShape(withDefaults(spec)), g)...)
	}
	// Pods of a group say one size, or none.
	sizes := []int32{0, 0, 0, 0, 0, 0, 0, 0}
	for g := range sizes {
		sizes[g] = pick(s, spec.Workers+1, int32(s.n(4)))
	}
	var pods []Pod
	for i := range len(ids) + s.n(12) {
		id := ident{int32(s.n(8)) - 1, pick(s, "", RoleLeader, RoleWorker, "x"), int32(s.n(5))}
		if i < len(ids) {
			id = ids[i]
		}
		p := Pod{
			Name: fmt.Sprintf("p%d", i), UID: fmt.Sprintf("u%d", i),
			Group: id.group, Role: id.role, Worker: id.worker,
			Revision: pick(s, "new", "old"),
			Phase:    pick(s, corev1.PodRunning, corev1.PodRunning, corev1.PodPending, corev1.PodFailed, corev1.PodSucceeded),
			Ready:    s.n(4) > 0, Terminating: s.n(6) == 0, Restarts: int32(s.n(4) / 3),
			Unschedulable: pick(s, "", "", "0/3 nodes are available", "0/9 nodes are available"),
			RecreateCount: int32(s.n(4)),
			GroupSize:     pick(s, int32(0), sizes[max(id.group, 0)]),
		}
		if s.n(2) == 1 {
			p.FailingSince = t0.Add(-time.Duration(s.n(120)) * time.Second)
		}
		if p.Ready {
			p.ReadySince = t0.Add(-time.Duration(s.n(10)) * time.Minute)
		}
		pods = append(pods, p)
	}
	var memory Backoff
	for range s.n(4) {
		if memory == nil {
			memory = Backoff{}
		}
		memory[int32(s.n(8))] = Recovery{Count: int32(s.n(6)), Last: t0.Add(-time.Duration(s.n(300)) * time.Second)}
	}
	return spec, pods, memory
}

// checkStep checks the properties every step has, whatever the input.
func checkStep(t *testing.T, spec Spec, pods []Pod, memory Backoff) {
	memCopy := Backoff{}
	for k, v := range memory {
		memCopy[k] = v
	}
	st := Next(spec, pods, memory, t0)
	if memory != nil {
		require.Equal(t, memCopy, memory, "Next changed its memory argument")
	}

	// Determinism: again, and with the pods in reverse order.
	require.Equal(t, st, Next(spec, pods, memory, t0))
	rev := make([]Pod, len(pods))
	for i, p := range pods {
		rev[len(pods)-1-i] = p
	}
	require.Equal(t, st, Next(spec, rev, memory, t0), "the order of pods changed the step")

	byUID := map[string]Pod{}
	occupied := map[slot]bool{}
	for _, p := range pods {
		byUID[p.UID] = p
		occupied[slot{p.Group, p.Worker}] = true
	}
	deleted := map[string]bool{}
	for _, d := range st.Delete {
		require.False(t, deleted[d.UID], "%s deleted twice", d.Name)
		deleted[d.UID] = true
		p, ok := byUID[d.UID]
		require.True(t, ok, "delete of a pod that is not there: %+v", d)
		require.False(t, p.Terminating, "delete of terminating %s", d.Name)
		require.Equal(t, p.Name, d.Name)
	}
	created := map[ident]bool{}
	ds := withDefaults(spec)
	for _, c := range st.Create {
		id := ident{c.Group, c.Role, c.Worker}
		require.False(t, created[id], "created twice: %+v", c)
		created[id] = true
		require.False(t, occupied[id.slot()], "create where a pod is: %+v", c)
		require.True(t, c.Group >= 0 && fits(specShape(ds), id), "create outside the shape: %+v", c)
	}
	require.GreaterOrEqual(t, st.Requeue, time.Duration(0))

	// The planner's deletes never push unavailability past maxUnavailable.
	mu, _ := MaxUnavailable(spec)
	desired := ds.Replicas
	u0 := desired - min(fuzzReady(ds, pods, nil), desired)
	u1 := desired - min(fuzzReady(ds, pods, deleted), desired)
	require.LessOrEqual(t, u1, max(u0, mu), "deletes %+v", st.Delete)

	s := st.Status
	require.Equal(t, s.Replicas, s.Updated+s.Outdated)
	require.LessOrEqual(t, s.Ready, s.Replicas)
	require.True(t, s.Unavailable >= 0 && s.Unavailable <= desired)
}

// fuzzReady counts Ready groups by the test's own account of the rule:
// every pod its group needs is live, Ready and running, and not in skip.
// A group at the current revision needs the spec's pods; an outdated one
// the pods it was made with: one pod when none of its pods has a leader or
// worker role, else a leader and GroupSize-1 workers, or as many workers
// as its highest worker index says.
func fuzzReady(spec Spec, pods []Pod, skip map[string]bool) int32 {
	byGroup := map[int32][]Pod{}
	for _, p := range pods {
		if p.Group >= 0 && !p.Terminating && knownRole(p.Role) {
			byGroup[p.Group] = append(byGroup[p.Group], p)
		}
	}
	var n int32
	for g, ps := range byGroup {
		need := specShape(spec)
		if slices.ContainsFunc(ps, func(p Pod) bool { return p.Revision != spec.Revision }) {
			need = shape{}
			for _, p := range ps {
				need.multi = need.multi || p.Role != ""
				if p.Role == RoleWorker && p.Worker > need.workers {
					need.workers = p.Worker
				}
			}
			if i := slices.IndexFunc(ps, func(p Pod) bool { return p.GroupSize > 0 }); i >= 0 {
				need.workers = ps[i].GroupSize - 1 // the generator gives a group one size
			}
			if !need.multi {
				need.workers = 0
			}
		}
		ready := true
		for _, id := range expected(need, g) {
			ready = ready && slices.ContainsFunc(ps, func(p Pod) bool {
				return podIdent(p) == id && !skip[p.UID] && p.Ready && p.Phase != corev1.PodFailed && p.Phase != corev1.PodSucceeded
			})
		}
		if ready {
			n++
		}
	}
	return n
}

func FuzzNext(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{4, 2, 1, 0, 0, 0, 1, 2, 0, 0, 0, 12, 1, 1, 0, 0, 0, 1, 1, 1, 2, 1, 2, 0, 0, 1, 0, 0, 0, 0})
	f.Add([]byte{3, 0, 0, 1, 0, 1, 1, 2, 3, 1, 1, 8, 0, 0, 0, 1, 0, 2, 1, 3, 0, 1, 0, 2, 1, 1, 1, 1, 0, 2, 3, 2, 1, 1})
	f.Add([]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps over the lazy dog"))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, pods, memory := fuzzInput(data)
		checkStep(t, spec, pods, memory)
	})
}

// TestRule7Determinism runs the fuzz properties over random inputs in every
// ordinary test run.
func TestRule7Determinism(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for i := range 3000 {
		data := make([]byte, 40+rng.Intn(120))
		rng.Read(data)
		spec, pods, memory := fuzzInput(data)
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkStep(t, spec, pods, memory) })
		if t.Failed() {
			return
		}
	}
}

func TestRule7SortedOutput(t *testing.T) {
	pods := []Pod{single(3, "old"), single(1, "old", notReady), single(2, "old", notReady), single(0, "old")}
	s := Next(mkSpec(2, maxUnavailable(intstr.FromInt32(3))), pods, nil, t0)
	var groups []int32
	for _, d := range s.Delete {
		groups = append(groups, d.Group)
	}
	assert.Equal(t, []int32{0, 1, 2, 3}, groups)
}
