package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/fleet"
	"github.com/berthdev/berth/internal/objects"
	"github.com/berthdev/berth/policy"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/handlers"
)

// berthNamespace is exempt from ServingPolicies, as the webhook's default
// --namespace (webhook/app.DefaultNamespace) is.
const berthNamespace = "berth-system"

// sourceFlags say where a command reads objects: files (offline) or a
// cluster (online, a positional isvc/NAME).
type sourceFlags struct {
	files, from, nodes multi
	fleet              string
	namespace          string
	kubeconfig         string
	downloader         string
}

func (s *sourceFlags) register(fs *flag.FlagSet) {
	fs.Var(&s.files, "f", "InferenceService file(s) to decide for (offline); other objects in them are read too. Repeatable")
	fs.Var(&s.from, "from", "files or directories (recursive, multi-document YAML; kustomization.yaml skipped) holding runtimes, models, AcceleratorClasses, profiles and ServingPolicies. Repeatable")
	fs.Var(&s.nodes, "nodes", "YAML file(s) of Nodes (a List, or documents) and bound Pods, for AcceleratorClass availability (offline)")
	fs.StringVar(&s.fleet, "fleet", "", "a fleet file (internal/fleet format) whose nodes give availability, or \"default\" for berth's local fake fleet (offline)")
	fs.StringVar(&s.namespace, "n", "", "namespace of the InferenceService (online), and of namespaced objects in files that name none (default \"default\")")
	fs.StringVar(&s.kubeconfig, "kubeconfig", "", "kubeconfig for online mode (default $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&s.downloader, "downloader-image", handlers.DefaultModelDownloaderImage, "model downloader image the webhook pins (its --model-downloader-image)")
}

// world is everything a decision reads, and the webhook's handlers over it.
type world struct {
	set   *objects.Set
	index *selection.Index
	isvcs *handlers.InferenceServices
	pods  *handlers.Pods
	// online: the cluster the objects were listed from ("" offline), and
	// its clients.
	online  string
	clients *clients
}

// newWorld builds the handlers the webhook runs (webhook/app.Routes) over
// set: the index fed as the cache feeds it, profiles, stored services and
// the ServingPolicies compiled as the cache compiles them.
func newWorld(set *objects.Set, downloader string) *world {
	x := set.Index()
	pol := set.Policies(berthNamespace)
	src := &handlers.PolicySource{
		Set:             func() *policy.Set { return pol },
		NamespaceLabels: set.NamespaceLabels,
	}
	profiles := set.ProfileLister()
	services := objects.ServiceLister(set.InferenceServices...)
	return &world{
		set:   set,
		index: x,
		isvcs: &handlers.InferenceServices{Index: x, Profiles: profiles, DownloaderImage: downloader, Policies: src, Services: services},
		pods:  &handlers.Pods{Index: x, Services: services, Profiles: profiles, Policies: src},
	}
}

// subjects are the InferenceServices a command is about, and the world
// they are decided in: offline, those of the -f files in a world of every
// file read; online, the named one in a world listed from the cluster.
func (s *sourceFlags) subjects(ctx context.Context, positional []string) (*world, []*v1beta1.InferenceService, error) {
	if len(positional) > 0 {
		if len(s.files) > 0 || len(s.from) > 0 {
			return nil, nil, fmt.Errorf("give either isvc/NAME (online) or -f and --from (offline), not both")
		}
		return s.online(ctx, positional)
	}
	if len(s.files) == 0 {
		return nil, nil, fmt.Errorf("nothing to decide for: give -f isvc.yaml (offline) or isvc/NAME (online); -h shows examples")
	}
	return s.offline()
}

func (s *sourceFlags) ns() string {
	if s.namespace == "" {
		return "default"
	}
	return s.namespace
}

func (s *sourceFlags) offline() (*world, []*v1beta1.InferenceService, error) {
	subj, err := objects.LoadPaths(s.files...)
	if err != nil {
		return nil, nil, err
	}
	rest, err := objects.LoadPaths(append(append([]string{}, s.from...), s.nodes...)...)
	if err != nil {
		return nil, nil, err
	}
	if probs := append(subj.Problems, rest.Problems...); len(probs) > 0 {
		lines := make([]string, len(probs))
		for i, p := range probs {
			lines[i] = p.String()
		}
		return nil, nil, fmt.Errorf("cannot read every object:\n%s", strings.Join(lines, "\n"))
	}
	if len(subj.InferenceServices) == 0 {
		return nil, nil, fmt.Errorf("no InferenceService in %s", strings.Join(s.files, ", "))
	}
	all := objects.Merge(subj, rest)
	all.DefaultNamespace(s.ns())
	if s.fleet != "" {
		nodes, err := fleetNodes(s.fleet)
		if err != nil {
			return nil, nil, err
		}
		all.Nodes = append(all.Nodes, nodes...)
	}
	return newWorld(all, s.downloader), subj.InferenceServices, nil
}

// fleetNodes are the nodes of a fleet file ("default": berth's own).
func fleetNodes(path string) ([]*corev1.Node, error) {
	var f *fleet.Fleet
	var err error
	if path == "default" {
		f, err = fleet.Default()
	} else {
		f, err = fleet.Load(path)
	}
	if err != nil {
		return nil, err
	}
	nodes := f.Nodes()
	out := make([]*corev1.Node, len(nodes))
	for i := range nodes {
		// Ready, as kwok reports them once fleet.Apply created them.
		nodes[i].Status.Conditions = append(nodes[i].Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue})
		out[i] = &nodes[i]
	}
	return out, nil
}
