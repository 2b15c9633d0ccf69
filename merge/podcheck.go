package merge

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CheckPod finds in a composed pod what the API server would refuse in its
// containers, so that admission of the InferenceService (or of a runtime)
// can say so before the reconciler's pod creates are refused: every
// container and init container has a name that is a DNS-1123 label, unique
// in the pod, and an image; each port number is 1-65535 (hostPort too, when
// set), a port name is an IANA service name unique in its container, a
// protocol is TCP, UDP or SCTP; every env name is one the API server
// accepts (any printable ASCII but '=', as Kubernetes 1.34 validates it).
// Paths are the pod's (spec.containers[0].image).
func CheckPod(pod *corev1.Pod) field.ErrorList {
	if pod == nil {
		return nil
	}
	spec := field.NewPath("spec")
	names := sets.New[string]()
	var errs field.ErrorList
	for _, group := range []struct {
		path string
		cs   []corev1.Container
	}{{"initContainers", pod.Spec.InitContainers}, {"containers", pod.Spec.Containers}} {
		for i := range group.cs {
			errs = append(errs, checkContainer(&group.cs[i], spec.Child(group.path).Index(i), names)...)
		}
	}
	return errs
}

func checkContainer(c *corev1.Container, p *field.Path, names sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	switch msgs := validation.IsDNS1123Label(c.Name); {
	case c.Name == "":
		errs = append(errs, field.Required(p.Child("name"), "every container needs a name"))
	case len(msgs) > 0:
		errs = append(errs, field.Invalid(p.Child("name"), c.Name, msgs[0]))
	case names.Has(c.Name):
		errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
	}
	names.Insert(c.Name)
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), fmt.Sprintf("container %q has no image", c.Name)))
	}
	errs = append(errs, checkPorts(c.Ports, p.Child("ports"))...)
	for i, e := range c.Env {
		if e.Name == "" {
			errs = append(errs, field.Required(p.Child("env").Index(i).Child("name"), "every environment variable needs a name"))
		} else if msgs := validation.IsRelaxedEnvVarName(e.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("env").Index(i).Child("name"), e.Name, msgs[0]))
		}
	}
	return errs
}

func checkPorts(ports []corev1.ContainerPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		pp := p.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msgs[0]))
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if msgs := validation.IsValidPortNum(int(port.ContainerPort)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msgs[0]))
		}
		if port.HostPort != 0 {
			if msgs := validation.IsValidPortNum(int(port.HostPort)); len(msgs) > 0 {
				errs = append(errs, field.Invalid(pp.Child("hostPort"), port.HostPort, msgs[0]))
			}
		}
		switch port.Protocol {
		case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol,
				[]string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
		}
	}
	return errs
}
