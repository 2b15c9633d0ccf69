package selection

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// picker turns fuzz bytes into choices; it never runs out (zeros after the end).
type picker struct {
	b []byte
	i int
}

func (p *picker) n(k int) int {
	if k <= 1 {
		return 0
	}
	var v byte
	if p.i < len(p.b) {
		v = p.b[p.i]
	}
	p.i++
	return int(v) % k
}

func pick[T any](p *picker, xs ...T) T { return xs[p.n(len(xs))] }

// snapshot builds a small random world: a model, runtimes of both scopes,
// classes, nodes and pods, with valid and invalid strings mixed in.
func snapshot(data []byte) (objects, []podCall, *v1beta1.InferenceService) {
	p := &picker{b: data}
	versions := []string{"", "1", "1.0.0", "1.3", "2", "v1", "bad", "1.0.0-nightly", "4.45.0.dev0"}
	sizesV := []string{"", "1B", "5b", "7B", "7.6B", "9B", "70B", "500K", "1.5T", "x"}
	archs := []string{"", "LlamaForCausalLM", "MistralForCausalLM"}
	quants := []string{"", "fp8"}
	ops := []v1beta1.RuleOperator{"", v1beta1.RuleOperatorEqual, v1beta1.RuleOperatorGreaterThan, v1beta1.RuleOperatorGreaterThanOrEqual}
	protos := [][]v1beta1.ProtocolVersion{nil, {v1beta1.ProtocolOpenAI}, {v1beta1.ProtocolOpenInferenceV2}, {v1beta1.ProtocolOpenAI, v1beta1.ProtocolOpenInferenceV2}}
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}

	// Runtimes mostly reuse the model's values so that a good share of
	// snapshots resolve and the permutation check compares real decisions.
	var o objects
	modelQuant := pick(p, quants...)
	modelSpec := func() []modelOpt {
		opts := []modelOpt{mFormat(pick(p, "safetensors", "safetensors", "safetensors", "onnx"), pick(p, "1.0.0", "1.0.0", "1.0.0", "1.0.0", "1", "1.3", "", "", "v1.0", "bad"))}
		if s := pick(p, "7B", "7B", "7B", "7b", "70B", "", "", "7.6B", "500M", "x"); s != "" {
			opts = append(opts, mSize(s))
		}
		if a := pick(p, archs...); a != "" {
			opts = append(opts, mArch(a))
		}
		if modelQuant != "" {
			opts = append(opts, mQuant(modelQuant))
		}
		return opts
	}
	o.cbms = append(o.cbms, cbm("m", modelSpec()...))
	if p.n(2) == 1 {
		o.bms = append(o.bms, bm("team", "m", modelSpec()...))
	}

	runtime := func() []rtOpt {
		var fs []v1beta1.SupportedModelFormat
		for j, nf := 0, 1+p.n(3); j < nf; j++ {
			f := v1beta1.SupportedModelFormat{ModelFormat: &v1beta1.ModelFormat{Name: pick(p, "safetensors", "onnx", "SafeTensors"), Version: str(pick(p, append([]string{"", "", ""}, versions...)...))}}
			if op := pick(p, ops...); op != "" {
				f.ModelFormat.Operator = &op
			}
			if p.n(4) > 0 {
				f.AutoSelect = ptr(true)
			}
			if pr := p.n(4); pr > 0 {
				f.Priority = ptr(int32(pr))
			}
			f.ModelArchitecture = str(pick(p, "", "", "", "LlamaForCausalLM", "MistralForCausalLM"))
			if q := pick(p, modelQuant, modelQuant, "fp8", ""); q != "" {
				f.Quantization = ptr(v1beta1.ModelQuantization(q))
			}
			fs = append(fs, f)
		}
		opts := []rtOpt{formats(fs...), protocols(pick(p, append([][]v1beta1.ProtocolVersion{nil, nil}, protos...)...)...), created(p.n(3)), gpus(int64(p.n(4)), int32(p.n(3)))}
		if p.n(2) == 1 {
			opts = append(opts, sizes(pick(p, "", "", "1B", sizesV[p.n(len(sizesV))]), pick(p, "", "", "100B", sizesV[p.n(len(sizesV))])))
		}
		if p.n(5) == 0 {
			opts = append(opts, disabled())
		}
		if p.n(3) == 0 {
			opts = append(opts, accel(&v1beta1.AcceleratorRequirements{
				SupportedClasses:     []string{fmt.Sprint("c", p.n(4)), fmt.Sprint("c", p.n(4))},
				RequiredCapabilities: &v1beta1.AcceleratorCapabilities{MinComputeCapability: pick(p, "", "8.0", "9.0", "10.0")},
				PreferenceOrder:      []v1beta1.AcceleratorPreference{{Class: fmt.Sprint("c", p.n(4)), Score: int32(p.n(100)), Conditions: []v1beta1.PreferenceCondition{{ModelSize: pick(p, "", "<30B", ">=7B")}}}},
			}))
		}
		return opts
	}
	for i, n := 0, 1+p.n(6); i < n; i++ {
		o.csrs = append(o.csrs, csr(fmt.Sprint("csr", i), runtime()...))
	}
	for i, n := 0, p.n(4); i < n; i++ {
		o.srs = append(o.srs, sr(pick(p, "team", "other"), fmt.Sprint("sr", i), runtime()...))
	}
	for i, n := 0, p.n(5); i < n; i++ {
		c := class(fmt.Sprint("c", i)).Memory(pick(p, "40Gi", "80", "80Gi", "192Gi")).ComputeCapability(pick(p, "8.0", "9.0", "10.0", "8.9"))
		if p.n(2) == 1 {
			c.FP16TFLOPS(pick(p, "312", "989", "2250"))
		}
		if p.n(2) == 1 {
			c.PerHour(pick(p, "1.1", "2", "4", "12"))
		}
		o.classes = append(o.classes, c.Obj())
	}
	for i, n := 0, p.n(8); i < n; i++ {
		o.nodes = append(o.nodes, NodeInfo{Name: fmt.Sprint("n", i), Labels: map[string]string{"gpu": fmt.Sprint("c", p.n(5))},
			Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": int64(p.n(9))}, Ready: p.n(4) > 0})
	}
	var pods []podCall
	for i, n := 0, p.n(4); i < n; i++ {
		pods = append(pods, podCall{key: fmt.Sprint("team/p", i), node: fmt.Sprint("n", p.n(8)), gpus: int64(p.n(5))})
	}

	svc := isvc("m")
	if p.n(3) == 0 {
		svc.Spec.ProtocolVersion = ptr(v1beta1.ProtocolOpenInferenceV2)
	}
	if p.n(8) == 0 {
		svc.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: pick(p, "csr0", "sr0", "csr1")}
	}
	switch p.n(5) {
	case 0:
		withAnnotation(v1beta1.AnnotationAcceleratorClass, fmt.Sprint("c", p.n(6)))(svc)
	case 1:
		withSelector(v1beta1.AcceleratorSelector{PreferredClasses: []string{fmt.Sprint("c", p.n(5)), fmt.Sprint("c", p.n(5))},
			Strategy: pick(p, v1beta1.StrategyBalanced, v1beta1.StrategyCost, v1beta1.StrategyPerformance, "")})(svc)
	case 2:
		withSelector(v1beta1.AcceleratorSelector{RequiredCapabilities: &v1beta1.AcceleratorCapabilities{MemoryGB: ptr(resource.MustParse(pick(p, "80Gi", "40")))}})(svc)
	}
	return o, pods, svc
}

type podCall struct {
	key, node string
	gpus      int64
}

// loadPermuted inserts the same objects in another order: reversed lists,
// nodes and pods before classes, and every runtime upserted twice.
func loadPermuted(o objects, pods []podCall) *Index {
	x := NewIndex()
	for i := len(o.nodes) - 1; i >= 0; i-- {
		x.UpsertNode(o.nodes[i])
	}
	for i := len(pods) - 1; i >= 0; i-- {
		x.SetPodUsage(pods[i].key, pods[i].node, map[corev1.ResourceName]int64{"nvidia.com/gpu": pods[i].gpus})
	}
	for i := len(o.classes) - 1; i >= 0; i-- {
		x.UpsertAcceleratorClass(o.classes[i])
	}
	for i := len(o.csrs) - 1; i >= 0; i-- {
		x.UpsertClusterServingRuntime(o.csrs[i])
	}
	for i := len(o.srs) - 1; i >= 0; i-- {
		x.UpsertServingRuntime(o.srs[i])
	}
	for _, r := range o.csrs {
		x.UpsertClusterServingRuntime(r)
	}
	for i := len(o.cbms) - 1; i >= 0; i-- {
		x.UpsertClusterBaseModel(o.cbms[i])
	}
	for i := len(o.bms) - 1; i >= 0; i-- {
		x.UpsertBaseModel(o.bms[i])
	}
	return x
}

func outcome(d *Decision, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("model=%s runtime=%s auto=%t class=%s available=%t protocol=%s\nexplanation=%q\nwarnings=%q",
		d.Model.Ref(), d.RuntimeRef(), d.Runtime.AutoSelected, d.AcceleratorClassName(), d.AcceleratorAvailable, d.Protocol, d.Explanation, d.Warnings)
}

// requireErrorsWithPaths: a selection error is an *Error whose Errors()
// has the reason, then every candidate's line whole, each at a path of
// the service.
func requireErrorsWithPaths(t *testing.T, err error) {
	t.Helper()
	se, ok := err.(*Error)
	require.True(t, ok, "%T is not *Error", err)
	errs := se.Errors()
	require.Len(t, errs, 1+len(se.Candidates))
	for i, e := range errs {
		require.NotEmpty(t, e.Field, "error %d has no path: %q", i, e.Detail)
		if i > 0 {
			require.Equal(t, se.Candidates[i-1], e.Detail)
		}
	}
}

// FuzzSelect: no panic on any snapshot, the same decision whatever order
// the objects arrived in, and a failure's errors each at a path.
func FuzzSelect(f *testing.F) {
	for _, seed := range [][]byte{
		nil,
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
		[]byte("the quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps over the lazy dog"),
		{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5},
		{1, 0, 1, 0, 2, 3, 1, 1, 1, 3, 0, 1, 2, 1, 1, 3, 7, 1, 1, 4, 4, 4, 1, 2, 3, 4, 1, 1, 1, 1, 2, 2, 2, 9, 9, 9, 7, 7, 3, 2, 1},
		{255, 254, 253, 200, 100, 50, 25, 12, 6, 3, 1, 0, 255, 254, 253, 200, 100, 50, 25, 12, 6, 3, 1, 0, 77, 78, 79, 80},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, pods, svc := snapshot(data)
		a := o.load()
		for _, pc := range pods {
			a.SetPodUsage(pc.key, pc.node, map[corev1.ResourceName]int64{"nvidia.com/gpu": pc.gpus})
		}
		b := loadPermuted(o, pods)
		before := svc.DeepCopy()
		da, errA := a.Select(svc)
		db, errB := b.Select(svc)
		require.Equal(t, before, svc, "Select must not mutate the service")
		require.Equal(t, outcome(da, errA), outcome(db, errB))
		if errA != nil {
			requireErrorsWithPaths(t, errA)
			require.Equal(t, errA.(*Error).Errors(), errB.(*Error).Errors(), "the same paths whatever the order")
		}
		if errA == nil {
			require.True(t, sort.StringsAreSorted(da.Explanation), "explanation is sorted")
			// A decision can always be re-read from its pin.
			_, err := a.Resolve(svc, da.Runtime.Kind, da.Runtime.Name, da.AcceleratorClassName())
			require.NoError(t, err)
		}
	})
}
