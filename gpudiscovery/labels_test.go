package gpudiscovery

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseNode(t *testing.T) {
	const gib, mib = int64(1) << 30, int64(1) << 20
	tests := []struct {
		name     string
		node     Node
		want     Accelerator
		problems []Problem
		ok       bool
	}{{
		name: "not a GPU node",
		node: MakeNode("cpu").Label("node-type", "cpu-only").Obj(),
	}, {
		name: "NVIDIA: every GPU feature discovery label",
		node: MakeNode("h100").Label(NVIDIAProduct, "NVIDIA-H100-80GB-HBM3").Label(NVIDIAMemory, "81559").
			Label(NVIDIAComputeMajor, "9").Label(NVIDIAComputeMinor, "0").Label(NVIDIACount, "8").
			Label(NVIDIAFamily, "Hopper").Label(NVIDIAMIGCapable, "true").Obj(),
		want: Accelerator{Vendor: "nvidia", ProductLabel: NVIDIAProduct, Product: "NVIDIA-H100-80GB-HBM3", Family: "hopper",
			MemoryBytes: 81559 * mib, ComputeCapability: "9.0", Count: 8, MIGCapable: true, Resource: "nvidia.com/gpu"},
		ok: true,
	}, {
		name: "NVIDIA: product only",
		node: MakeNode("t4").Label(NVIDIAProduct, "Tesla-T4").Obj(),
		want: Accelerator{Vendor: "nvidia", ProductLabel: NVIDIAProduct, Product: "Tesla-T4", Resource: "nvidia.com/gpu"},
		ok:   true,
	}, {
		name: "NVIDIA: major without minor is major.0",
		node: MakeNode("b200").Label(NVIDIAProduct, "NVIDIA-B200").Label(NVIDIAComputeMajor, "10").Obj(),
		want: Accelerator{Vendor: "nvidia", ProductLabel: NVIDIAProduct, Product: "NVIDIA-B200", ComputeCapability: "10.0", Resource: "nvidia.com/gpu"},
		ok:   true,
	}, {
		name: "NVIDIA: garbage memory, count, compute capability and mig.capable are ignored",
		node: MakeNode("bad").Label(NVIDIAProduct, "NVIDIA-A100-SXM4-40GB").Label(NVIDIAMemory, "lots").
			Label(NVIDIAComputeMajor, "eight").Label(NVIDIAComputeMinor, "0").Label(NVIDIACount, "-1").
			Label(NVIDIAMIGCapable, "maybe").Obj(),
		want: Accelerator{Vendor: "nvidia", ProductLabel: NVIDIAProduct, Product: "NVIDIA-A100-SXM4-40GB", Resource: "nvidia.com/gpu"},
		problems: []Problem{
			{NVIDIAMemory, "lots", "is not a whole number of MiB"},
			{NVIDIAComputeMajor, "eight", "is not a whole number"},
			{NVIDIACount, "-1", "is not a whole number of GPUs"},
			{NVIDIAMIGCapable, "maybe", "is not true or false"},
		},
		ok: true,
	}, {
		name: "NVIDIA: zero memory and an overflowing minor",
		node: MakeNode("zero").Label(NVIDIAProduct, "X").Label(NVIDIAMemory, "0").
			Label(NVIDIAComputeMajor, "8").Label(NVIDIAComputeMinor, "99999999999999999999").Obj(),
		want: Accelerator{Vendor: "nvidia", ProductLabel: NVIDIAProduct, Product: "X", Resource: "nvidia.com/gpu"},
		problems: []Problem{
			{NVIDIAMemory, "0", "is not a whole number of MiB"},
			{NVIDIAComputeMinor, "99999999999999999999", "is not a whole number"},
		},
		ok: true,
	}, {
		name: "AMD: product, vram in G, family, device id",
		node: MakeNode("mi300").Label(AMDProduct, "MI300X").Label(AMDVRAM, "192G").Label(AMDFamily, "CDNA3").Label(AMDDeviceID, "74A1").Obj(),
		want: Accelerator{Vendor: "amd", ProductLabel: AMDProduct, Product: "MI300X", Family: "cdna3", MemoryBytes: 192 * gib, DeviceID: "74a1", Resource: "amd.com/gpu"},
		ok:   true,
	}, {
		name: "AMD: product-name and vram as a quantity",
		node: MakeNode("mi250").Label(AMDProductName, "AMD_Instinct_MI250X").Label(AMDVRAM, "64Gi").Obj(),
		want: Accelerator{Vendor: "amd", ProductLabel: AMDProductName, Product: "AMD_Instinct_MI250X", MemoryBytes: 64 * gib, Resource: "amd.com/gpu"},
		ok:   true,
	}, {
		name: "AMD: vram in MB, and a bare number is GiB",
		node: MakeNode("m").Label(AMDProduct, "W7900").Label(AMDVRAM, "49152MB").Obj(),
		want: Accelerator{Vendor: "amd", ProductLabel: AMDProduct, Product: "W7900", MemoryBytes: 48 * gib, Resource: "amd.com/gpu"},
		ok:   true,
	}, {
		name: "AMD: bare vram",
		node: MakeNode("m").Label(AMDProduct, "MI210").Label(AMDVRAM, "64").Obj(),
		want: Accelerator{Vendor: "amd", ProductLabel: AMDProduct, Product: "MI210", MemoryBytes: 64 * gib, Resource: "amd.com/gpu"},
		ok:   true,
	}, {
		name:     "AMD: garbage vram",
		node:     MakeNode("m").Label(AMDProduct, "MI210").Label(AMDVRAM, "huge").Obj(),
		want:     Accelerator{Vendor: "amd", ProductLabel: AMDProduct, Product: "MI210", Resource: "amd.com/gpu"},
		problems: []Problem{{AMDVRAM, "huge", "is not a memory size (e.g. 192G)"}},
		ok:       true,
	}, {
		name: "Intel: product and memory.max in bytes, i915",
		node: MakeNode("max").Label(IntelProduct, "max-1550").Label(IntelMemoryMax, "137438953472").Obj(),
		want: Accelerator{Vendor: "intel", ProductLabel: IntelProduct, Product: "max-1550", MemoryBytes: 128 * gib, Resource: "gpu.intel.com/i915"},
		ok:   true,
	}, {
		name:     "Intel: the xe resource when the node exposes it; garbage memory",
		node:     MakeNode("xe").Label(IntelProduct, "max-1100").Label(IntelMemoryMax, "48GB").Resource("gpu.intel.com/xe").Obj(),
		want:     Accelerator{Vendor: "intel", ProductLabel: IntelProduct, Product: "max-1100", Resource: "gpu.intel.com/xe"},
		problems: []Problem{{IntelMemoryMax, "48GB", "is not a whole number of bytes"}},
		ok:       true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems, ok := ParseNode(tt.node)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("accelerator (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.problems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProblemString(t *testing.T) {
	got := Problem{NVIDIAMemory, "lots", "is not a whole number of MiB"}.String()
	want := `nvidia.com/gpu.memory="lots" is not a whole number of MiB; ignored`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestClassName(t *testing.T) {
	tests := []struct{ vendor, product, want string }{
		{"nvidia", "NVIDIA-H100-80GB-HBM3", "nvidia-h100-80gb-hbm3"},
		{"nvidia", "NVIDIA-A100-SXM4-40GB", "nvidia-a100-sxm4-40gb"},
		{"nvidia", "Tesla-T4", "nvidia-tesla-t4"},
		{"nvidia", "NVIDIA H100  PCIe", "nvidia-h100-pcie"},
		{"amd", "MI250X", "amd-mi250x"},
		{"amd", "AMD_Instinct_MI300X_OAM", "amd-instinct-mi300x-oam"},
		{"intel", "max-1550", "intel-max-1550"},
		{"intel", "Intel(R) Data Center GPU Max 1550", "intel-r-data-center-gpu-max-1550"},
		{"nvidia", "---", "nvidia"},
		{"", "___", "accelerator"},
		{"nvidia", "NVIDIA-" + longProduct, "nvidia-abcdefghij-abcdefghij-abcdefghij-abcdefghij-abc-7e4ba13c"},
	}
	for _, tt := range tests {
		got := ClassName(tt.vendor, tt.product)
		if got != tt.want {
			t.Errorf("ClassName(%q, %q) = %q, want %q", tt.vendor, tt.product, got, tt.want)
		}
		if len(got) > 63 {
			t.Errorf("ClassName(%q, %q) = %q: longer than 63", tt.vendor, tt.product, got)
		}
		if again := ClassName(tt.vendor, tt.product); again != got {
			t.Errorf("ClassName is not stable: %q then %q", got, again)
		}
	}
}

const longProduct = "ABCDEFGHIJ-ABCDEFGHIJ-ABCDEFGHIJ-ABCDEFGHIJ-ABCDEFGHIJ-ABCDEFGHIJ"
