package handlers

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/admission"
)

// Runtimes validates ServingRuntimes and ClusterServingRuntimes against the
// cached runtimes of both scopes.
type Runtimes struct {
	Index    *selection.Index
	Profiles listers.ClusterEngineRuntimeProfileLister
	// Retry: waits before looking again for referenced classes and profiles
	// that are missing, for `kubectl apply -f dir/` that creates them a few
	// milliseconds earlier (see InferenceServices.Retry).
	Retry []time.Duration
}

// ValidateNamespaced admits a ServingRuntime.
func (h *Runtimes) ValidateNamespaced(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if skip(req) {
		return admission.Allowed()
	}
	var sr v1beta1.ServingRuntime
	if deny := decodeObject(req, &sr); deny != nil {
		return deny
	}
	ns := sr.Namespace
	if ns == "" {
		ns = req.Namespace
	}
	return h.validate(req, "ServingRuntime", ns, sr.Name, &sr.Spec)
}

// ValidateCluster admits a ClusterServingRuntime.
func (h *Runtimes) ValidateCluster(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if skip(req) {
		return admission.Allowed()
	}
	var csr v1beta1.ClusterServingRuntime
	if deny := decodeObject(req, &csr); deny != nil {
		return deny
	}
	return h.validate(req, "ClusterServingRuntime", "", csr.Name, &csr.Spec)
}

func (h *Runtimes) validate(req *admissionv1.AdmissionRequest, kind, namespace, name string, spec *v1beta1.ServingRuntimeSpec) *admissionv1.AdmissionResponse {
	errs, warnings := selection.ValidateRuntimeSpec("spec", spec)
	errs = append(errs, merge.ValidateRuntimeTemplates(spec)...)
	// A disabled runtime is never selected, so it cannot conflict.
	if spec.Disabled == nil || !*spec.Disabled {
		errs = append(errs, h.Index.PriorityConflicts(kind, namespace, name, spec)...)
	}
	missing := h.missingReferences(spec)
	for _, wait := range h.Retry {
		if len(missing) == 0 || req.Operation != admissionv1.Create {
			break
		}
		time.Sleep(wait)
		missing = h.missingReferences(spec)
	}
	if req.Operation == admissionv1.Create {
		errs = append(errs, missing...)
	} else {
		// On UPDATE a missing reference only warns: the class or profile may
		// be deleted and recreated while the runtime keeps serving.
		warnings = append(warnings, missing...)
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return admission.Denied(http.StatusUnprocessableEntity,
			fmt.Sprintf("%s %s is invalid:\n- %s", kind, qualified(namespace, name), strings.Join(dedupe(errs), "\n- ")))
	}
	sort.Strings(warnings)
	return admission.Allowed(dedupe(warnings)...)
}

// missingReferences lists AcceleratorClasses and profiles the runtime names
// that do not exist.
func (h *Runtimes) missingReferences(spec *v1beta1.ServingRuntimeSpec) []string {
	var out []string
	classes := map[string][]string{}
	if r := spec.AcceleratorRequirements; r != nil {
		for i, c := range r.SupportedClasses {
			classes[c] = append(classes[c], fmt.Sprintf("spec.acceleratorRequirements.supportedClasses[%d]", i))
		}
		for i, p := range r.PreferenceOrder {
			classes[p.Class] = append(classes[p.Class], fmt.Sprintf("spec.acceleratorRequirements.preferenceOrder[%d].class", i))
		}
	}
	addConfigs := func(path string, cfgs []v1beta1.AcceleratorConfiguration) {
		for i, c := range cfgs {
			n := c.Selector.AcceleratorClass
			classes[n] = append(classes[n], fmt.Sprintf("%s[%d].selector.acceleratorClass", path, i))
		}
	}
	addConfigs("spec.acceleratorConfigurations", spec.AcceleratorConfigurations)
	profiles := map[string][]string{}
	addProfiles := func(path string, refs []v1beta1.EngineRuntimeRef) {
		for i, r := range refs {
			profiles[r.ProfileName] = append(profiles[r.ProfileName], fmt.Sprintf("%s[%d].profileName", path, i))
		}
	}
	if e := spec.EngineConfig; e != nil {
		addConfigs("spec.engineConfig.acceleratorConfigurations", e.AcceleratorConfigurations)
		addProfiles("spec.engineConfig.engineRuntimes", e.EngineRuntimes)
	}
	if d := spec.DecoderConfig; d != nil {
		addConfigs("spec.decoderConfig.acceleratorConfigurations", d.AcceleratorConfigurations)
		addProfiles("spec.decoderConfig.engineRuntimes", d.EngineRuntimes)
	}
	if r := spec.RouterConfig; r != nil {
		addProfiles("spec.routerConfig.engineRuntimes", r.EngineRuntimes)
	}
	for name, paths := range classes {
		if name == "" {
			continue
		}
		if _, ok := h.Index.AcceleratorClass(name); !ok {
			out = append(out, fmt.Sprintf("%s: AcceleratorClass %q does not exist; create it first or fix the name", strings.Join(paths, ", "), name))
		}
	}
	for name, paths := range profiles {
		if h.Profiles == nil {
			break
		}
		if _, err := h.Profiles.Get(name); apierrors.IsNotFound(err) {
			out = append(out, fmt.Sprintf("%s: ClusterEngineRuntimeProfile %q does not exist; create it first or fix the name", strings.Join(paths, ", "), name))
		}
	}
	return out
}

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
