package merge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
)

// shippedRuntime decodes deploy/runtimes/<name>.yaml.
func shippedRuntime(t *testing.T, name string) *v1beta1.ServingRuntimeSpec {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "runtimes", name+".yaml"))
	require.NoError(t, err)
	var csr v1beta1.ClusterServingRuntime
	require.NoError(t, yaml.UnmarshalStrict(raw, &csr), name)
	return &csr.Spec
}

func TestTopology(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	rps := v1beta1.ScaleMetricRPS
	// service builds an InferenceService as the mutating webhook stores it:
	// spec.engine.minReplicas defaulted to 1.
	service := func(mutate func(s *v1beta1.InferenceServiceSpec)) *v1beta1.InferenceService {
		s := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "team-a"}}
		s.Spec.Engine = &v1beta1.EngineSpec{}
		s.Spec.Engine.MinReplicas = i32(1)
		if mutate != nil {
			mutate(&s.Spec)
		}
		return s
	}
	single := func(c string, replicas, lo, hi int32) ComponentTopology {
		return ComponentTopology{Component: c, Replicas: replicas, MinReplicas: lo, MaxReplicas: hi}
	}
	multi := func(c string, workers, replicas, lo, hi int32) ComponentTopology {
		return ComponentTopology{Component: c, MultiNode: true, Workers: workers, Replicas: replicas, MinReplicas: lo, MaxReplicas: hi}
	}
	tests := []struct {
		name    string
		runtime string
		svc     *v1beta1.InferenceService
		want    []ComponentTopology
	}{
		{name: "single-node runtime", runtime: "srt-mistral-7b-instruct-rt", svc: service(nil),
			want: []ComponentTopology{single("engine", 1, 1, 3)}},
		{name: "service replicas within the runtime's bounds", runtime: "srt-mistral-7b-instruct-rt",
			svc:  service(func(s *v1beta1.InferenceServiceSpec) { s.Engine.Replicas = i32(2) }),
			want: []ComponentTopology{single("engine", 2, 1, 3)}},
		{name: "replicas clamped to maxReplicas", runtime: "srt-mistral-7b-instruct-rt",
			svc:  service(func(s *v1beta1.InferenceServiceSpec) { s.Engine.Replicas = i32(7) }),
			want: []ComponentTopology{single("engine", 3, 1, 3)}},
		{name: "replicas clamped to minReplicas", runtime: "srt-mistral-7b-instruct-rt",
			svc:  service(func(s *v1beta1.InferenceServiceSpec) { s.Engine.Replicas, s.Engine.MinReplicas = i32(1), i32(2) }),
			want: []ComponentTopology{single("engine", 2, 2, 3)}},
		{name: "scale to zero", runtime: "srt-mistral-7b-instruct-rt",
			svc: service(func(s *v1beta1.InferenceServiceSpec) {
				s.Engine.Replicas, s.Engine.MinReplicas, s.Engine.MaxReplicas = i32(0), i32(0), i32(0)
				s.Engine.ScaleMetric, s.Engine.ScaleTarget = &rps, i32(10)
			}),
			want: []ComponentTopology{{Component: "engine", ScaleMetric: &rps, ScaleTarget: i32(10)}}},
		{name: "no service engine: the runtime's bounds", runtime: "srt-mistral-7b-instruct-rt",
			svc:  service(func(s *v1beta1.InferenceServiceSpec) { s.Engine = nil }),
			want: []ComponentTopology{single("engine", 1, 1, 3)}},
		{name: "multi-node leader/worker runtime", runtime: "srt-deepseek-rdma-rt", svc: service(nil),
			want: []ComponentTopology{multi("engine", 1, 1, 1, 1)}},
		{name: "service worker.size over the runtime's", runtime: "srt-deepseek-rdma-rt",
			svc:  service(func(s *v1beta1.InferenceServiceSpec) { s.Engine.Worker = &v1beta1.WorkerSpec{Size: i32(3)} }),
			want: []ComponentTopology{multi("engine", 3, 1, 1, 1)}},
		{name: "service worker.size 0 over the runtime's: a leader alone", runtime: "srt-deepseek-rdma-rt",
			svc:  service(func(s *v1beta1.InferenceServiceSpec) { s.Engine.Worker = &v1beta1.WorkerSpec{Size: i32(0)} }),
			want: []ComponentTopology{multi("engine", 0, 1, 1, 1)}},
		{name: "a service leader makes a single-node runtime multi-node", runtime: "srt-mistral-7b-instruct-rt",
			svc:  service(func(s *v1beta1.InferenceServiceSpec) { s.Engine.Leader = &v1beta1.LeaderSpec{} }),
			want: []ComponentTopology{multi("engine", 0, 1, 1, 3)}},
		{name: "PD runtime with a router", runtime: "srt-llama-3-2-1b-instruct-pd-rt", svc: service(nil),
			want: []ComponentTopology{single("engine", 1, 1, 3), single("decoder", 1, 1, 3), single("router", 1, 1, 2)}},
		{name: "PD multi-node runtime with a router", runtime: "srt-deepseek-rdma-pd-rt",
			svc:  service(func(s *v1beta1.InferenceServiceSpec) { s.Router = &v1beta1.RouterSpec{}; s.Router.Replicas = i32(2) }),
			want: []ComponentTopology{multi("engine", 1, 1, 1, 1), multi("decoder", 1, 1, 1, 1), single("router", 2, 1, 2)}},
		{name: "a service decoder and router on a single-node runtime", runtime: "srt-mistral-7b-instruct-rt",
			svc: service(func(s *v1beta1.InferenceServiceSpec) {
				s.Decoder, s.Router = &v1beta1.DecoderSpec{}, &v1beta1.RouterSpec{}
				s.Decoder.Replicas = i32(4)
			}),
			want: []ComponentTopology{single("engine", 1, 1, 3), single("decoder", 4, 1, 0), single("router", 1, 1, 0)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Topology(tc.svc, shippedRuntime(t, tc.runtime)))
		})
	}
	assert.Equal(t, []ComponentTopology{single("engine", 1, 1, 0)}, Topology(nil, nil), "nothing given: one engine group")
}

func TestLongestPodName(t *testing.T) {
	assert.Equal(t, "chat-engine-2", LongestPodName("chat", ComponentTopology{Component: "engine", Replicas: 2, MinReplicas: 1, MaxReplicas: 3}))
	assert.Equal(t, "chat-engine-999", LongestPodName("chat", ComponentTopology{Component: "engine", Replicas: 2, MinReplicas: 1}), "unbounded")
	assert.Equal(t, "chat-engine-0-3", LongestPodName("chat", ComponentTopology{Component: "engine", MultiNode: true, Workers: 3, Replicas: 1, MinReplicas: 1, MaxReplicas: 1}))
	assert.Equal(t, "chat-decoder-11-0", LongestPodName("chat", ComponentTopology{Component: "decoder", MultiNode: true, Replicas: 12, MaxReplicas: 4}))
}

func TestValidateNames(t *testing.T) {
	rt := shippedRuntime(t, "srt-deepseek-rdma-pd-rt")
	topo := Topology(&v1beta1.InferenceService{}, rt)
	require.NoError(t, ValidateNames("deepseek-r1", topo))

	// decoder groups are the longest: <name>-decoder-0-1 adds 12 characters.
	fits := strings.Repeat("a", 63-12)
	require.NoError(t, ValidateNames(fits, topo))
	long := fits + "b"
	err := ValidateNames(long, topo)
	require.Error(t, err)
	assert.Equal(t, "InferenceService "+long+`: the longest name berth generates for its groups, pod "`+long+`-decoder-0-1" of component decoder `+
		"(64 characters; groups up to maxReplicas, or 1000 when it is unbounded), is not a valid DNS-1035 label "+
		"(must be no more than 63 characters); shorten the InferenceService name to at most 51 characters", err.Error())

	unbounded := Topology(&v1beta1.InferenceService{}, shippedRuntime(t, "srt-mistral-7b-instruct-rt"))
	unbounded[0].MaxReplicas = 0
	require.NoError(t, ValidateNames(strings.Repeat("x", 52), unbounded), "x...-engine-999 is 63 characters")
	err = ValidateNames(strings.Repeat("x", 53), unbounded)
	require.ErrorContains(t, err, `-engine-999" of component engine (64 characters`)
	require.ErrorContains(t, err, "shorten the InferenceService name to at most 52 characters")

	err = ValidateNames("chat.v2", unbounded)
	require.ErrorContains(t, err, `pod "chat.v2-engine-999"`)
	require.ErrorContains(t, err, "rename the InferenceService with lowercase letters, digits and '-', starting with a letter")
	err = ValidateNames("2chat", nil)
	require.ErrorContains(t, err, `InferenceService 2chat: the name "2chat" is not a valid DNS-1035 label`)
}
