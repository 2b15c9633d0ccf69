package servinggroups

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
)

// decision is the pinned decision of a service (pin.Read), with what it
// names read back from the cache: exactly the inputs the pod webhook
// composes pods from (pin.InputFor), so that the revision computed here
// equals the one the webhook stamps.
type decision struct {
	pin     pin.Pin
	runtime *v1beta1.ServingRuntimeSpec
	class   *v1beta1.AcceleratorClass // the engine's (and the router's input, unused there)
	// decoderClass is the decoder's own pinned class
	// (pin.Pin.DecoderAcceleratorClass); nil: the engine's.
	decoderClass *v1beta1.AcceleratorClass
	profiles     map[string]*v1beta1.ClusterEngineRuntimeProfile
	// model is the service's model as the pod webhook mounts it (its spec
	// and status.discovered, pin.Model); nil when the service names none
	// (KServe's inline predictor.model).
	model *pin.Model
	// disabled is set when the pinned runtime was disabled after the pin:
	// the webhook still completes pods from it, so groups are managed, but
	// the service is Degraded until someone decides.
	disabled string
	// router is the router's ServiceAccount, or the conflict that keeps
	// it from one (routerrbac.go); set by sync, not by resolve.
	router routerAccess
}

// unresolved says why a service's pin cannot be read back. It is reported
// on the service (Resolved=False, Degraded=True); running pods are kept.
type unresolved struct{ reason, message string }

func (u *unresolved) Error() string { return u.message }

// Reasons of the Resolved condition.
const (
	ReasonResolved         = "Resolved"
	ReasonNotPinned        = "NotPinned"
	ReasonRuntimeMissing   = "PinnedRuntimeMissing"
	ReasonRuntimeDisabled  = "PinnedRuntimeDisabled"
	ReasonClassMissing     = "PinnedClassMissing"
	ReasonModelMissing     = "ModelMissing"
	ReasonPinMalformed     = "PinMalformed"
	ReasonCacheUnavailable = "CacheUnavailable"
	ReasonCannotCompose    = "CannotCompose"
)

// resolve reads the pinned runtime, class and profiles. It never re-selects:
// the decision is the webhook's.
func (c *Controller) resolve(isvc *v1beta1.InferenceService) (*decision, *unresolved) {
	name := isvc.Namespace + "/" + isvc.Name
	if !pin.Pinned(isvc) {
		return nil, &unresolved{ReasonNotPinned, fmt.Sprintf(
			"InferenceService %s has no %s annotation: it was stored without berth's webhook, or the webhook could not resolve it; re-apply it with the webhook running", name, pin.RuntimeAnnotation)}
	}
	p, err := pin.Read(isvc)
	if err != nil {
		return nil, &unresolved{ReasonPinMalformed, fmt.Sprintf("InferenceService %s: %v; remove it so berth resolves the runtime again", name, err)}
	}
	d := &decision{pin: p}
	if u := d.readRuntime(c, isvc); u != nil {
		return nil, u
	}
	if cls := p.AcceleratorClass; cls != "" {
		ac, err := c.classes.Get(cls)
		if err != nil {
			return nil, missing(err, ReasonClassMissing, "pinned AcceleratorClass "+cls, name)
		}
		d.class = ac
	}
	if cls := p.DecoderAcceleratorClass; cls != "" {
		ac, err := c.classes.Get(cls)
		if err != nil {
			return nil, missing(err, ReasonClassMissing, "pinned decoder AcceleratorClass "+cls, name)
		}
		d.decoderClass = ac
	}
	if u := d.readModel(c, isvc); u != nil {
		return nil, u
	}
	profiles, err := c.profiles.List(labels.Everything())
	if err != nil {
		return nil, &unresolved{ReasonCacheUnavailable, "listing ClusterEngineRuntimeProfiles: " + err.Error()}
	}
	d.profiles = make(map[string]*v1beta1.ClusterEngineRuntimeProfile, len(profiles))
	for _, p := range profiles {
		d.profiles[p.Name] = p
	}
	return d, nil
}

// readRuntime reads the pinned runtime into d.runtime, and says when it
// was disabled since.
func (d *decision) readRuntime(c *Controller, isvc *v1beta1.InferenceService) *unresolved {
	name, rtName := isvc.Namespace+"/"+isvc.Name, d.pin.RuntimeName
	var disabled *bool
	if d.pin.RuntimeKind == pin.KindServingRuntime {
		rt, err := c.runtimes.ServingRuntimes(isvc.Namespace).Get(rtName)
		if err != nil {
			return missing(err, ReasonRuntimeMissing, fmt.Sprintf("pinned runtime ServingRuntime %s/%s", isvc.Namespace, rtName), name)
		}
		d.runtime, disabled = &rt.Spec, rt.Spec.Disabled
	} else { // pin.Read admits no other kind
		rt, err := c.clusterRuntimes.Get(rtName)
		if err != nil {
			return missing(err, ReasonRuntimeMissing, "pinned runtime ClusterServingRuntime/"+rtName, name)
		}
		d.runtime, disabled = &rt.Spec, rt.Spec.Disabled
	}
	if disabled != nil && *disabled {
		d.disabled = fmt.Sprintf("pinned runtime %s is disabled; berth keeps serving from it and never moves the service silently. Enable it again, or remove annotation %s to re-resolve", d.pin.Runtime(), pin.RuntimeAnnotation)
	}
	return nil
}

func missing(err error, reason, what, svc string) *unresolved {
	if apierrors.IsNotFound(err) {
		return &unresolved{reason, fmt.Sprintf("InferenceService %s: %s no longer exists; running groups are kept, but new pods cannot be admitted. Recreate it, or remove the pin annotations so berth resolves the service again", svc, what)}
	}
	return &unresolved{ReasonCacheUnavailable, fmt.Sprintf("InferenceService %s: reading %s: %v", svc, what, err)}
}

// readModel reads the service's model as the webhook does (serviceModel)
// into d.model. A model the service names that no longer exists is
// reported like a missing runtime: running groups are kept.
func (d *decision) readModel(c *Controller, isvc *v1beta1.InferenceService) *unresolved {
	m, err := c.serviceModel(isvc)
	if err != nil {
		return &unresolved{ReasonCacheUnavailable, fmt.Sprintf("InferenceService %s/%s: reading its model: %v", isvc.Namespace, isvc.Name, err)}
	}
	if m == nil {
		if ref := isvc.Spec.Model; ref != nil && ref.Name != "" {
			return &unresolved{ReasonModelMissing, fmt.Sprintf("InferenceService %s/%s: its model %q (spec.model.name) no longer exists as a BaseModel in namespace %s or a ClusterBaseModel; running groups are kept, but new pods cannot be admitted. Recreate it",
				isvc.Namespace, isvc.Name, ref.Name, isvc.Namespace)}
		}
		return nil
	}
	d.model = pin.ModelOf(m.kind, m.namespace, m.name, m.spec, m.status)
	return nil
}

// input is the merge input of one component, as the pod webhook builds
// it (pin.InputFor): the component's view of the service and its class.
func (d *decision) input(isvc *v1beta1.InferenceService, component string) merge.Input {
	return pin.InputFor(isvc, component, d.pin, pin.Objects{
		Runtime: d.runtime, Class: d.classFor(component), Profiles: d.profiles, Model: d.model})
}

// classFor is the class object of the class the pin names for component
// (pin.Pin.ClassFor): the decoder's own, else the engine's.
func (d *decision) classFor(component string) *v1beta1.AcceleratorClass {
	if d.pin.ClassFor(component) == d.pin.AcceleratorClass {
		return d.class
	}
	return d.decoderClass
}
