package validation

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func terms(op string, values ...string) []corev1.NodeSelectorTerm {
	return []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "nvidia.com/gpu.memory", Operator: corev1.NodeSelectorOperator(op), Values: values}}}}
}

func TestValidateAcceleratorClassSpec(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	spec := field.NewPath("spec")
	good := v1beta1.AcceleratorClassSpec{Discovery: v1beta1.AcceleratorDiscovery{NodeSelector: map[string]string{"nvidia.com/gpu.product": "H100"}}}
	cases := []struct {
		name string
		edit func(*v1beta1.AcceleratorClassSpec)
		want field.ErrorList
	}{
		{"valid", func(*v1beta1.AcceleratorClassSpec) {}, nil},
		{"no discovery", func(s *v1beta1.AcceleratorClassSpec) { s.Discovery.NodeSelector = nil },
			field.ErrorList{field.Required(spec.Child("discovery"), "set nodeSelector or nodeSelectorTerms so berth can find the nodes of this class")}},
		{"bad label key", func(s *v1beta1.AcceleratorClassSpec) { s.Discovery.NodeSelector["bad key!"] = "x" },
			field.ErrorList{field.Invalid(spec.Child("discovery", "nodeSelector"), "bad key!", "is not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")}},
		// Operators and values are selection's rule (selection.ValidateDiscovery):
		// this package checks only the shape of a term.
		{"operators are not checked here", func(s *v1beta1.AcceleratorClassSpec) { s.Discovery.NodeSelectorTerms = terms("Gte", "24Gi") }, nil},
		{"bad capability", func(s *v1beta1.AcceleratorClassSpec) { s.Capabilities.ComputeCapability = "nine" },
			field.ErrorList{field.Invalid(spec.Child("capabilities", "computeCapability"), "nine", "is not a number such as 8.0 or 10.0")}},
		{"zero memory", func(s *v1beta1.AcceleratorClassSpec) { s.Capabilities.MemoryGB = q("0") },
			field.ErrorList{field.Invalid(spec.Child("capabilities", "memoryGB"), "0", "must be positive")}},
		{"duplicate feature", func(s *v1beta1.AcceleratorClassSpec) { s.Capabilities.Features = []string{"fp8", "fp8"} },
			field.ErrorList{withDetail(field.Duplicate(spec.Child("capabilities", "features").Index(1), "fp8"), "also spec.capabilities.features[0]")}},
		{"bad resource name", func(s *v1beta1.AcceleratorClassSpec) {
			s.Resources = []v1beta1.AcceleratorResource{{Name: "gpu", Quantity: *q("1")}}
		}, field.ErrorList{field.Invalid(spec.Child("resources").Index(0).Child("name"), "gpu", "is not an extended resource name; use a vendor domain such as nvidia.com/gpu")}},
		{"duplicate resource", func(s *v1beta1.AcceleratorClassSpec) {
			r := v1beta1.AcceleratorResource{Name: "nvidia.com/gpu", Quantity: *q("1")}
			s.Resources = []v1beta1.AcceleratorResource{r, r}
		}, field.ErrorList{withDetail(field.Duplicate(spec.Child("resources").Index(1).Child("name"), "nvidia.com/gpu"), "also spec.resources[0].name")}},
		{"fractional", func(s *v1beta1.AcceleratorClassSpec) {
			s.Resources = []v1beta1.AcceleratorResource{{Name: "nvidia.com/gpu", Quantity: *q("500m")}}
		}, field.ErrorList{field.Invalid(spec.Child("resources").Index(0).Child("quantity"), "500m", "is fractional but the resource is not divisible")}},
		{"negative cost", func(s *v1beta1.AcceleratorClassSpec) { s.Cost = &v1beta1.AcceleratorCost{PerHour: q("-1")} },
			field.ErrorList{field.Invalid(spec.Child("cost", "perHour"), "-1", "must not be negative")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := good.DeepCopy()
			tc.edit(s)
			if diff := cmp.Diff(tc.want, ValidateAcceleratorClassSpec(s, spec)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEveryShippedAcceleratorClassIsValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "deploy", "accelerators", "*.yaml"))
	require.NoError(t, err)
	n := 0
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var ac v1beta1.AcceleratorClass
		require.NoError(t, yaml.UnmarshalStrict(b, &ac), f)
		if diff := cmp.Diff(field.ErrorList(nil), ValidateAcceleratorClassSpec(&ac.Spec, field.NewPath("spec"))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", f, diff)
		}
		n++
	}
	require.GreaterOrEqual(t, n, 10)
}

func TestValidateProfileSpec(t *testing.T) {
	c := func(name string) corev1.Container { return corev1.Container{Name: name, Image: "img"} }
	spec := field.NewPath("spec")
	cases := []struct {
		name string
		spec v1beta1.ClusterEngineRuntimeProfileSpec
		want field.ErrorList
	}{
		{"valid", v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{c("engine-runtime")}}, nil},
		{"duplicate", v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{c("a")}, InitContainers: []corev1.Container{c("a")}},
			field.ErrorList{withDetail(field.Duplicate(spec.Child("initContainers").Index(0).Child("name"), "a"), "also spec.containers[0].name; container names must be unique")}},
		{"no name", v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{{Image: "x"}}},
			field.ErrorList{field.Required(spec.Child("containers").Index(0).Child("name"), "a profile container needs a name (it is how pods and overrides refer to it)")}},
		{"bad name", v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{c("Bad_Name")}},
			field.ErrorList{field.Invalid(spec.Child("containers").Index(0).Child("name"), "Bad_Name", "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")}},
		{"no image", v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{{Name: "a"}}},
			field.ErrorList{field.Required(spec.Child("containers").Index(0).Child("image"), "")}},
		{"placeholder image", v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{{Name: "engine-runtime", Image: "<IMG>"}}},
			field.ErrorList{field.Invalid(spec.Child("containers").Index(0).Child("image"), "<IMG>", `image reference has an invalid path component "<IMG>"; the container runtime could not pull it`)}},
		{"init image with a space", v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{c("a")}, InitContainers: []corev1.Container{{Name: "b", Image: "ghcr.io/x y:1"}}},
			field.ErrorList{field.Invalid(spec.Child("initContainers").Index(0).Child("image"), "ghcr.io/x y:1", "image reference contains whitespace; the container runtime could not pull it")}},
		{"full reference", v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{{Name: "a", Image: "ghcr.io/berthdev/berth-engine-sidecar:0.1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}}, nil},
		{"dup volume", v1beta1.ClusterEngineRuntimeProfileSpec{Containers: []corev1.Container{c("a")}, Volumes: []corev1.Volume{{Name: "v"}, {Name: "v"}}},
			field.ErrorList{withDetail(field.Duplicate(spec.Child("volumes").Index(1).Child("name"), "v"), "also spec.volumes[0].name; volume names must be unique")}},
		{"empty", v1beta1.ClusterEngineRuntimeProfileSpec{},
			field.ErrorList{field.Required(spec.Child("containers"), "a profile must add at least one container")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ValidateProfileSpec(&tc.spec, spec)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
