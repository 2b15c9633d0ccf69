package policy

import (
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// The images a gate judges. A runtime is forbidden by an image it would
// put in the service's pods; a class by an image an acceleratorConfigurations
// entry for it would put there. Images the service sets itself are left to
// CheckService, which names the service's field: they are the service's
// doing, whatever runtime or class is chosen.

// gateImages is what a gate remembers of the images it read: selection
// asks about every candidate runtime, then every class with the chosen one.
type gateImages struct {
	svcRefs  map[string]bool // images the service sets; nil until read
	byRT     map[*v1beta1.ServingRuntimeSpec][]imageRef
	lastRT   *v1beta1.ServingRuntimeSpec // the runtime classConfigured was read for
	rtConfig []string                    // classes with an image-setting configuration under lastRT
}

// runtimeImages are the images of the service's pods composed with the
// runtime and no class (merge.ComposeService), those the service sets
// left out; read once per runtime.
func (g *gate) runtimeImages(kind, name string, spec *v1beta1.ServingRuntimeSpec) []imageRef {
	if im, ok := g.imgs.byRT[spec]; ok {
		return im
	}
	refs := g.composedImages(kind, name, spec, nil)
	if refs == nil && spec != nil { // nothing composed: what the runtime sets
		for _, im := range RuntimeImages(spec) {
			refs = g.addImage(refs, im.Ref)
		}
	}
	if g.imgs.byRT == nil {
		g.imgs.byRT = map[*v1beta1.ServingRuntimeSpec][]imageRef{}
	}
	g.imgs.byRT[spec] = refs
	return refs
}

// classImages: the first policy (by name) whose images rule forbids an
// image that an acceleratorConfigurations entry for cl (the runtime's or
// the service's) puts in the pods composed with cl. Classes without such
// an entry are not composed.
func (g *gate) classImages(cl *v1beta1.AcceleratorClass, rt *v1beta1.ServingRuntimeSpec) (string, string) {
	if !g.configuresImage(cl.Name, rt) {
		return "", ""
	}
	images := g.composedImages("", "", rt, cl)
	for _, c := range g.pols {
		if c.images == nil {
			continue
		}
		for i := range images {
			if why := c.images.checkRef(&images[i]); why != "" {
				return c.ref, why
			}
		}
	}
	return "", ""
}

// configuresImage: an acceleratorConfigurations entry of the runtime or
// the service selects class and sets a runner image.
func (g *gate) configuresImage(class string, rt *v1beta1.ServingRuntimeSpec) bool {
	if g.imgs.lastRT != rt || g.imgs.rtConfig == nil {
		g.imgs.lastRT, g.imgs.rtConfig = rt, []string{}
		var lists [][]v1beta1.AcceleratorConfiguration
		if rt != nil {
			lists = append(lists, rt.AcceleratorConfigurations)
			if rt.EngineConfig != nil {
				lists = append(lists, rt.EngineConfig.AcceleratorConfigurations)
			}
			if rt.DecoderConfig != nil {
				lists = append(lists, rt.DecoderConfig.AcceleratorConfigurations)
			}
		}
		if g.svc != nil {
			if e := g.svc.Spec.Engine; e != nil {
				lists = append(lists, e.AcceleratorConfigurations)
			}
			if d := g.svc.Spec.Decoder; d != nil {
				lists = append(lists, d.AcceleratorConfigurations)
			}
		}
		for _, l := range lists {
			for i := range l {
				if l[i].Runner != nil && l[i].Runner.Image != "" {
					g.imgs.rtConfig = append(g.imgs.rtConfig, l[i].Selector.AcceleratorClass)
				}
			}
		}
	}
	for _, c := range g.imgs.rtConfig {
		if c == class {
			return true
		}
	}
	return false
}

// composedImages reads the images of every container and init container
// of the service's pods composed with rt and cl, without those the
// service sets; nil when nothing composes (no service, or every component
// failed: CheckService reports why after the decision).
func (g *gate) composedImages(kind, name string, rt *v1beta1.ServingRuntimeSpec, cl *v1beta1.AcceleratorClass) []imageRef {
	if g.svc == nil || rt == nil {
		return nil
	}
	in := merge.ServiceInput{Service: g.svc, RuntimeKind: kind, RuntimeName: name, Runtime: rt}
	if cl != nil {
		in.ClassFor = func(string) *v1beta1.AcceleratorClass { return cl }
	}
	roles, _ := merge.ComposeService(in)
	var refs []imageRef
	for _, r := range roles {
		if r.Pod == nil {
			continue
		}
		for _, list := range [][]corev1.Container{r.Pod.Spec.InitContainers, r.Pod.Spec.Containers} {
			for i := range list {
				refs = g.addImage(refs, list[i].Image)
			}
		}
	}
	return refs
}

// addImage appends ref's reading unless it is empty, already there, or
// set by the service itself.
func (g *gate) addImage(refs []imageRef, ref string) []imageRef {
	if ref == "" {
		return refs
	}
	if g.imgs.svcRefs == nil {
		g.imgs.svcRefs = map[string]bool{}
		if g.svc != nil {
			for _, im := range ServiceImages(g.svc) {
				g.imgs.svcRefs[im.Ref] = true
			}
		}
	}
	if g.imgs.svcRefs[ref] {
		return refs
	}
	for i := range refs {
		if refs[i].ref == ref {
			return refs
		}
	}
	return append(refs, readImage(ref))
}
