package policy

import (
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/policy/v1alpha1"
)

func TestFor(t *testing.T) {
	set := Compile([]*v1alpha1.ServingPolicy{
		MakePolicy("everywhere").Obj(),
		MakePolicy("empty-selector").NamespaceSelector(&metav1.LabelSelector{}).Obj(),
		MakePolicy("team-a").Namespaces(map[string]string{"team": "a"}).Obj(),
		MakePolicy("not-prod").NamespaceSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"prod"}}}}).Obj(),
		MakePolicy("gpu-services").Services(map[string]string{"gpu": "yes"}).Obj(),
		MakePolicy("a-gpu-services").Namespaces(map[string]string{"team": "a"}).Services(map[string]string{"gpu": "yes"}).Obj(),
	}, Options{ExemptNamespaces: []string{"berth-system"}})
	tests := []struct {
		name string
		sub  Subject
		want []string
	}{
		{name: "namespace without labels, not about a service", sub: Subject{Namespace: "default"},
			want: []string{"empty-selector", "everywhere", "not-prod"}},
		{name: "team a, service without labels", sub: Subject{Namespace: "a", NamespaceLabels: map[string]string{"team": "a"}, ServiceLabels: map[string]string{}},
			want: []string{"empty-selector", "everywhere", "not-prod", "team-a"}},
		{name: "team a, gpu service", sub: Subject{Namespace: "a", NamespaceLabels: map[string]string{"team": "a", "env": "prod"}, ServiceLabels: map[string]string{"gpu": "yes"}},
			want: []string{"a-gpu-services", "empty-selector", "everywhere", "gpu-services", "team-a"}},
		{name: "the cluster as a whole", sub: Subject{}, want: []string{"empty-selector", "everywhere"}},
		{name: "kube-system is exempt", sub: Subject{Namespace: "kube-system"}},
		{name: "berth's namespace is exempt", sub: Subject{Namespace: "berth-system", ServiceLabels: map[string]string{"gpu": "yes"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second answer comes from the cache
				if got := set.For(tt.sub); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("For = %v; want %v", got, tt.want)
				}
			}
		})
	}
}

func TestForFollowsNamespaceLabels(t *testing.T) {
	set := Compile([]*v1alpha1.ServingPolicy{MakePolicy("team-a").Namespaces(map[string]string{"team": "a"}).Obj()}, Options{})
	ns := Subject{Namespace: "n", NamespaceLabels: map[string]string{"team": "a"}}
	if got := set.For(ns); !reflect.DeepEqual(got, []string{"team-a"}) {
		t.Fatalf("For = %v", got)
	}
	ns.NamespaceLabels = map[string]string{"team": "b"}
	if got := set.For(ns); got != nil {
		t.Fatalf("after relabelling: For = %v; want none", got)
	}
}

func TestNilSet(t *testing.T) {
	var s *Set
	if s.Len() != 0 || s.For(Subject{Namespace: "a"}) != nil || s.CheckService(Service{Subject: Subject{Namespace: "a"}}) != nil || s.CheckPod(Subject{Namespace: "a"}, nil) != nil {
		t.Fatal("a nil Set has policies")
	}
	if p, why := s.Gate(Subject{Namespace: "a"}, nil, nil).Runtime("ServingRuntime", "x", nil, nil); p != "" || why != "" {
		t.Fatalf("a nil Set's gate forbids: %q %q", p, why)
	}
}

func TestCompileProblems(t *testing.T) {
	bad := MakePolicy("bad").NamespaceSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "team", Operator: "Near"}}}).Obj()
	set := Compile([]*v1alpha1.ServingPolicy{bad, MakePolicy("good").Obj(), nil}, Options{})
	if set.Len() != 1 {
		t.Fatalf("Len = %d; want 1", set.Len())
	}
	want := []string{`ServingPolicy/bad: spec.namespaceSelector: "Near" is not a valid label selector operator`}
	if got := set.Problems(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Problems = %q; want %q", got, want)
	}
}

func TestObjectRule(t *testing.T) {
	tests := []struct {
		name   string
		rule   v1alpha1.ObjectRule
		object string
		labels map[string]string
		want   string
	}{
		{name: "empty rule allows", object: "x"},
		{name: "prefix allows", rule: allow("nvidia-a100-*"), object: "nvidia-a100-80gb"},
		{name: "exact name allows", rule: allow("nvidia-l4"), object: "nvidia-l4"},
		{name: "exact name is not a prefix", rule: allow("nvidia-l4"), object: "nvidia-l40s", want: "not in nvidia-l4"},
		{name: "not allowed", rule: allow("nvidia-a100-*", "nvidia-l4"), object: "nvidia-h100-80gb", want: "not in nvidia-a100-*, nvidia-l4"},
		{name: "selector allows", rule: v1alpha1.ObjectRule{AllowedSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "standard"}}},
			object: "x", labels: map[string]string{"tier": "standard"}},
		{name: "neither names nor selector", rule: v1alpha1.ObjectRule{Allowed: []string{"a"}, AllowedSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "standard"}}},
			object: "x", want: "not in a, labels tier=standard"},
		{name: "denied name wins over allowed", rule: v1alpha1.ObjectRule{Allowed: []string{"nvidia-*"}, Denied: []string{"nvidia-h100-*"}},
			object: "nvidia-h100-80gb", want: "denied by nvidia-h100-*"},
		{name: "denied selector", rule: v1alpha1.ObjectRule{DeniedSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "premium"}}},
			object: "x", labels: map[string]string{"tier": "premium"}, want: "denied by labels tier=premium"},
		{name: "denied selector does not match", rule: v1alpha1.ObjectRule{DeniedSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "premium"}}},
			object: "x", labels: map[string]string{"tier": "standard"}},
		{name: "star alone allows all", rule: allow("*"), object: "anything"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := compileObjectRule(&tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.check(tt.object, tt.labels); got != tt.want {
				t.Errorf("check = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestEnforce(t *testing.T) {
	deny := Violation{Policy: "d", Actions: []v1alpha1.ValidationAction{v1alpha1.Deny}, Message: "ServingPolicy/d: one"}
	warn := Violation{Policy: "w", Actions: []v1alpha1.ValidationAction{v1alpha1.Warn}, Message: "ServingPolicy/w: two"}
	audit1 := Violation{Policy: "a", Actions: []v1alpha1.ValidationAction{v1alpha1.Audit}, Message: "ServingPolicy/a: three"}
	audit2 := Violation{Policy: "a", Actions: []v1alpha1.ValidationAction{v1alpha1.Audit}, Message: "ServingPolicy/a: four"}
	both := Violation{Policy: "b", Actions: []v1alpha1.ValidationAction{v1alpha1.Warn, v1alpha1.Audit}, Message: "ServingPolicy/b: five"}
	got := Enforce([]Violation{audit1, both, deny, audit2, warn})
	want := Outcome{
		Deny:    []string{"ServingPolicy/d: one"},
		Warn:    []string{"ServingPolicy/b: five", "ServingPolicy/w: two"},
		Audit:   map[string]string{"a": "ServingPolicy/a: three; ServingPolicy/a: four", "b": "ServingPolicy/b: five"},
		Audited: []Violation{audit1, both, audit2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Enforce =\n%#v\nwant\n%#v", got, want)
	}
	if got := Enforce(nil); !reflect.DeepEqual(got, Outcome{}) {
		t.Fatalf("Enforce(nil) = %#v", got)
	}
}

// For is safe for concurrent use, across more namespaces than the cache
// holds and while their labels change (run with -race).
func TestForConcurrent(t *testing.T) {
	set := Compile([]*v1alpha1.ServingPolicy{MakePolicy("team-a").Namespaces(map[string]string{"team": "a"}).Obj()}, Options{})
	done := make(chan bool)
	for w := range 4 {
		go func() {
			defer func() { done <- true }()
			for i := range maxCachedNamespaces + 100 {
				team := []string{"a", "b"}[(i+w)%2]
				got := set.For(Subject{Namespace: fmt.Sprintf("ns-%d", i%(maxCachedNamespaces+50)), NamespaceLabels: map[string]string{"team": team}})
				if (team == "a") != (len(got) == 1) {
					t.Errorf("team %s: For = %v", team, got)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
