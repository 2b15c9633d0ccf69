package merge

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// Input is the decision a pod is composed from.
type Input struct {
	Service          *v1beta1.InferenceService // after predictor migration and defaults
	Component        string                    // v1beta1.ComponentEngine | ComponentDecoder | ComponentRouter
	RuntimeKind      string                    // "ServingRuntime" | "ClusterServingRuntime"
	RuntimeName      string
	Runtime          *v1beta1.ServingRuntimeSpec
	AcceleratorClass *v1beta1.AcceleratorClass                       // nil when none was chosen
	Profiles         map[string]*v1beta1.ClusterEngineRuntimeProfile // by name; a referenced but missing profile is an error naming it
	Group            GroupIdentity
	// Model is the model the service serves (NewModelMount); nil when it
	// names none. Engine and decoder pods mount it, the router never.
	Model *ModelMount
}

// ComposePod completes pod in place from the decision. The incoming pod is
// the lowest layer; the class, the runtime, matching accelerator
// configurations and the InferenceService go on top, in that order (see
// the package documentation). On error the pod is left unchanged.
func ComposePod(in Input, pod *corev1.Pod) error {
	_, err := composePod(in, pod)
	return err
}

// composePod is ComposePod, also returning the plan's warnings.
func composePod(in Input, pod *corev1.Pod) ([]string, error) {
	if pod == nil {
		return nil, errNoPod
	}
	p, err := buildPlan(in, in.Group.Role)
	if err != nil {
		return nil, err
	}
	out := pod.DeepCopy()
	p.apply(out, in.Group)
	*pod = *out
	return p.Warnings, nil
}

// apply lays the plan over pod.
func (p *plan) apply(pod *corev1.Pod, g GroupIdentity) {
	spec := &pod.Spec

	// The main container: the one named like the runner, else the first.
	runnerName := ""
	for _, l := range p.Layers {
		if l.Runner != nil && l.Runner.Name != "" {
			runnerName = l.Runner.Name
		}
	}
	wanted := runnerName
	if wanted == "" {
		wanted = DefaultRunnerName
	}
	main := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == wanted })
	if main < 0 && len(spec.Containers) > 0 {
		main = 0
		if runnerName != "" && !slices.ContainsFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == runnerName }) {
			// A runner named explicitly names the main container.
			spec.Containers[0].Name = runnerName
		}
	}
	if main < 0 {
		spec.Containers = append(spec.Containers, corev1.Container{Name: wanted})
		main = 0
	}
	mainName := spec.Containers[main].Name

	res := resourceLayers{weak: *spec.Containers[main].Resources.DeepCopy()}
	for _, l := range p.Layers {
		if l.Pod != nil {
			mergePodLevel(spec, l.Pod)
			for i := range l.Pod.Containers {
				c := &l.Pod.Containers[i]
				if c.Name == mainName {
					p.mergeMain(spec, main, c, l.Kind, &res)
					continue
				}
				spec.Containers = mergeContainersByName(spec.Containers, []corev1.Container{*c})
			}
		}
		if l.Runner != nil {
			c := corev1.Container(*l.Runner)
			p.mergeMain(spec, main, &c, l.Kind, &res)
		}
		pod.Labels = mergeMetadata(pod.Labels, l.Labels, identityLabels)
		pod.Annotations = mergeMetadata(pod.Annotations, l.Annotations, nil)
	}
	spec.Containers[main].Resources = MergeResources(res.weak, res.accelerator, res.user, p.GPU)

	applyProfiles(spec, p.Profiles)
	if p.Model != nil {
		p.Model.apply(spec, main)
	}
	applyGroupEnv(spec, g, p.PDRole)

	// Every other container: translate GPU names to the class's vendor and
	// keep requests within limits.
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if &cs[i] == &spec.Containers[main] {
				continue
			}
			r := &cs[i].Resources
			r.Requests = TranslateAcceleratorResources(r.Requests, p.GPU)
			r.Limits = TranslateAcceleratorResources(r.Limits, p.GPU)
			reconcileRequestsAndLimits(r, func(string, corev1.ResourceName) bool { return false })
		}
	}
}

// mergeMain lays c over the main container, keeping the main container's
// name and routing resources to the layer's bucket.
func (p *plan) mergeMain(spec *corev1.PodSpec, main int, c *corev1.Container, kind layerKind, res *resourceLayers) {
	dst := &spec.Containers[main]
	mergeContainer(dst, c, false)
	switch kind {
	case kindAccelerator:
		res.accelerator.Requests = maxResources(res.accelerator.Requests, c.Resources.Requests)
		res.accelerator.Limits = maxResources(res.accelerator.Limits, c.Resources.Limits)
		res.accelerator.Claims = mergeClaims(res.accelerator.Claims, c.Resources.Claims)
	case kindUser:
		res.user.Requests = overlayResources(res.user.Requests, c.Resources.Requests)
		res.user.Limits = overlayResources(res.user.Limits, c.Resources.Limits)
		res.user.Claims = mergeClaims(res.user.Claims, c.Resources.Claims)
	default:
		res.weak.Requests = overlayResources(res.weak.Requests, c.Resources.Requests)
		res.weak.Limits = overlayResources(res.weak.Limits, c.Resources.Limits)
		res.weak.Claims = mergeClaims(res.weak.Claims, c.Resources.Claims)
	}
}
