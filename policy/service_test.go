package policy

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/wrappers"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
)

var (
	deny  = []v1alpha1.ValidationAction{v1alpha1.Deny}
	teamA = Subject{Namespace: "team-a", NamespaceLabels: map[string]string{"team": "a"}}
	gpu   = corev1.ResourceName("nvidia.com/gpu")
	a100  = nvidiaClass("nvidia-a100-80gb").PerHour("2.5").Obj()
	h100  = nvidiaClass("nvidia-h100-80gb").PerHour("4").Obj()
)

// engine8 is an engine of 8 GPUs per pod, one group.
func engine8() merge.ComposedRole { return MakeRole("engine").GPUs(gpu, 8).Obj() }

func TestCheckService(t *testing.T) {
	svc := wrappers.MakeInferenceService("team-a", "chat").Obj()
	base := Service{Subject: teamA, Service: svc, RuntimeKind: "ClusterServingRuntime", RuntimeName: "srt-vllm",
		Classes: map[string]*v1beta1.AcceleratorClass{"engine": h100}, Roles: []merge.ComposedRole{engine8()}}
	tests := []struct {
		name   string
		policy *v1alpha1.ServingPolicy
		edit   func(*Service)
		want   []Violation
	}{
		{name: "allowed class", policy: MakePolicy("team-a").Classes(allow("nvidia-h100-*")).Obj()},
		{name: "forbidden class", policy: MakePolicy("team-a").Classes(allow("nvidia-a100-*")).Obj(),
			want: []Violation{{Policy: "team-a", Actions: deny, Rule: RuleAcceleratorClasses,
				Message: "ServingPolicy/team-a: AcceleratorClass nvidia-h100-80gb is not allowed in namespace team-a: not in nvidia-a100-*"}}},
		{name: "forbidden decoder class only", policy: MakePolicy("p").Classes(allow("nvidia-h100-*")).Obj(),
			edit: func(s *Service) {
				s.Classes = map[string]*v1beta1.AcceleratorClass{"engine": h100, "decoder": a100}
			},
			want: []Violation{{Policy: "p", Actions: deny, Rule: RuleAcceleratorClasses,
				Message: "ServingPolicy/p: AcceleratorClass nvidia-a100-80gb is not allowed in namespace team-a: not in nvidia-h100-*"}}},
		{name: "forbidden runtime", policy: MakePolicy("rt").Runtimes(v1alpha1.ObjectRule{Denied: []string{"srt-*"}}).Obj(),
			want: []Violation{{Policy: "rt", Actions: deny, Rule: RuleRuntimes,
				Message: "ServingPolicy/rt: ClusterServingRuntime srt-vllm is not allowed in namespace team-a: denied by srt-*"}}},
		{name: "forbidden runtime the service names", policy: MakePolicy("rt").Runtimes(allow("vllm")).Obj(),
			edit: func(s *Service) {
				s.Service = wrappers.MakeInferenceService("team-a", "chat").Runtime("srt-vllm").Obj()
			},
			want: []Violation{{Policy: "rt", Actions: deny, Rule: RuleRuntimes, Field: field.NewPath("spec", "runtime", "name"),
				Message: "ServingPolicy/rt: ClusterServingRuntime srt-vllm is not allowed in namespace team-a: not in vllm"}}},
		{name: "per service budget", policy: MakePolicy("big").MaxPerService(7).Obj(),
			want: []Violation{{Policy: "big", Actions: deny, Rule: RuleMaxAcceleratorsPerService,
				Message: "ServingPolicy/big: InferenceService team-a/chat would use 8 nvidia.com/gpu, above the maximum of 7 per service"}}},
		{name: "per service budget at the limit", policy: MakePolicy("big").MaxPerService(8).Obj()},
		{name: "per service budget counts max replicas and workers", policy: MakePolicy("big").MaxPerService(40).Obj(),
			edit: func(s *Service) {
				s.Roles = []merge.ComposedRole{
					MakeRole("engine").Role(merge.RoleLeader, 1).Replicas(1, 3).GPUs(gpu, 8).Obj(),
					MakeRole("engine").Role(merge.RoleWorker, 1).Replicas(1, 3).GPUs(gpu, 8).Obj(),
				}
			},
			want: []Violation{{Policy: "big", Actions: deny, Rule: RuleMaxAcceleratorsPerService,
				Message: "ServingPolicy/big: InferenceService team-a/chat would use 48 nvidia.com/gpu, above the maximum of 40 per service"}}},
		{name: "namespace budget", policy: MakePolicy("gpu-budget").MaxPerNamespace(16).Obj(),
			edit: func(s *Service) { s.NamespaceInUse = map[corev1.ResourceName]int64{gpu: 16} },
			want: []Violation{{Policy: "gpu-budget", Actions: deny, Rule: RuleMaxAcceleratorsPerNamespace,
				Message: "ServingPolicy/gpu-budget: namespace team-a would use 24 nvidia.com/gpu, above its budget of 16 (16 of 16 nvidia.com/gpu in use)"}}},
		{name: "namespace budget with room", policy: MakePolicy("gpu-budget").MaxPerNamespace(16).Obj(),
			edit: func(s *Service) { s.NamespaceInUse = map[corev1.ResourceName]int64{gpu: 8, "amd.com/gpu": 16} }},
		{name: "cost", policy: MakePolicy("cost").MaxCost("20").Obj(),
			edit: func(s *Service) {
				s.Roles = append(s.Roles, MakeRole("decoder").GPUs(gpu, 1).Obj(), MakeRole("router").Obj())
			},
			want: []Violation{{Policy: "cost", Actions: deny, Rule: RuleMaxCostPerHour,
				Message: "ServingPolicy/cost: InferenceService team-a/chat would cost 36/hour (8 × nvidia-h100-80gb at 4/hour + 1 × nvidia-h100-80gb at 4/hour), above the maximum of 20/hour"}}},
		{name: "cost of a class without perHour is 0", policy: MakePolicy("cost").MaxCost("0.5").Obj(),
			edit: func(s *Service) {
				s.Classes = map[string]*v1beta1.AcceleratorClass{"engine": nvidiaClass("free").Obj()}
			}},
		{name: "fractional cost", policy: MakePolicy("cost").MaxCost("19.99").Obj(),
			edit: func(s *Service) { s.Classes = map[string]*v1beta1.AcceleratorClass{"engine": a100} },
			want: []Violation{{Policy: "cost", Actions: deny, Rule: RuleMaxCostPerHour,
				Message: "ServingPolicy/cost: InferenceService team-a/chat would cost 20/hour (8 × nvidia-a100-80gb at 2.5/hour), above the maximum of 19.99/hour"}}},
		{name: "required labels", policy: MakePolicy("labels").Require("team", "cost-center").Obj(),
			edit: func(s *Service) {
				s.Service = wrappers.MakeInferenceService("team-a", "chat").Labels(map[string]string{"team": "", "cost-center": "42"}).Obj()
			},
			want: []Violation{{Policy: "labels", Actions: deny, Rule: RuleRequiredLabels, Field: field.NewPath("metadata", "labels").Key("team"),
				Message: "ServingPolicy/labels: label team is required on every InferenceService in namespace team-a, with a non-empty value"}}},
		{name: "command", policy: MakePolicy("cmd").NoCommand().Obj(),
			edit: func(s *Service) {
				s.Service = wrappers.MakeInferenceService("team-a", "chat").EngineRunner(v1beta1.RunnerSpec{Command: []string{"sh"}}).Obj()
			},
			want: []Violation{{Policy: "cmd", Actions: deny, Rule: RuleAllowCommand, Field: field.NewPath("spec", "engine", "runner", "command"),
				Message: "ServingPolicy/cmd: spec.engine.runner.command: setting a container command is not allowed in namespace team-a"}}},
		{name: "command allowed", policy: MakePolicy("cmd").Obj(),
			edit: func(s *Service) {
				s.Service = wrappers.MakeInferenceService("team-a", "chat").EngineRunner(v1beta1.RunnerSpec{Command: []string{"sh"}}).Obj()
			}},
		{name: "policy of another namespace", policy: MakePolicy("b").Namespaces(map[string]string{"team": "b"}).MaxPerService(0).Obj()},
		{name: "service selector not matching", policy: MakePolicy("gpu").Services(map[string]string{"gpu": "yes"}).MaxPerService(0).Obj()},
		{name: "service selector matching the service's labels", policy: MakePolicy("gpu").Services(map[string]string{"gpu": "yes"}).MaxPerService(0).Obj(),
			edit: func(s *Service) {
				s.Service = wrappers.MakeInferenceService("team-a", "chat").Labels(map[string]string{"gpu": "yes"}).Obj()
			},
			want: []Violation{{Policy: "gpu", Actions: deny, Rule: RuleMaxAcceleratorsPerService,
				Message: "ServingPolicy/gpu: InferenceService team-a/chat would use 8 nvidia.com/gpu, above the maximum of 0 per service"}}},
		{name: "exempt namespace", policy: MakePolicy("all").MaxPerService(0).Obj(),
			edit: func(s *Service) { s.Namespace = "kube-system" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base
			if tt.edit != nil {
				tt.edit(&in)
			}
			got := Compile([]*v1alpha1.ServingPolicy{tt.policy}, Options{}).CheckService(in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CheckService =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestCheckServiceImages(t *testing.T) {
	set := Compile([]*v1alpha1.ServingPolicy{MakePolicy("registries").Images("registry.example.com", "ghcr.io/berthdev").Obj()}, Options{})
	rt := &v1beta1.ServingRuntimeSpec{EngineConfig: &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Image: "lmsysorg/sglang:v1"}}}
	const allowed = " is not from an allowed registry (allowed: registry.example.com, ghcr.io/berthdev)"
	tests := []struct {
		name string
		svc  *v1beta1.InferenceService
		spec *v1beta1.ServingRuntimeSpec
		role merge.ComposedRole
		want []Violation
	}{
		{name: "allowed", role: MakeRole("engine").Obj()},
		{name: "the user's override", svc: wrappers.MakeInferenceService("team-a", "chat").EngineRunner(v1beta1.RunnerSpec{Image: "evil/x:1"}).Obj(), spec: rt,
			role: MakeRole("engine").Image("evil/x:1").Obj(),
			want: []Violation{{Policy: "registries", Actions: deny, Rule: RuleImages, Field: field.NewPath("spec", "engine", "runner", "image"),
				Message: "ServingPolicy/registries: spec.engine.runner.image: image docker.io/evil/x:1" + allowed}}},
		{name: "the runtime's", spec: rt, role: MakeRole("engine").Image("lmsysorg/sglang:v1").Obj(),
			want: []Violation{{Policy: "registries", Actions: deny, Rule: RuleImages,
				Message: "ServingPolicy/registries: ClusterServingRuntime/srt spec.engineConfig.runner.image: image docker.io/lmsysorg/sglang:v1" + allowed}}},
		{name: "an init container from elsewhere", role: MakeRole("engine").Role(merge.RoleLeader, 1).Init("busybox").Obj(),
			want: []Violation{{Policy: "registries", Actions: deny, Rule: RuleImages,
				Message: "ServingPolicy/registries: engine leader pod, container init: image docker.io/library/busybox" + allowed}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := tt.svc
			if svc == nil {
				svc = wrappers.MakeInferenceService("team-a", "chat").Obj()
			}
			got := set.CheckService(Service{Subject: teamA, Service: svc, RuntimeKind: "ClusterServingRuntime", RuntimeName: "srt",
				RuntimeSpec: tt.spec, Roles: []merge.ComposedRole{tt.role, tt.role}})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CheckService =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestCheckImagesAndPod(t *testing.T) {
	set := Compile([]*v1alpha1.ServingPolicy{
		MakePolicy("registries").Actions(v1alpha1.Warn).Images("ghcr.io/org").Obj(),
		MakePolicy("team-b").Namespaces(map[string]string{"team": "b"}).Images("nowhere.io").Obj(),
		MakePolicy("svc-only").Services(map[string]string{"x": "y"}).Images("nowhere.io").Obj(),
	}, Options{})
	rt := &v1beta1.ServingRuntimeSpec{ServingRuntimePodSpec: v1beta1.ServingRuntimePodSpec{Containers: []corev1.Container{{Name: "c", Image: "ghcr.io/org/x"}}},
		EngineConfig: &v1beta1.EngineSpec{Leader: &v1beta1.LeaderSpec{Runner: &v1beta1.RunnerSpec{Image: "ghcr.io/organisation/x"}}}}
	warn := []v1alpha1.ValidationAction{v1alpha1.Warn}
	want := []Violation{{Policy: "registries", Actions: warn, Rule: RuleImages, Field: field.NewPath("spec", "engineConfig", "leader", "runner", "image"),
		Message: "ServingPolicy/registries: spec.engineConfig.leader.runner.image: image ghcr.io/organisation/x is not from an allowed registry (allowed: ghcr.io/org)"}}
	if got := set.CheckImages(Subject{}, RuntimeImages(rt)); !reflect.DeepEqual(got, want) {
		t.Errorf("CheckImages =\n%#v\nwant\n%#v", got, want)
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Image: "ghcr.io/org/init"}}, Containers: []corev1.Container{{Image: "ghcr.io/org/a"}, {Image: "nginx"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Image: "busybox"}}}}}
	want = []Violation{
		{Policy: "registries", Actions: warn, Rule: RuleImages, Field: field.NewPath("spec", "containers").Index(1).Child("image"),
			Message: "ServingPolicy/registries: spec.containers[1].image: image docker.io/library/nginx is not from an allowed registry (allowed: ghcr.io/org)"},
		{Policy: "registries", Actions: warn, Rule: RuleImages, Field: field.NewPath("spec", "ephemeralContainers").Index(0).Child("image"),
			Message: "ServingPolicy/registries: spec.ephemeralContainers[0].image: image docker.io/library/busybox is not from an allowed registry (allowed: ghcr.io/org)"},
	}
	if got := set.CheckPod(Subject{Namespace: "team-a"}, pod); !reflect.DeepEqual(got, want) {
		t.Errorf("CheckPod =\n%#v\nwant\n%#v", got, want)
	}
}

func TestAccelerators(t *testing.T) {
	amd := nvidiaClass("mi300x").Resource("amd.com/gpu").Obj()
	custom := nvidiaClass("custom").Resource("example.com/npu").Obj()
	initGPU := MakeRole("engine").GPUs(gpu, 2).Obj()
	initGPU.Pod.Spec.InitContainers = []corev1.Container{{Name: "warm", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{gpu: *resourceQty(4)}}}}
	tests := []struct {
		name    string
		roles   []merge.ComposedRole
		classes []*v1beta1.AcceleratorClass
		want    map[corev1.ResourceName]int64
	}{
		{name: "none", roles: []merge.ComposedRole{MakeRole("router").Obj()}, want: map[corev1.ResourceName]int64{}},
		{name: "replicas without max", roles: []merge.ComposedRole{MakeRole("engine").Replicas(3, 0).GPUs(gpu, 2).Obj()}, want: map[corev1.ResourceName]int64{gpu: 6}},
		{name: "max replicas and workers", roles: []merge.ComposedRole{
			MakeRole("engine").Role(merge.RoleLeader, 1).Replicas(1, 2).GPUs(gpu, 8).Obj(),
			MakeRole("engine").Role(merge.RoleWorker, 3).Replicas(1, 2).GPUs(gpu, 8).Obj(),
			MakeRole("decoder").GPUs("amd.com/gpu", 1).Obj(),
		}, want: map[corev1.ResourceName]int64{gpu: 64, "amd.com/gpu": 1}},
		{name: "a class's resource counts only when a class names it", roles: []merge.ComposedRole{MakeRole("engine").GPUs("example.com/npu", 4).Obj()},
			classes: []*v1beta1.AcceleratorClass{amd, custom, nil}, want: map[corev1.ResourceName]int64{"example.com/npu": 4}},
		{name: "unknown resource", roles: []merge.ComposedRole{MakeRole("engine").GPUs("example.com/npu", 4).Obj()}, want: map[corev1.ResourceName]int64{}},
		{name: "an init container's larger request", roles: []merge.ComposedRole{initGPU}, want: map[corev1.ResourceName]int64{gpu: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Accelerators(tt.roles, tt.classes...); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Accelerators = %v; want %v", got, tt.want)
			}
		})
	}
}

func TestGate(t *testing.T) {
	set := Compile([]*v1alpha1.ServingPolicy{
		MakePolicy("team-a").Namespaces(map[string]string{"team": "a"}).Classes(allow("nvidia-a100-*", "nvidia-h100-*")).Runtimes(allow("srt-*")).Obj(),
		MakePolicy("budget").MaxPerService(16).MaxPerNamespace(24).Obj(),
		MakePolicy("cost").MaxCost("30").Obj(),
		MakePolicy("warn-only").Actions(v1alpha1.Warn, v1alpha1.Audit).Classes(allow("none")).Obj(),
	}, Options{})
	g := set.Gate(teamA, wrappers.MakeInferenceService("team-a", "chat").Obj(), map[corev1.ResourceName]int64{gpu: 16})
	use := func(perPod, pods int64, groups int32) selection.ClassUse {
		// groups at most: the runtime's maxReplicas, as merge.Topology reads it
		rt := &v1beta1.ServingRuntimeSpec{EngineConfig: &v1beta1.EngineSpec{}}
		rt.EngineConfig.MaxReplicas = &groups
		return selection.ClassUse{PerPod: perPod, Pods: pods, Resource: gpu, Runtime: rt}
	}
	type verdict struct{ policy, why string }
	tests := []struct {
		name  string
		class *v1beta1.AcceleratorClass
		use   selection.ClassUse
		inUse int64 // 16 when 0
		want  verdict
	}{
		{name: "allowed", class: a100, use: use(8, 1, 1)},
		{name: "not allowed", class: nvidiaClass("nvidia-l4").Obj(), use: use(1, 1, 1), want: verdict{"ServingPolicy/team-a", "not in nvidia-a100-*, nvidia-h100-*"}},
		{name: "per service", class: a100, use: use(8, 1, 3), want: verdict{"ServingPolicy/budget", "would use 24 nvidia.com/gpu, above the maximum of 16 per service"}},
		{name: "per namespace", class: a100, use: use(8, 2, 1), want: verdict{"ServingPolicy/budget", "namespace team-a would use 32 nvidia.com/gpu, above its budget of 24 (16 of 24 nvidia.com/gpu in use)"}},
		{name: "per namespace, already over", class: a100, use: use(8, 1, 1), inUse: 30, want: verdict{"ServingPolicy/budget", "namespace team-a would use 38 nvidia.com/gpu, above its budget of 24 (30 nvidia.com/gpu already in use, over the budget)"}},
		{name: "cost", class: h100, use: use(8, 1, 1), want: verdict{"ServingPolicy/cost", "would cost 32/hour (8 × 4/hour), above the maximum of 30/hour"}},
		{name: "cheaper class", class: a100, use: use(8, 1, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := g
			if tt.inUse != 0 {
				g = set.Gate(teamA, wrappers.MakeInferenceService("team-a", "chat").Obj(), map[corev1.ResourceName]int64{gpu: tt.inUse})
			}
			p, why := g.Class(tt.class, tt.use)
			if got := (verdict{p, why}); got != tt.want {
				t.Errorf("Class = %+v; want %+v", got, tt.want)
			}
		})
	}
	if p, why := g.Runtime("ServingRuntime", "vllm", nil, nil); p != "ServingPolicy/team-a" || why != "not in srt-*" {
		t.Errorf("Runtime = %q, %q", p, why)
	}
	if p, why := g.Runtime("ClusterServingRuntime", "srt-vllm", nil, nil); p != "" || why != "" {
		t.Errorf("Runtime = %q, %q; want allowed", p, why)
	}
	if p, _ := set.Gate(Subject{Namespace: "kube-system"}, nil, nil).Class(nvidiaClass("nvidia-l4").Obj(), use(100, 1, 1)); p != "" {
		t.Errorf("kube-system's gate forbids, by %s", p)
	}
}

func TestServiceCommands(t *testing.T) {
	svc := wrappers.MakeInferenceService("a", "b").EngineRunner(v1beta1.RunnerSpec{Command: []string{"x"}}).Obj()
	svc.Spec.Engine.Worker = &v1beta1.WorkerSpec{Runner: &v1beta1.RunnerSpec{Command: []string{"y"}}}
	svc.Spec.Decoder = &v1beta1.DecoderSpec{Leader: &v1beta1.LeaderSpec{Runner: &v1beta1.RunnerSpec{Command: []string{"z"}}},
		AcceleratorConfigurations: []v1beta1.AcceleratorConfiguration{{Runner: &v1beta1.RunnerSpec{Command: []string{"w"}}}}}
	svc.Spec.Router = &v1beta1.RouterSpec{PodSpec: v1beta1.PodSpec{Containers: []corev1.Container{{Name: "side"}, {Name: "r", Command: []string{"v"}}}}}
	want := []*field.Path{
		field.NewPath("spec", "engine", "runner", "command"),
		field.NewPath("spec", "engine", "worker", "runner", "command"),
		field.NewPath("spec", "decoder", "leader", "runner", "command"),
		field.NewPath("spec", "decoder", "acceleratorConfigurations").Index(0).Child("runner", "command"),
		field.NewPath("spec", "router", "containers").Index(1).Child("command"),
	}
	if got := ServiceCommands(svc); !reflect.DeepEqual(got, want) {
		t.Errorf("ServiceCommands = %v; want %v", got, want)
	}
}

// The gate's verdict on a class follows the class object: an updated
// class (a new object, as selection's index holds them) is judged again,
// also past the cache's bound.
func TestGateFollowsClassUpdates(t *testing.T) {
	set := Compile([]*v1alpha1.ServingPolicy{MakePolicy("tier").Classes(v1alpha1.ObjectRule{
		AllowedSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "standard"}}}).Obj()}, Options{})
	use := selection.ClassUse{PerPod: 1, Pods: 1, Resource: gpu}
	for i := range maxCachedNamespaces + 10 {
		tier := []string{"standard", "premium"}[i%2]
		c := nvidiaClass(fmt.Sprintf("c%d", i%3)).Labels(map[string]string{"tier": tier}).Obj()
		p, why := set.Gate(teamA, nil, nil).Class(c, use)
		if want := tier == "premium"; (p != "") != want {
			t.Fatalf("update %d (tier %s): Class = %q, %q", i, tier, p, why)
		}
	}
}

// A gate policy with a serviceSelector forbids only for the services it
// selects, whatever gate was built before for the namespace (the
// namespace's gate is shared by services no such policy selects).
func TestGateServiceSelector(t *testing.T) {
	set := Compile([]*v1alpha1.ServingPolicy{
		MakePolicy("gold").Services(map[string]string{"tier": "gold"}).Classes(allow("nvidia-h100-*")).Obj(),
		MakePolicy("labels").Services(map[string]string{"tier": "gold"}).Require("team").Obj(),
	}, Options{})
	l4 := nvidiaClass("nvidia-l4").Obj()
	use := selection.ClassUse{PerPod: 1, Pods: 1, Resource: gpu, Runtime: &v1beta1.ServingRuntimeSpec{EngineConfig: &v1beta1.EngineSpec{}}}
	plain, gold := wrappers.MakeInferenceService("team-a", "plain").Obj(), wrappers.MakeInferenceService("team-a", "gold").Labels(map[string]string{"tier": "gold"}).Obj()
	for i, tt := range []struct {
		svc    *v1beta1.InferenceService
		policy string
	}{{plain, ""}, {gold, "ServingPolicy/gold"}, {plain, ""}, {gold, "ServingPolicy/gold"}} {
		if p, _ := set.Gate(teamA, tt.svc, nil).Class(l4, use); p != tt.policy {
			t.Errorf("%d: the gate of %s forbids by %q; want %q", i, tt.svc.Name, p, tt.policy)
		}
	}
}
