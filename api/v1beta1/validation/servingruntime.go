package validation

import (
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateServingRuntimeSpec checks the containers of a runtime (the
// KServe-shaped containers, every component's runner, leader, worker and
// pod containers, and acceleratorConfigurations) for what the schema
// cannot see:
//
//  1. an env name listed twice in one container or configuration: the
//     definitions collapse and only the last reaches the pod;
//  2. engineConfig or decoderConfig acceleratorOverride: the field chooses
//     one InferenceService's class and a runtime has no use for it, so it
//     is denied rather than silently ignored;
//  3. an OME or KServe alias (acceleratorRequirements.acceleratorClasses,
//     minMemory, ...; workerSpec) that disagrees with the berth field it
//     folds into (v1beta1.FoldRuntimeAliases; paths are under spec).
//
// Errors of 1 are in field order, then those of 2, then 3. The templates
// in the strings berth renders are merge's to check
// (merge.ValidateRuntimeTemplates), which renders them.
func ValidateServingRuntimeSpec(spec *v1beta1.ServingRuntimeSpec, path *field.Path) field.ErrorList {
	if spec == nil {
		return nil
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	var errs field.ErrorList
	walkContainers(tree, path, &errs)
	if c := spec.EngineConfig; c != nil && c.AcceleratorOverride != nil {
		errs = append(errs, overrideOnRuntime(path.Child("engineConfig"), v1beta1.ComponentEngine))
	}
	if c := spec.DecoderConfig; c != nil && c.AcceleratorOverride != nil {
		errs = append(errs, overrideOnRuntime(path.Child("decoderConfig"), v1beta1.ComponentDecoder))
	}
	return append(errs, v1beta1.FoldRuntimeAliases(spec.DeepCopy())...)
}

func overrideOnRuntime(config *field.Path, component string) *field.Error {
	return field.Forbidden(config.Child("acceleratorOverride"), "acceleratorOverride chooses one InferenceService's class (spec."+component+
		".acceleratorOverride) and is not read on a runtime; state what the runtime needs in spec.acceleratorRequirements, or per class in acceleratorConfigurations")
}

// walkContainers visits every object of the tree in field order and
// checks each env list it finds.
func walkContainers(node any, path *field.Path, errs *field.ErrorList) {
	switch v := node.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "env" {
				*errs = append(*errs, checkEnv(v[k], path.Child(k))...)
			} else {
				walkContainers(v[k], path.Child(k), errs)
			}
		}
	case []any:
		for i, item := range v {
			walkContainers(item, path.Index(i), errs)
		}
	}
}

// checkEnv checks one container's env list: names must be unique.
func checkEnv(node any, path *field.Path) field.ErrorList {
	list, _ := node.([]any)
	var errs field.ErrorList
	first := map[string]int{}
	for i, item := range list {
		e, _ := item.(map[string]any)
		name, _ := e["name"].(string)
		if j, dup := first[name]; dup {
			errs = append(errs, &field.Error{Type: field.ErrorTypeDuplicate, Field: path.Index(i).Child("name").String(), BadValue: name,
				Detail: "also " + path.Index(j).Child("name").String() + "; only the last definition would reach the pod, so remove one"})
		} else {
			first[name] = i
		}
	}
	return errs
}
