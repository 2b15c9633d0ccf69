package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/objects"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/admission"
	"github.com/berthdev/berth/webhook/handlers"
)

const lintHelp = `
Usage:
  berth lint DIR_OR_FILE... [--against-cluster [--kubeconfig FILE]]

Lint checks berth's objects in files and directories (recursive,
multi-document YAML, kustomization.yaml skipped) before they reach a
cluster, for platform teams' CI:

  - every document of berth's kinds decodes strictly into its Go type
    (an unknown or duplicated field is an error, with its line);
  - it passes its CRD's schema and CEL rules (deploy/crds) and the
    webhook's own validation: the very handler that admits the kind, so
    runtime checks (versions, sizes, templates, missing classes and
    profiles), class, profile, model and ServingPolicy checks, and for an
    InferenceService the whole admission (decision, composed pods,
    policies);
  - no two runtimes tie in priority for a model (both files are named),
    also against the runtimes in the cluster with --against-cluster;
  - every runtime's templates render for a sample service.

Each problem is printed as FILE:LINE: KIND/NAME: message. The exit code is
1 when there is any problem, 0 otherwise.

Examples:
  # In CI, before kubectl apply -k deploy/
  berth lint deploy/

  # My new runtimes, also against what the cluster already runs
  berth lint my-runtimes/ --against-cluster
`

func lintCommand() Command {
	return Command{
		Name:    "lint",
		Summary: "check runtimes, classes, profiles, models and services in files as the webhook would (file:line messages; exit 1 on any problem)",
		Run:     runLint,
	}
}

func runLint(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("berth lint", flag.ContinueOnError)
	against := fs.Bool("against-cluster", false, "also check priority conflicts with the runtimes in the cluster of your kubeconfig (read-only)")
	var src sourceFlags
	fs.StringVar(&src.kubeconfig, "kubeconfig", "", "kubeconfig for --against-cluster (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&src.namespace, "n", "", "namespace of namespaced objects that name none (default \"default\")")
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, stderr, lintHelp)
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("name the files or directories to lint; -h shows examples")
	}
	set, err := objects.LoadPaths(paths...)
	if err != nil {
		return err
	}
	set.DefaultNamespace(src.ns())
	var cluster *objects.Set
	if *against {
		c, err := src.clients()
		if err != nil {
			return err
		}
		if cluster, err = listCluster(ctx, c); err != nil {
			return err
		}
	}
	problems, err := Lint(ctx, set, cluster)
	if err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintln(stdout, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "berth lint: %d problem(s) in %d object(s) read\n", len(problems), len(set.Docs))
		return ErrFailed
	}
	fmt.Fprintf(stderr, "berth lint: %d object(s) read, no problem\n", len(set.Docs))
	return nil
}

// Lint returns every problem of the set's objects, sorted by file and
// line. cluster, when not nil, holds the cluster's objects: the set's
// runtimes are checked for priority ties against its runtimes too.
func Lint(ctx context.Context, set *objects.Set, cluster *objects.Set) ([]objects.Problem, error) {
	out := append([]objects.Problem{}, set.Problems...)
	world := set
	if cluster != nil {
		world = objects.Merge(clusterRuntimesNotIn(cluster, set), set)
	}
	w := newWorld(world, handlers.DefaultModelDownloaderImage)
	rt := &handlers.Runtimes{Index: w.index, Profiles: world.ProfileLister(), Policies: w.isvcs.Policies}
	for _, d := range set.Docs {
		ps, err := lintDoc(ctx, w, rt, d)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// clusterRuntimesNotIn are the cluster's runtimes the set does not
// redefine (the set's version is the one that would be applied).
func clusterRuntimesNotIn(cluster, set *objects.Set) *objects.Set {
	out := &objects.Set{}
	for _, o := range cluster.ClusterServingRuntimes {
		if set.Find("ClusterServingRuntime", "", o.Name) == nil {
			out.ClusterServingRuntimes = append(out.ClusterServingRuntimes, o)
		}
	}
	for _, o := range cluster.ServingRuntimes {
		if set.Find("ServingRuntime", o.Namespace, o.Name) == nil {
			out.ServingRuntimes = append(out.ServingRuntimes, o)
		}
	}
	out.AcceleratorClasses = cluster.AcceleratorClasses
	out.Profiles = cluster.Profiles
	return out
}

// lintDoc checks one document: its CRD schema, then the webhook's handler
// for its kind, then (runtimes) a sample render. Each problem is at the
// line of the field it names.
func lintDoc(ctx context.Context, w *world, rt *handlers.Runtimes, d *objects.Doc) ([]objects.Problem, error) {
	var out []objects.Problem
	add := func(path, msg string) {
		out = append(out, objects.Problem{Source: objects.Source{File: d.File, Line: d.LineOf(path)}, Message: d.Ref() + ": " + msg})
	}
	if d.Obj == nil {
		return nil, nil
	}
	group, _, _ := strings.Cut(d.APIVersion, "/")
	errs, _, err := schemaErrors(group+"/"+d.Kind, d.YAML)
	if err != nil {
		return nil, err
	}
	for _, e := range errs {
		add(e.Field, "schema: "+e.Error())
	}
	causes, err := webhookErrors(ctx, w, rt, d)
	if err != nil {
		return nil, err
	}
	for _, c := range causes {
		add(c.field, c.message+w.definedAt(c.message, d))
	}
	for _, m := range renderErrors(w, d) {
		add("spec", m)
	}
	return out, nil
}

// cause is one reason of a denial and the field it is about ("" when
// none).
type cause struct{ field, message string }

// webhookErrors runs the webhook's validating handler of d's kind on d as
// a CREATE and returns the denial's causes (or its message).
func webhookErrors(ctx context.Context, w *world, rt *handlers.Runtimes, d *objects.Doc) ([]cause, error) {
	var h admission.Func
	switch d.Obj.(type) {
	case *v1beta1.ServingRuntime:
		h = rt.ValidateNamespaced
	case *v1beta1.ClusterServingRuntime:
		h = rt.ValidateCluster
	case *v1beta1.AcceleratorClass:
		h = handlers.ValidateAcceleratorClass
	case *v1beta1.ClusterEngineRuntimeProfile:
		h = handlers.ValidateProfile
	case *v1beta1.BaseModel:
		h = handlers.ValidateBaseModel
	case *v1beta1.ClusterBaseModel:
		h = handlers.ValidateClusterBaseModel
	case *policyv1alpha1.ServingPolicy:
		h = handlers.ValidateServingPolicy
	case *v1beta1.InferenceService:
		adm, err := w.isvcs.Admit(ctx, d.Obj.(*v1beta1.InferenceService), nil)
		if err != nil || adm.Denial == "" {
			return nil, err
		}
		return []cause{{"", adm.Denial}}, nil
	default:
		return nil, nil
	}
	gv, _ := schema.ParseGroupVersion(d.APIVersion)
	resource := strings.ToLower(d.Kind) + "s"
	if strings.HasSuffix(resource, "ys") {
		resource = strings.TrimSuffix(resource, "ys") + "ies" // servingpolicies
	}
	gvr := gv.WithResource(resource)
	req, err := handlers.AdmissionRequestFor(gv.WithKind(d.Kind), gvr, d.Namespace, d.Name, d.Obj, nil)
	if err != nil {
		return nil, err
	}
	resp := h(ctx, req)
	if resp.Allowed {
		return nil, nil
	}
	if resp.Result == nil {
		return []cause{{"", "denied"}}, nil
	}
	if det := resp.Result.Details; det != nil && len(det.Causes) > 0 {
		out := make([]cause, len(det.Causes))
		for i, c := range det.Causes {
			out[i] = cause{c.Field, c.Message}
			if c.Field != "" && !strings.HasPrefix(c.Message, c.Field) {
				out[i].message = c.Field + ": " + c.Message
			}
		}
		return out, nil
	}
	return []cause{{"", resp.Result.Message}}, nil
}

// definedAt names the files of the other runtimes a message mentions
// (a priority tie names the runtime it ties with).
func (w *world) definedAt(msg string, self *objects.Doc) string {
	var at []string
	for _, o := range w.set.Docs {
		if o == self || (o.Kind != "ClusterServingRuntime" && o.Kind != "ServingRuntime") || o.File == "" {
			continue
		}
		if strings.Contains(msg, o.Kind+"/"+o.Name+" ") || strings.Contains(msg, o.Kind+"/"+o.Name+"'") || strings.Contains(msg, o.Kind+"/"+o.Name+")") {
			at = append(at, o.Kind+"/"+o.Name+" is at "+o.Source.String())
		}
	}
	if len(at) == 0 {
		return ""
	}
	return " (" + strings.Join(at, "; ") + ")"
}

// renderErrors composes a sample service on a runtime: one pod of each
// role of each component, with the first class the runtime configures
// that the set has, as the pod webhook composes pods (merge).
func renderErrors(w *world, d *objects.Doc) []string {
	var spec *v1beta1.ServingRuntimeSpec
	kind := selection.KindClusterServingRuntime
	switch o := d.Obj.(type) {
	case *v1beta1.ServingRuntime:
		spec, kind = &o.Spec, selection.KindServingRuntime
	case *v1beta1.ClusterServingRuntime:
		spec = &o.Spec
	default:
		return nil
	}
	ns := d.Namespace
	if ns == "" {
		ns = "default"
	}
	sample := &v1beta1.InferenceService{}
	sample.Name, sample.Namespace = "lint-sample", ns
	sample.Spec.Model = &v1beta1.ModelRef{Name: "lint-sample-model"}
	sample.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: d.Name, Kind: &kind}
	one := int32(1)
	sample.Spec.Engine = &v1beta1.EngineSpec{}
	sample.Spec.Engine.MinReplicas, sample.Spec.Engine.Replicas = &one, &one
	class := sampleClass(w, spec)
	_, errs := merge.ComposeService(merge.ServiceInput{
		Service: sample, RuntimeKind: kind, RuntimeName: d.Name, Runtime: spec,
		ClassFor: func(string) *v1beta1.AcceleratorClass { return class },
		Profiles: profiles(w.set),
	})
	var out []string
	for _, e := range errs {
		out = append(out, "does not render for a sample service: "+e.Error())
	}
	return out
}

// sampleClass is the first class the runtime names that exists, else nil.
func sampleClass(w *world, spec *v1beta1.ServingRuntimeSpec) *v1beta1.AcceleratorClass {
	var names []string
	for _, c := range spec.AcceleratorConfigurations {
		names = append(names, c.Selector.AcceleratorClass)
	}
	if r := spec.AcceleratorRequirements; r != nil {
		names = append(names, r.SupportedClasses...)
	}
	for _, n := range names {
		if c, ok := w.index.AcceleratorClass(n); ok {
			return c
		}
	}
	return nil
}

func profiles(s *objects.Set) map[string]*v1beta1.ClusterEngineRuntimeProfile {
	out := map[string]*v1beta1.ClusterEngineRuntimeProfile{}
	for _, p := range s.Profiles {
		out[p.Name] = p
	}
	return out
}
