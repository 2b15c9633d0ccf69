package handlers

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// runtimePodWarnings composes the pods of a service that names only this
// runtime (no class, no settings of its own: merge.ComposeService on
// defaults) and warns about what the API server would refuse in them
// (merge.CheckPod), such as OEP-0003's Story 2 runtime, which has no
// image (a missing image is not warned about when every top-level
// acceleratorConfigurations entry sets one). Only a warning: a service, or the acceleratorConfigurations entry
// of its class, may supply what the runtime lacks; a service whose pods
// still lack it is denied at its own admission (InferenceServices.compose).
// Roles that cannot be composed without a real service (a template key)
// are skipped.
func runtimePodWarnings(o runtimeObject, spec *v1beta1.ServingRuntimeSpec) []string {
	ns := o.namespace
	if ns == "" {
		ns = "default"
	}
	probe := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}}
	applyDefaults(probe)
	roles, _ := merge.ComposeService(merge.ServiceInput{Service: probe, RuntimeKind: o.kind, RuntimeName: o.name, Runtime: spec})
	classImages := everyConfigurationHasImage(spec)
	var out []string
	for _, r := range roles {
		c := r.Topology.Component
		for _, e := range merge.CheckPod(r.Pod) {
			image := e.Type == field.ErrorTypeRequired && strings.HasSuffix(e.Field, ".image")
			if image && classImages && c != v1beta1.ComponentRouter {
				continue // each class's configuration brings the image
			}
			msg := fmt.Sprintf("%s pods composed from this runtime would be refused by the API server: %s", c, e.Error())
			if image {
				msg += fmt.Sprintf("; set spec.%sConfig.runner.image (or an image in every acceleratorConfigurations entry), else every InferenceService of it must set spec.%s.runner.image or it is denied", c, c)
			} else {
				msg += "; an InferenceService of it is denied unless it overrides this"
			}
			out = append(out, msg)
		}
	}
	return out // validate sorts and dedupes the warnings
}

// everyConfigurationHasImage says whether the runtime has top-level
// acceleratorConfigurations and each sets the runner's image: then a pod
// composed on any class it configures has one.
func everyConfigurationHasImage(spec *v1beta1.ServingRuntimeSpec) bool {
	if len(spec.AcceleratorConfigurations) == 0 {
		return false
	}
	for _, c := range spec.AcceleratorConfigurations {
		if c.Runner == nil || c.Runner.Image == "" {
			return false
		}
	}
	return true
}
