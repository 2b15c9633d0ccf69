package policy

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// Image is one image reference and the field that sets it.
type Image struct {
	Field *field.Path
	Ref   string
}

// componentParts are the fields of an engine, decoder or router that can
// set an image or a command.
type componentParts struct {
	pod            *v1beta1.PodSpec
	runner         *v1beta1.RunnerSpec
	leader         *v1beta1.LeaderSpec
	worker         *v1beta1.WorkerSpec
	configs        []v1beta1.AcceleratorConfiguration
	engineRuntimes []v1beta1.EngineRuntimeRef
}

func engineParts(e *v1beta1.EngineSpec) *componentParts {
	if e == nil {
		return nil
	}
	return &componentParts{pod: &e.PodSpec, runner: e.Runner, leader: e.Leader, worker: e.Worker, configs: e.AcceleratorConfigurations, engineRuntimes: e.EngineRuntimes}
}

func decoderParts(d *v1beta1.DecoderSpec) *componentParts {
	if d == nil {
		return nil
	}
	return &componentParts{pod: &d.PodSpec, runner: d.Runner, leader: d.Leader, worker: d.Worker, configs: d.AcceleratorConfigurations, engineRuntimes: d.EngineRuntimes}
}

func routerParts(r *v1beta1.RouterSpec) *componentParts {
	if r == nil {
		return nil
	}
	return &componentParts{pod: &r.PodSpec, runner: r.Runner, engineRuntimes: r.EngineRuntimes}
}

// containerField visits a container list's fields.
type containerVisit func(f *field.Path, name, image string, command []string)

func visitContainers(p *field.Path, cs []corev1.Container, visit containerVisit) {
	for i := range cs {
		visit(p.Index(i), cs[i].Name, cs[i].Image, cs[i].Command)
	}
}

func visitRunner(p *field.Path, r *v1beta1.RunnerSpec, visit containerVisit) {
	if r != nil {
		visit(p, r.Name, r.Image, r.Command)
	}
}

func visitPod(p *field.Path, pod *v1beta1.PodSpec, visit containerVisit) {
	visitContainers(p.Child("initContainers"), pod.InitContainers, visit)
	visitContainers(p.Child("containers"), pod.Containers, visit)
}

// visit walks every container-shaped field of a component.
func (cp *componentParts) visit(p *field.Path, visit containerVisit) {
	if cp == nil {
		return
	}
	visitPod(p, cp.pod, visit)
	visitRunner(p.Child("runner"), cp.runner, visit)
	if cp.leader != nil {
		visitPod(p.Child("leader"), &cp.leader.PodSpec, visit)
		visitRunner(p.Child("leader", "runner"), cp.leader.Runner, visit)
	}
	if cp.worker != nil {
		visitPod(p.Child("worker"), &cp.worker.PodSpec, visit)
		visitRunner(p.Child("worker", "runner"), cp.worker.Runner, visit)
	}
	for i := range cp.configs {
		visitRunner(p.Child("acceleratorConfigurations").Index(i).Child("runner"), cp.configs[i].Runner, visit)
	}
	for i := range cp.engineRuntimes {
		visitContainers(p.Child("engineRuntimes").Index(i).Child("containers"), cp.engineRuntimes[i].Containers, visit)
	}
}

// ServiceCommands lists the fields where the service sets a container
// command: its engine, decoder and router runners, leader and worker
// runners, containers and acceleratorConfigurations runners.
func ServiceCommands(svc *v1beta1.InferenceService) []*field.Path {
	var out []*field.Path
	visit := func(f *field.Path, _, _ string, command []string) {
		if len(command) > 0 {
			out = append(out, f.Child("command"))
		}
	}
	spec := field.NewPath("spec")
	engineParts(svc.Spec.Engine).visit(spec.Child("engine"), visit)
	decoderParts(svc.Spec.Decoder).visit(spec.Child("decoder"), visit)
	routerParts(svc.Spec.Router).visit(spec.Child("router"), visit)
	return out
}

// ServiceImages lists the images the service itself sets, with their fields.
func ServiceImages(svc *v1beta1.InferenceService) []Image {
	var out []Image
	visit := func(f *field.Path, _, image string, _ []string) {
		if image != "" {
			out = append(out, Image{Field: f.Child("image"), Ref: image})
		}
	}
	spec := field.NewPath("spec")
	engineParts(svc.Spec.Engine).visit(spec.Child("engine"), visit)
	decoderParts(svc.Spec.Decoder).visit(spec.Child("decoder"), visit)
	routerParts(svc.Spec.Router).visit(spec.Child("router"), visit)
	return out
}

// RuntimeImages lists the images a ServingRuntime or
// ClusterServingRuntime spec sets, with their fields: what CheckImages
// checks when a runtime is created or updated.
func RuntimeImages(rt *v1beta1.ServingRuntimeSpec) []Image {
	if rt == nil {
		return nil
	}
	var out []Image
	visit := func(f *field.Path, _, image string, _ []string) {
		if image != "" {
			out = append(out, Image{Field: f.Child("image"), Ref: image})
		}
	}
	spec := field.NewPath("spec")
	visitContainers(spec.Child("containers"), rt.Containers, visit)
	if rt.WorkerSpec != nil {
		visitContainers(spec.Child("workerSpec", "containers"), rt.WorkerSpec.Containers, visit)
	}
	engineParts(rt.EngineConfig).visit(spec.Child("engineConfig"), visit)
	decoderParts(rt.DecoderConfig).visit(spec.Child("decoderConfig"), visit)
	routerParts(rt.RouterConfig).visit(spec.Child("routerConfig"), visit)
	for i := range rt.AcceleratorConfigurations {
		visitRunner(spec.Child("acceleratorConfigurations").Index(i).Child("runner"), rt.AcceleratorConfigurations[i].Runner, visit)
	}
	return out
}

// imageSource is an image set by the service (runtime "") or its runtime.
type imageSource struct {
	Image
	runtime string // "" for the service, else "<Kind>/<name>"
}

func serviceImageSources(in *Service) []imageSource {
	var out []imageSource
	if in.Service != nil {
		for _, im := range ServiceImages(in.Service) {
			out = append(out, imageSource{Image: im})
		}
	}
	ref := runtimeKind(in.RuntimeKind) + "/" + in.RuntimeName
	for _, im := range RuntimeImages(in.RuntimeSpec) {
		out = append(out, imageSource{Image: im, runtime: ref})
	}
	return out
}

// locateImage names where a composed container's image comes from: the
// service's field that sets it ("spec.engine.runner.image", also returned
// as the field), else the runtime's ("ClusterServingRuntime/x
// spec.engineConfig.runner.image", no field: it is not the service's),
// else the composed pod's container ("engine leader pod, container
// engine").
func locateImage(sources []imageSource, r merge.ComposedRole, c *corev1.Container) (string, *field.Path) {
	for _, s := range sources {
		if s.Ref == c.Image && s.runtime == "" {
			return s.Field.String(), s.Field
		}
	}
	for _, s := range sources {
		if s.Ref == c.Image {
			return s.runtime + " " + s.Field.String(), nil
		}
	}
	pod := r.Topology.Component
	if r.Role != "" {
		pod += " " + r.Role
	}
	return pod + " pod, container " + c.Name, nil
}
