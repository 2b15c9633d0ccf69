package selection

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// benchIndex is the scale: 5,000 runtimes (half cluster-scoped,
// half spread over 25 namespaces) over 50 format names, 200 classes and
// 10,000 nodes, a third of them partly used.
func benchIndex(b *testing.B) *Index {
	b.Helper()
	r := rand.New(rand.NewSource(4))
	x := NewIndex()
	for i := 0; i < 200; i++ {
		x.UpsertAcceleratorClass(class(fmt.Sprintf("c%03d", i)).
			Memory(fmt.Sprintf("%dGi", 16*(1+r.Intn(12)))).ComputeCapability(fmt.Sprintf("%d.%d", 7+r.Intn(4), r.Intn(10))).
			FP16TFLOPS(fmt.Sprint(100 + r.Intn(2000))).PerHour(fmt.Sprintf("%d.%02d", r.Intn(12), r.Intn(100))).Obj())
	}
	for i := 0; i < 10000; i++ {
		c := fmt.Sprintf("c%03d", i%200)
		x.UpsertNode(gpuNode(fmt.Sprintf("node-%05d", i), c, 8))
		if i%3 == 0 {
			x.SetPodUsage(fmt.Sprintf("ns/pod-%05d", i), fmt.Sprintf("node-%05d", i), map[corev1.ResourceName]int64{"nvidia.com/gpu": int64(r.Intn(9))})
		}
	}
	archs := []string{"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"}
	ranges := [][2]string{{"", ""}, {"1B", "9B"}, {"5B", "20B"}, {"30B", "80B"}, {"", "10B"}, {"60B", ""}}
	for i := 0; i < 5000; i++ {
		f := format(fmt.Sprintf("fmt-%02d", (i/2)%50), []string{"1", "1.0.0", "2"}[r.Intn(3)], arch(archs[r.Intn(3)]), prio(int32(1+r.Intn(10))))
		rg := ranges[r.Intn(len(ranges))]
		opts := []rtOpt{formats(f), sizes(rg[0], rg[1]), created(r.Intn(1000)), gpus(int64(1+r.Intn(8)), int32(r.Intn(2)))}
		if i%10 == 0 {
			opts = append(opts, accel(&v1beta1.AcceleratorRequirements{SupportedClasses: []string{fmt.Sprintf("c%03d", r.Intn(200)), fmt.Sprintf("c%03d", r.Intn(200))}}))
		}
		if i%2 == 0 {
			x.UpsertClusterServingRuntime(csr(fmt.Sprintf("csr-%04d", i), opts...))
		} else {
			x.UpsertServingRuntime(sr(fmt.Sprintf("ns-%02d", (i/50)%25), fmt.Sprintf("sr-%04d", i), opts...))
		}
	}
	x.UpsertClusterBaseModel(cbm("llama-8b", mFormat("fmt-07", "1.0.0"), mArch("LlamaForCausalLM"), mSize("8B")))
	// Collect the building garbage now, so that its GC is not charged to
	// the decisions measured next (the index itself stays live: ~30 MB).
	runtime.GC()
	return x
}

// reportCPU adds cpu-ns/op: process CPU time (GC included) per op, which
// neighbours' load on a shared machine does not inflate the way it
// inflates wall time.
// benchSelect times x.Select(svc) b.N times, reporting allocations and
// process CPU time per decision.
func benchSelect(b *testing.B, x *Index, svc *v1beta1.InferenceService) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for i := 0; i < b.N; i++ {
		if _, err := x.Select(svc); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

func reportCPU(b *testing.B, start time.Duration) {
	if used := processCPU() - start; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func benchService() *v1beta1.InferenceService {
	s := isvc("llama-8b")
	s.Namespace = "ns-03"
	return s
}

// BenchmarkSelect is one auto-select decision with a full explanation:
// every runtime listing the format and every class gets a line.
func BenchmarkSelect(b *testing.B) {
	x := benchIndex(b)
	svc := benchService()
	d, err := x.Select(svc)
	require.NoError(b, err)
	benchSelect(b, x, svc)
	b.ReportMetric(float64(len(d.Explanation)), "lines/op")
}

// BenchmarkSelectExplicit names the runtime and the class (annotation).
func BenchmarkSelectExplicit(b *testing.B) {
	x := benchIndex(b)
	svc := benchService()
	d, err := x.Select(svc)
	require.NoError(b, err)
	withRuntime(d.Runtime.Name, d.Runtime.Kind)(svc)
	withAnnotation(v1beta1.AnnotationAcceleratorClass, d.AcceleratorClassName())(svc)
	_, err = x.Select(svc)
	require.NoError(b, err)
	benchSelect(b, x, svc)
}

// BenchmarkResolve re-reads a pinned decision (the pod webhook's path).
func BenchmarkResolve(b *testing.B) {
	x := benchIndex(b)
	svc := benchService()
	d, err := x.Select(svc)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := x.Resolve(svc, d.Runtime.Kind, d.Runtime.Name, d.AcceleratorClassName()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpsertNode is a node status heartbeat (labels unchanged).
func BenchmarkUpsertNode(b *testing.B) {
	x := benchIndex(b)
	n := gpuNode("node-00042", "c042", 8)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x.UpsertNode(n)
	}
}

// BenchmarkSelectNodeSelector narrows availability with
// acceleratorSelector.nodeSelector, which no histogram answers: every
// matching node of every fitting class is visited until a group fits.
// Here no node carries the label, the worst case (200 × 50 nodes).
func BenchmarkSelectNodeSelector(b *testing.B) {
	x := benchIndex(b)
	svc := benchService()
	withSelector(v1beta1.AcceleratorSelector{NodeSelector: map[string]string{"topology.kubernetes.io/zone": "nowhere"}})(svc)
	d, err := x.Select(svc)
	require.NoError(b, err)
	require.False(b, d.AcceleratorAvailable)
	benchSelect(b, x, svc)
}

// allowAll is a Gate that forbids nothing: what asking costs selection.
type allowAll struct{}

func (allowAll) Runtime(string, string, map[string]string, *v1beta1.ServingRuntimeSpec) (string, string) {
	return "", ""
}
func (allowAll) Class(*v1beta1.AcceleratorClass, ClassUse) (string, string) { return "", "" }

// BenchmarkSelectWithGate is BenchmarkSelect asking a gate about every
// candidate runtime and class (policy's own cost is measured in package
// policy).
func BenchmarkSelectWithGate(b *testing.B) {
	x := benchIndex(b)
	svc := benchService()
	opts := SelectOptions{Gate: allowAll{}}
	_, err := x.SelectWith(svc, opts)
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	for i := 0; i < b.N; i++ {
		if _, err := x.SelectWith(svc, opts); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}
