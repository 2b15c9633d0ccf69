package policy

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
)

// benchPolicies are n policies of every rule, half of them selecting the
// benchmark's namespace (team-a, by expression) and half other teams, all
// Deny or Audit. None is violated by the benchmark's service, so every rule
// is evaluated in full.
func benchPolicies(n int) []*v1alpha1.ServingPolicy {
	var out []*v1alpha1.ServingPolicy
	for i := range n {
		b := MakePolicy(fmt.Sprintf("p-%03d", i))
		if i%2 == 0 {
			b.NamespaceSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b", "c"}}}})
		} else {
			b.Namespaces(map[string]string{"team": fmt.Sprintf("t%d", i)})
		}
		switch i % 5 {
		case 0:
			b.Classes(v1alpha1.ObjectRule{Allowed: []string{"nvidia-a100-*", "nvidia-h100-*", "nvidia-l4"}, Denied: []string{"nvidia-b200-*"}})
		case 1:
			b.Images("registry.example.com", "ghcr.io/berthdev", "nvcr.io/nvidia").Runtimes(allow("rt", "srt-*"))
		case 2:
			b.MaxPerService(64).MaxPerNamespace(1024)
		case 3:
			b.MaxCost("1000").Actions(v1alpha1.Audit)
		case 4:
			b.Require("team").Services(map[string]string{"tier": "gold"})
		}
		out = append(out, b.Obj())
	}
	return out
}

// BenchmarkAdmission is the policy-dependent core of an InferenceService
// admission: selection (with the gate when policies are in force),
// composing the service's pods, and CheckService. The webhook adds the
// same decoding, defaulting and patching with or without policies; P3's
// handler benchmark measures the whole request.
func BenchmarkAdmission(b *testing.B) {
	for _, n := range []int{0, 100} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			x := world(b, "70B")
			set := Compile(benchPolicies(n), Options{ExemptNamespaces: []string{"berth-system"}})
			svc := performanceService("team-a")
			svc.Labels = map[string]string{"team": "a"}
			sub := Subject{Namespace: "team-a", NamespaceLabels: map[string]string{"team": "a", "kubernetes.io/metadata.name": "team-a"}}
			inUse := map[corev1.ResourceName]int64{"nvidia.com/gpu": 16}
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				opts := selection.SelectOptions{}
				if set.Len() > 0 {
					opts.Gate = set.Gate(sub, svc, inUse)
				}
				d, err := x.SelectWith(svc, opts)
				if err != nil {
					b.Fatal(err)
				}
				in := composedB(b, sub, svc, d, inUse)
				if vs := set.CheckService(in); len(Enforce(vs).Deny) > 0 {
					b.Fatal(vs)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

func composedB(b *testing.B, sub Subject, svc *v1beta1.InferenceService, d *selection.Decision, inUse map[corev1.ResourceName]int64) Service {
	roles, errs := merge.ComposeService(merge.ServiceInput{Service: svc, RuntimeKind: d.Runtime.Kind, RuntimeName: d.Runtime.Name, Runtime: d.Runtime.Spec,
		ClassFor: func(string) *v1beta1.AcceleratorClass { return d.AcceleratorClass }})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	return Service{Subject: sub, Service: svc, RuntimeKind: d.Runtime.Kind, RuntimeName: d.Runtime.Name, RuntimeSpec: d.Runtime.Spec,
		Classes: map[string]*v1beta1.AcceleratorClass{"engine": d.AcceleratorClass}, Roles: roles, NamespaceInUse: inUse}
}

// BenchmarkCheckService is CheckService alone on a composed service.
func BenchmarkCheckService(b *testing.B) {
	x := world(b, "70B")
	svc := performanceService("team-a")
	svc.Labels = map[string]string{"team": "a"}
	d, err := x.Select(svc)
	if err != nil {
		b.Fatal(err)
	}
	sub := Subject{Namespace: "team-a", NamespaceLabels: map[string]string{"team": "a"}}
	in := composedB(b, sub, svc, d, nil)
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			set := Compile(benchPolicies(n), Options{})
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				set.CheckService(in)
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkFor is the per-namespace selection, from the cache.
func BenchmarkFor(b *testing.B) {
	set := Compile(benchPolicies(100), Options{})
	sub := Subject{Namespace: "team-a", NamespaceLabels: map[string]string{"team": "a"}, ServiceLabels: map[string]string{"tier": "gold"}}
	b.ReportAllocs()
	for b.Loop() {
		set.For(sub)
	}
}

// BenchmarkCompile compiles 100 policies (on every policy event).
func BenchmarkCompile(b *testing.B) {
	ps := benchPolicies(100)
	b.ReportAllocs()
	for b.Loop() {
		Compile(ps, Options{})
	}
}

// reportCPU adds cpu-ns/op: process CPU time per op, which the
// neighbours' load on a shared machine does not inflate as it inflates
// wall time.
func reportCPU(b *testing.B, start time.Duration) {
	if used := processCPU() - start; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkSelectWithGate is selection alone, without and with the gate
// of 100 policies (built per decision, as admission does).
func BenchmarkSelectWithGate(b *testing.B) {
	for _, n := range []int{0, 100} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			x := world(b, "70B")
			set := Compile(benchPolicies(n), Options{})
			svc := performanceService("team-a")
			sub := Subject{Namespace: "team-a", NamespaceLabels: map[string]string{"team": "a"}}
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				opts := selection.SelectOptions{}
				if n > 0 {
					opts.Gate = set.Gate(sub, svc, nil)
				}
				if _, err := x.SelectWith(svc, opts); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// bigWorld is selection's benchmark scale for classes: 200 nvidia classes
// (one node each), every one a candidate of the runtime, so the gate is
// asked 200 times a decision.
func bigWorld(b *testing.B) *selection.Index {
	x := selection.NewIndex()
	for i := range 200 {
		c := nvidiaClass(fmt.Sprintf("nvidia-%s-%03d", []string{"a100", "h100", "l4", "b200"}[i%4], i)).PerHour(fmt.Sprintf("%d.%02d", 1+i%9, i%100)).Obj()
		c.Spec.Discovery.NodeSelector = map[string]string{"gpu": c.Name}
		c.Spec.Capabilities.MemoryGB = resourceQty(int64(16+i%8*16) << 30)
		x.UpsertAcceleratorClass(c)
		x.UpsertNode(selection.NodeInfo{Name: "node-" + c.Name, Labels: c.Spec.Discovery.NodeSelector, Allocatable: map[corev1.ResourceName]int64{"nvidia.com/gpu": 8}, Ready: true})
	}
	rt := rtGPUs()
	rt.Spec.AcceleratorRequirements = nil
	rt.Spec.AcceleratorConfigurations = nil
	x.UpsertClusterServingRuntime(rt)
	x.UpsertClusterBaseModel(&v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: v1beta1.BaseModelSpec{ModelFormat: v1beta1.ModelFormat{Name: "safetensors"}, ModelParameterSize: ptr("8B")}})
	return x
}

// BenchmarkSelectWithGate200Classes: the gate of 0 and 100 policies asked
// about 200 classes per decision.
func BenchmarkSelectWithGate200Classes(b *testing.B) {
	for _, n := range []int{0, 100} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			x := bigWorld(b)
			set := Compile(benchPolicies(n), Options{})
			svc := performanceService("team-a")
			sub := Subject{Namespace: "team-a", NamespaceLabels: map[string]string{"team": "a"}}
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				opts := selection.SelectOptions{}
				if n > 0 {
					opts.Gate = set.Gate(sub, svc, nil)
				}
				if _, err := x.SelectWith(svc, opts); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}
