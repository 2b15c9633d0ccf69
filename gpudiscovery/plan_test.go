package gpudiscovery

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

var h100Labels = map[string]string{NVIDIAProduct: "NVIDIA-H100-80GB-HBM3", NVIDIAMemory: "81559",
	NVIDIAComputeMajor: "9", NVIDIAComputeMinor: "0", NVIDIACount: "8", NVIDIAFamily: "hopper"}

func h100Spec() v1beta1.AcceleratorClassSpec {
	mem := resource.MustParse("81559Mi")
	return v1beta1.AcceleratorClassSpec{Vendor: "nvidia", Family: "hopper", Model: "h100-80gb-hbm3",
		Discovery:    v1beta1.AcceleratorDiscovery{NodeSelector: map[string]string{NVIDIAProduct: "NVIDIA-H100-80GB-HBM3"}, PCIVendorID: "10de"},
		Capabilities: v1beta1.AcceleratorCapabilities{MemoryGB: &mem, ComputeCapability: "9.0"},
		Resources:    []v1beta1.AcceleratorResource{{Name: "nvidia.com/gpu", Quantity: resource.MustParse("1")}}}
}

func TestPropose(t *testing.T) {
	mem192 := resource.MustParse("192Gi")
	nodes := []Node{
		MakeNode("h100-1").Labels(h100Labels).Obj(),
		MakeNode("h100-0").Labels(h100Labels).Obj(),
		MakeNode("h100-2").Labels(h100Labels).Label(NVIDIAMemory, "lots").Obj(),
		MakeNode("mi300-0").Label(AMDProduct, "MI300X").Label(AMDVRAM, "192G").Label(AMDFamily, "cdna3").Label(AMDDeviceID, "74a1").Obj(),
		MakeNode("cpu-0").Label("node-type", "cpu-only").Obj(),
	}
	props, problems := Propose(nodes)
	want := []Proposal{{
		Name: "amd-mi300x", Vendor: "amd", ProductLabel: AMDProduct, Product: "MI300X", Nodes: []string{"mi300-0"},
		Spec: v1beta1.AcceleratorClassSpec{Vendor: "amd", Family: "cdna3", Model: "mi300x",
			Discovery:    v1beta1.AcceleratorDiscovery{NodeSelector: map[string]string{AMDProduct: "MI300X"}, PCIVendorID: "1002", DeviceIDs: []string{"74a1"}},
			Capabilities: v1beta1.AcceleratorCapabilities{MemoryGB: &mem192},
			Resources:    []v1beta1.AcceleratorResource{{Name: "amd.com/gpu", Quantity: resource.MustParse("1")}}},
	}, {
		Name: "nvidia-h100-80gb-hbm3", Vendor: "nvidia", ProductLabel: NVIDIAProduct, Product: "NVIDIA-H100-80GB-HBM3",
		Nodes: []string{"h100-0", "h100-1", "h100-2"}, Spec: h100Spec(),
	}}
	if diff := cmp.Diff(want, props, quantityCmp); diff != "" {
		t.Errorf("proposals (-want +got):\n%s", diff)
	}
	wantProblems := []NodeProblems{{Node: "h100-2", Problems: []Problem{{NVIDIAMemory, "lots", "is not a whole number of MiB"}}}}
	if diff := cmp.Diff(wantProblems, problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if got := props[1].Spec.Capabilities.MemoryGB.String(); got != "81559Mi" {
		t.Errorf("memoryGB prints %q, want 81559Mi", got)
	}
}

func TestProposeMergesNodesConservatively(t *testing.T) {
	props, _ := Propose([]Node{
		MakeNode("a").Labels(h100Labels).Label(NVIDIAMIGCapable, "true").Obj(),
		MakeNode("b").Labels(h100Labels).Label(NVIDIAMemory, "80000").Label(NVIDIAComputeMinor, "1").Label(NVIDIAMIGCapable, "false").Obj(),
		MakeNode("c").Labels(h100Labels).Label(NVIDIAComputeMajor, "8").Label(NVIDIAComputeMinor, "9").Obj(),
	})
	if len(props) != 1 {
		t.Fatalf("got %d proposals, want 1", len(props))
	}
	c := props[0].Spec.Capabilities
	if c.MemoryGB.String() != "80000Mi" || c.ComputeCapability != "8.9" || c.Features != nil || props[0].Spec.Resources[0].Divisible {
		t.Errorf("got memory %s, cc %q, features %v, divisible %v; want 80000Mi, 8.9, none, false",
			c.MemoryGB, c.ComputeCapability, c.Features, props[0].Spec.Resources[0].Divisible)
	}
	mig, _ := Propose([]Node{MakeNode("a").Labels(h100Labels).Label(NVIDIAMIGCapable, "true").Obj()})
	if f := mig[0].Spec.Capabilities.Features; !cmp.Equal(f, []string{"mig"}) || !mig[0].Spec.Resources[0].Divisible {
		t.Errorf("MIG capable: features %v divisible %v, want [mig] true", f, mig[0].Spec.Resources[0].Divisible)
	}
}

func TestProposeDistinctNamesForCollidingProducts(t *testing.T) {
	props, _ := Propose([]Node{
		MakeNode("a").Label(NVIDIAProduct, "A100-SXM").Obj(),
		MakeNode("b").Label(NVIDIAProduct, "A100_SXM").Obj(),
	})
	if len(props) != 2 || props[0].Name == props[1].Name {
		t.Fatalf("want two proposals with distinct names, got %+v", props)
	}
	if props[0].Name != "nvidia-a100-sxm" {
		t.Errorf("first name %q, want nvidia-a100-sxm", props[0].Name)
	}
}

func TestPlan(t *testing.T) {
	h100, _ := Propose([]Node{MakeNode("h100-0").Labels(h100Labels).Obj(), MakeNode("h100-1").Labels(h100Labels).Obj()})
	withCost := h100Spec()
	withCost.Cost = &v1beta1.AcceleratorCost{Tier: "high"}
	changed := h100Spec()
	changed.Capabilities.ComputeCapability = "8.0"
	changed.Cost = &v1beta1.AcceleratorCost{Tier: "high"}
	wantUpdated := h100Spec()
	wantUpdated.Cost = &v1beta1.AcceleratorCost{Tier: "high"}
	spec := h100Spec()
	tests := []struct {
		name     string
		props    []Proposal
		existing []ExistingClass
		want     []Action
	}{{
		name:  "nothing exists: create",
		props: h100,
		want:  []Action{{Kind: Create, Name: "nvidia-h100-80gb-hbm3", Spec: &spec}},
	}, {
		name:     "auto-discovered and equal (an admin's cost is kept): nothing",
		props:    h100,
		existing: []ExistingClass{{Class: wrappers.MakeAcceleratorClass("nvidia-h100-80gb-hbm3").AutoDiscovered().Spec(withCost).Obj()}},
	}, {
		name:     "auto-discovered, labels changed: update the owned fields only",
		props:    h100,
		existing: []ExistingClass{{Class: wrappers.MakeAcceleratorClass("nvidia-h100-80gb-hbm3").AutoDiscovered().Spec(changed).Obj()}},
		want:     []Action{{Kind: Update, Name: "nvidia-h100-80gb-hbm3", Spec: &wantUpdated}},
	}, {
		name:     "admin class with the same selector suppresses",
		props:    h100,
		existing: []ExistingClass{{Class: wrappers.MakeAcceleratorClass("h100").NodeSelector(NVIDIAProduct, "NVIDIA-H100-80GB-HBM3").Obj()}},
	}, {
		name:     "admin class matching exactly the same nodes suppresses",
		props:    h100,
		existing: []ExistingClass{{Class: wrappers.MakeAcceleratorClass("h100").NodeSelector("pool", "h100").Obj(), Nodes: []string{"h100-0", "h100-1"}}},
	}, {
		name:     "admin class matching more nodes does not suppress",
		props:    h100,
		existing: []ExistingClass{{Class: wrappers.MakeAcceleratorClass("big").NodeSelector("pool", "big").Obj(), Nodes: []string{"a100-0", "h100-0", "h100-1"}}},
		want:     []Action{{Kind: Create, Name: "nvidia-h100-80gb-hbm3", Spec: &spec}},
	}, {
		name:     "admin class holding the name is never written",
		props:    h100,
		existing: []ExistingClass{{Class: wrappers.MakeAcceleratorClass("nvidia-h100-80gb-hbm3").NodeSelector("x", "y").Obj()}},
		want:     []Action{{Kind: NameTaken, Name: "nvidia-h100-80gb-hbm3"}},
	}, {
		name:     "last node gone: stale, not deleted",
		existing: []ExistingClass{{Class: wrappers.MakeAcceleratorClass("nvidia-h100-80gb-hbm3").AutoDiscovered().Spec(h100Spec()).Obj()}},
		want: []Action{{Kind: SetStale, Name: "nvidia-h100-80gb-hbm3", Stale: true, Reason: ReasonNoNodes,
			Message: "no node carries the product of this class any more"}},
	}, {
		name: "already stale: nothing",
		existing: []ExistingClass{{Class: wrappers.MakeAcceleratorClass("nvidia-h100-80gb-hbm3").AutoDiscovered().Spec(h100Spec()).
			Condition(v1beta1.ConditionStale, metav1.ConditionTrue, ReasonNoNodes).Obj()}},
	}, {
		name:  "nodes back: not stale any more",
		props: h100,
		existing: []ExistingClass{{Class: wrappers.MakeAcceleratorClass("nvidia-h100-80gb-hbm3").AutoDiscovered().Spec(h100Spec()).
			Condition(v1beta1.ConditionStale, metav1.ConditionTrue, ReasonNoNodes).Obj()}},
		want: []Action{{Kind: SetStale, Name: "nvidia-h100-80gb-hbm3", Stale: false, Reason: ReasonHasNodes,
			Message: "nodes carry nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"}},
	}, {
		name:  "an admin class arrives after discovery: the discovered one is stale, superseded",
		props: h100,
		existing: []ExistingClass{
			{Class: wrappers.MakeAcceleratorClass("nvidia-h100-80gb-hbm3").AutoDiscovered().Spec(h100Spec()).Obj()},
			{Class: wrappers.MakeAcceleratorClass("h100").NodeSelector(NVIDIAProduct, "NVIDIA-H100-80GB-HBM3").Obj()},
		},
		want: []Action{{Kind: SetStale, Name: "nvidia-h100-80gb-hbm3", Stale: true, Reason: ReasonSuperseded,
			Message: "AcceleratorClass h100 covers the nodes of nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"}},
	}, {
		name:     "an admin class with no node is never stale",
		existing: []ExistingClass{{Class: wrappers.MakeAcceleratorClass("gone").NodeSelector("x", "y").Obj()}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.props, tt.existing)
			if diff := cmp.Diff(tt.want, got, quantityCmp); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

var quantityCmp = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
