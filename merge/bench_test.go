package merge

import (
	"testing"
)

// BenchmarkComposeEnginePod composes the leader of a multi-node SGLang
// engine group on H100: a runtime with leader/worker runners, volumes and
// tolerations, a matching accelerator configuration, the service's leader
// override and the group env: what the pod webhook does per pod.
func BenchmarkComposeEnginePod(b *testing.B) {
	in, pod := loadCase(b, "testdata/multinode-leader")
	b.ReportAllocs()
	for b.Loop() {
		p := pod.DeepCopy()
		if err := ComposePod(in, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComposePDEngineWithProfile adds an AMD class (affinity terms,
// GPU translation) and an engine runtime profile sidecar.
func BenchmarkComposePDEngineWithProfile(b *testing.B) {
	in, pod := loadCase(b, "testdata/pd-prefill-engine")
	b.ReportAllocs()
	for b.Loop() {
		p := pod.DeepCopy()
		if err := ComposePod(in, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRevision hashes the same multi-node engine's inputs: it
// composes a canonical leader and worker pod and hashes their JSON.
func BenchmarkRevision(b *testing.B) {
	in, _ := loadCase(b, "testdata/multinode-leader")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Revision(in); err != nil {
			b.Fatal(err)
		}
	}
}
