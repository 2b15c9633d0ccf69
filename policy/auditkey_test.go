package policy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/berthdev/berth/api/policy/v1alpha1"
)

// The apiserver prefixes a webhook's audit annotation keys with the
// webhook's name and drops (with a log line) a key for which
// "<webhook>/<key>" is not a qualified name: the key must have no "/" and
// at most 63 characters. A ServingPolicy's name is a DNS subdomain of up
// to 253 characters (dots are valid in a qualified name; length is what
// breaks it).
func TestAuditKey(t *testing.T) {
	long := strings.Repeat("team-a.", 28) + "gpu" // 199 characters
	long2 := strings.Repeat("team-a.", 28) + "cpu"
	name63 := strings.Repeat("a", 63)
	tests := []struct{ name, want string }{
		{name: "team-a", want: "team-a"},
		{name: "registries.team-a.example.com", want: "registries.team-a.example.com"},
		{name: name63, want: name63},
		{name: name63 + "b"},
		{name: long},
		{name: long2},
		{name: long + "-"},
		{name: strings.Repeat("x", 52) + "..." + strings.Repeat("y", 200)},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		key := AuditKey(tt.name)
		if tt.want != "" && key != tt.want {
			t.Errorf("AuditKey(%q) = %q; want %q", tt.name, key, tt.want)
		}
		for _, full := range []string{key, "servingpolicies.validate.policy.berth.dev/" + key, "inferenceservices.validate.ome.io/" + key} {
			if errs := validation.IsQualifiedName(full); len(errs) > 0 || strings.Count(full, "/") > 1 {
				t.Errorf("AuditKey(%q) = %q: %q is not a valid annotation key: %v", tt.name, key, full, errs)
			}
		}
		if key != AuditKey(tt.name) {
			t.Errorf("AuditKey(%q) is not stable", tt.name)
		}
		if other, ok := seen[key]; ok {
			t.Errorf("AuditKey(%q) = AuditKey(%q) = %q", tt.name, other, key)
		}
		seen[key] = tt.name
	}
	if got, want := AuditKey(long), long[:52]+"-"; !strings.HasPrefix(got, want) {
		t.Errorf("AuditKey(long) = %q; want it to start with the name's first 52 characters, %q", got, want)
	}
}

// Enforce keys audit annotations by AuditKey: a 200-character policy
// name's violations are kept under a valid key.
func TestEnforceLongPolicyName(t *testing.T) {
	name := strings.Repeat("p", 200)
	v := Violation{Policy: name, Actions: []v1alpha1.ValidationAction{v1alpha1.Audit}, Message: "ServingPolicy/" + name + ": one"}
	got := Enforce([]Violation{v, v})
	if len(got.Audit) != 1 || got.Audit[AuditKey(name)] != v.Message+"; "+v.Message {
		t.Fatalf("Enforce audit = %v; want one key %q", got.Audit, AuditKey(name))
	}
	if len(AuditKey(name)) > maxAuditKey {
		t.Fatalf("AuditKey(%d characters) has %d", len(name), len(AuditKey(name)))
	}
}
