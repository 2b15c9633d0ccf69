// Package crddocs keeps berth's field documentation in its CRDs and drops
// the documentation of the Kubernetes types they inline.
//
// controller-gen copies every Go doc comment into the CRD schema as a
// description. berth's kinds inline several pod specs, containers,
// affinities and resource requirements from k8s.io/api; with their
// descriptions the InferenceService CRD would pass etcd's 1.5 MiB request
// limit. Prune walks a CRD's openAPIV3Schema alongside the Go type it was
// generated from (json tags, inline embedding, pointers, slices and maps)
// and removes the description of every schema node below a Go type that is
// not declared in berth's module. The node of the berth field that holds
// such a type keeps its description, so `kubectl explain` documents every
// berth field, and `kubectl explain isvc.spec.predictor.affinity` still
// names the field.
//
// The walk is strict: a schema property with no Go field is an error, so a
// schema and a type that drift apart fail `make generate` instead of
// silently keeping (or losing) descriptions. It never imports client-go;
// hack/crd-docs runs it over controller-gen's output.
package crddocs
