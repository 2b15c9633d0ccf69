package policy

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
)

// decision is a service's pinned decision (pin.Read) with what it names
// read back from the caches: the inputs the pod webhook composes pods
// from (pin.Objects), and the labels of the pinned runtime object (a
// runtime rule's allowedSelector reads them).
type decision struct {
	pin                 pin.Pin
	runtime             *v1beta1.ServingRuntimeSpec
	runtimeLabels       map[string]string
	class, decoderClass *v1beta1.AcceleratorClass // decoderClass nil: the engine's
	profiles            map[string]*v1beta1.ClusterEngineRuntimeProfile
	model               *pin.Model // nil when the service names none
}

// resolve reads the pin back as the serving groups controller does; ok is
// false where that controller reports the service unresolved: not pinned,
// a malformed pin, a pinned runtime, class or named model that is gone, or
// a cache that cannot be read. A disabled pinned runtime still resolves
// (the service keeps serving from it).
func (o objects) resolve(isvc *v1beta1.InferenceService) (*decision, bool) {
	if !pin.Pinned(isvc) {
		return nil, false
	}
	p, err := pin.Read(isvc)
	if err != nil {
		return nil, false
	}
	d := &decision{pin: p}
	if p.RuntimeKind == pin.KindServingRuntime {
		rt, err := o.runtimes.ServingRuntimes(isvc.Namespace).Get(p.RuntimeName)
		if err != nil {
			return nil, false
		}
		d.runtime, d.runtimeLabels = &rt.Spec, rt.Labels
	} else { // pin.Read admits no other kind
		rt, err := o.clusterRuntimes.Get(p.RuntimeName)
		if err != nil {
			return nil, false
		}
		d.runtime, d.runtimeLabels = &rt.Spec, rt.Labels
	}
	var ok bool
	if d.class, ok = o.class(p.AcceleratorClass); !ok {
		return nil, false
	}
	if d.decoderClass, ok = o.class(p.DecoderAcceleratorClass); !ok {
		return nil, false
	}
	if d.model, ok = o.model(isvc); !ok {
		return nil, false
	}
	profiles, err := o.profiles.List(labels.Everything())
	if err != nil {
		return nil, false
	}
	d.profiles = make(map[string]*v1beta1.ClusterEngineRuntimeProfile, len(profiles))
	for _, pr := range profiles {
		d.profiles[pr.Name] = pr
	}
	return d, true
}

// class is the AcceleratorClass the pin names (nil, true: none).
func (o objects) class(name string) (*v1beta1.AcceleratorClass, bool) {
	if name == "" {
		return nil, true
	}
	ac, err := o.classes.Get(name)
	return ac, err == nil
}

// model is the service's model as the webhook finds it: spec.model's kind,
// or without one a BaseModel of the service's namespace, else a
// ClusterBaseModel. nil, true: the service names none; ok is false when it
// names one that cannot be read (gone, an unknown kind, a cache error).
func (o objects) model(isvc *v1beta1.InferenceService) (*pin.Model, bool) {
	ref := isvc.Spec.Model
	if ref == nil || ref.Name == "" {
		return nil, true
	}
	kind := ""
	if ref.Kind != nil {
		kind = *ref.Kind
	}
	if kind == merge.KindBaseModel || kind == "" {
		if m, err := o.baseModels.BaseModels(isvc.Namespace).Get(ref.Name); err == nil {
			return pin.ModelOf(merge.KindBaseModel, m.Namespace, m.Name, m.Spec, m.Status), true
		} else if kind != "" || !apierrors.IsNotFound(err) {
			return nil, false
		}
	}
	if kind == merge.KindClusterBaseModel || kind == "" {
		if m, err := o.clusterModels.Get(ref.Name); err == nil {
			return pin.ModelOf(merge.KindClusterBaseModel, "", m.Name, m.Spec, m.Status), true
		}
	}
	return nil, false
}

// classFor is the class object of the class the pin names for component
// (pin.Pin.ClassFor): the decoder's own, else the engine's.
func (d *decision) classFor(component string) *v1beta1.AcceleratorClass {
	if d.pin.ClassFor(component) == d.pin.AcceleratorClass {
		return d.class
	}
	return d.decoderClass
}
