package policy

import (
	"testing"
)

func TestImageRule(t *testing.T) {
	r := compileImageRule(MakePolicy("p").Images("registry.example.com", "ghcr.io/org", "lmsysorg").Obj().Spec.Rules.Images)
	const denied = " is not from an allowed registry (allowed: registry.example.com, ghcr.io/org, lmsysorg)"
	tests := []struct{ ref, want string }{
		{ref: "registry.example.com/any/image:1"},
		{ref: "ghcr.io/org/x"},
		{ref: "ghcr.io/org"},
		{ref: "lmsysorg/sglang:latest"},
		{ref: "docker.io/lmsysorg/sglang"},
		{ref: "ghcr.io/organisation/x:1", want: "image ghcr.io/organisation/x:1" + denied},
		{ref: "registry.example.com.evil.io/x", want: "image registry.example.com.evil.io/x" + denied},
		{ref: "evil/x:1", want: "image docker.io/evil/x:1" + denied},
		{ref: "sglang", want: "image docker.io/library/sglang" + denied},
		{ref: "x:", want: `image "x:" is not a valid reference: image reference has an empty tag`},
	}
	for _, tt := range tests {
		if got := r.check(tt.ref); got != tt.want {
			t.Errorf("check(%q) = %q; want %q", tt.ref, got, tt.want)
		}
	}
}
