package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/objects"
)

// clients are the read-only clients of online mode.
type clients struct {
	berth     versioned.Interface
	kube      kubernetes.Interface
	namespace string // the kubeconfig context's, "default" when it names none
	host      string
}

func (s *sourceFlags) clients() (*clients, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if s.kubeconfig != "" {
		rules.ExplicitPath = s.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("online mode needs a kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	b, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{berth: b, kube: k, namespace: ns, host: cfg.Host}, nil
}

// serviceName reads "isvc/NAME", "inferenceservice/NAME",
// "inferenceservices.ome.io/NAME" or plain "NAME".
func serviceName(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg, nil
	}
	switch strings.ToLower(kind) {
	case "isvc", "inferenceservice", "inferenceservices", "inferenceservice.ome.io", "inferenceservices.ome.io":
		return name, nil
	}
	return "", fmt.Errorf("%q: only InferenceServices are explained (isvc/NAME)", arg)
}

// online lists what the webhook's cache holds from the cluster, read-only,
// and gets the named service.
func (s *sourceFlags) online(ctx context.Context, positional []string) (*world, []*v1beta1.InferenceService, error) {
	c, err := s.clients()
	if err != nil {
		return nil, nil, err
	}
	ns := s.namespace
	if ns == "" {
		ns = c.namespace
	}
	set, err := listCluster(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	var subjects []*v1beta1.InferenceService
	for _, arg := range positional {
		name, err := serviceName(arg)
		if err != nil {
			return nil, nil, err
		}
		isvc, err := c.berth.OmeV1beta1().InferenceServices(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, err
		}
		subjects = append(subjects, isvc)
	}
	w := newWorld(set, s.downloader)
	w.online = c.host
	w.clients = c
	return w, subjects, nil
}

// listCluster lists every kind the webhook's cache watches, with the same
// pod filter (bound, not finished).
func listCluster(ctx context.Context, c *clients) (*objects.Set, error) {
	s := &objects.Set{}
	o := metav1.ListOptions{}
	api := c.berth.OmeV1beta1()
	srs, err := api.ServingRuntimes("").List(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("listing ServingRuntimes: %w", err)
	}
	s.ServingRuntimes = ptrs(srs.Items)
	csrs, err := api.ClusterServingRuntimes().List(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("listing ClusterServingRuntimes: %w", err)
	}
	s.ClusterServingRuntimes = ptrs(csrs.Items)
	bms, err := api.BaseModels("").List(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("listing BaseModels: %w", err)
	}
	s.BaseModels = ptrs(bms.Items)
	cbms, err := api.ClusterBaseModels().List(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("listing ClusterBaseModels: %w", err)
	}
	s.ClusterBaseModels = ptrs(cbms.Items)
	acs, err := api.AcceleratorClasses().List(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("listing AcceleratorClasses: %w", err)
	}
	s.AcceleratorClasses = ptrs(acs.Items)
	profs, err := api.ClusterEngineRuntimeProfiles().List(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("listing ClusterEngineRuntimeProfiles: %w", err)
	}
	s.Profiles = ptrs(profs.Items)
	isvcs, err := api.InferenceServices("").List(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("listing InferenceServices: %w", err)
	}
	s.InferenceServices = ptrs(isvcs.Items)
	if err := listKube(ctx, c, s); err != nil {
		return nil, err
	}
	pols, err := c.berth.PolicyV1alpha1().ServingPolicies().List(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "berth: ServingPolicies not read (%v); deciding without them\n", err)
		return s, nil
	}
	s.ServingPolicies = ptrs(pols.Items)
	return s, nil
}

func listKube(ctx context.Context, c *clients, s *objects.Set) error {
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Nodes: %w", err)
	}
	s.Nodes = ptrs(nodes.Items)
	podFilter := fields.AndSelectors(
		fields.OneTermNotEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
	).String()
	pods, err := c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: podFilter})
	if err != nil {
		return fmt.Errorf("listing Pods: %w", err)
	}
	s.Pods = ptrs(pods.Items)
	nss, err := c.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Namespaces: %w", err)
	}
	s.Namespaces = ptrs(nss.Items)
	return nil
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
