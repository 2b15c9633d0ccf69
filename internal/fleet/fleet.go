// Package fleet turns a declarative file of node pools (fleet.yaml) into
// kwok-managed fake nodes with realistic GPU labels and allocatable
// resources, so the real scheduler places pods on "GPUs" on a laptop.
package fleet

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// Annotation and label kwok and the fleet put on every fake node. kwok only
// manages nodes with the annotation (see internal/devenv/cluster's kwok flags).
const (
	KwokAnnotation = "kwok.x-k8s.io/node"
	KwokValue      = "fake"
	ZoneLabel      = "topology.kubernetes.io/zone"
)

//go:embed fleet.yaml
var defaultFleet []byte

// Fleet is a set of node pools.
type Fleet struct {
	// Zones are assigned to a pool's nodes in turn.
	Zones []string `json:"zones"`
	Pools []Pool   `json:"pools"`
}

// Pool is Count identical nodes.
type Pool struct {
	Name        string            `json:"name"`
	Count       int               `json:"count"`
	Labels      map[string]string `json:"labels,omitempty"`
	Allocatable map[string]string `json:"allocatable"`
}

// Default is the fleet in internal/fleet/fleet.yaml, compiled in.
func Default() (*Fleet, error) { return Parse(defaultFleet, "internal/fleet/fleet.yaml") }

// Load reads and validates a fleet file.
func Load(path string) (*Fleet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Parse decodes and validates a fleet; source names it in errors.
func Parse(data []byte, source string) (*Fleet, error) {
	var f Fleet
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("fleet %s: %w", source, err)
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("fleet %s: %w", source, err)
	}
	return &f, nil
}

// Validate reports every problem at once, each naming the pool and field.
func (f *Fleet) Validate() error {
	var errs []error
	if len(f.Pools) == 0 {
		errs = append(errs, errors.New("pools: empty; declare at least one node pool"))
	}
	for i, z := range f.Zones {
		if msgs := validation.IsValidLabelValue(z); len(msgs) > 0 || z == "" {
			errs = append(errs, fmt.Errorf("zones[%d] %q: not a label value: %s", i, z, strings.Join(msgs, "; ")))
		}
	}
	seen := map[string]bool{}
	for i, p := range f.Pools {
		where := fmt.Sprintf("pools[%d] (%s)", i, p.Name)
		if msgs := validation.IsDNS1123Label(p.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s.name: %s; use lower-case letters, digits and '-'", where, strings.Join(msgs, "; ")))
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("%s.name: duplicate pool name; node names <pool>-<i> would collide", where))
		}
		seen[p.Name] = true
		if p.Count < 1 {
			errs = append(errs, fmt.Errorf("%s.count: %d; set at least 1", where, p.Count))
		}
		for _, k := range sortedKeys(p.Labels) {
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s.labels[%s]: bad key: %s", where, k, strings.Join(msgs, "; ")))
			}
			if msgs := validation.IsValidLabelValue(p.Labels[k]); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s.labels[%s]: bad value %q: %s", where, k, p.Labels[k], strings.Join(msgs, "; ")))
			}
		}
		if len(p.Allocatable) == 0 {
			errs = append(errs, fmt.Errorf("%s.allocatable: empty; set at least cpu, memory and pods", where))
		}
		for _, k := range sortedKeys(p.Allocatable) {
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s.allocatable[%s]: bad resource name: %s", where, k, strings.Join(msgs, "; ")))
			}
			if _, err := resource.ParseQuantity(p.Allocatable[k]); err != nil {
				errs = append(errs, fmt.Errorf("%s.allocatable[%s]: %q is not a quantity (e.g. 8, 96, 1Ti)", where, k, p.Allocatable[k]))
			}
		}
	}
	return errors.Join(errs...)
}

// Nodes returns the fleet's nodes in file order, pool by pool. The fleet
// must be valid.
func (f *Fleet) Nodes() []corev1.Node {
	var nodes []corev1.Node
	for _, p := range f.Pools {
		res := corev1.ResourceList{}
		for k, v := range p.Allocatable {
			res[corev1.ResourceName(k)] = resource.MustParse(v) // validated
		}
		for i := range p.Count {
			name := p.Name + "-" + strconv.Itoa(i)
			labels := map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			}
			if len(f.Zones) > 0 {
				labels[ZoneLabel] = f.Zones[i%len(f.Zones)]
			}
			for k, v := range p.Labels {
				labels[k] = v
			}
			nodes = append(nodes, corev1.Node{
				ObjectMeta: metav1.ObjectMeta{
					Name:        name,
					Labels:      labels,
					Annotations: map[string]string{KwokAnnotation: KwokValue},
				},
				Status: corev1.NodeStatus{
					Capacity:    res.DeepCopy(),
					Allocatable: res.DeepCopy(),
				},
			})
		}
	}
	return nodes
}

// Apply creates the fleet's nodes (an existing node of the same name is
// left as it is) and waits until kwok reports every one Ready.
func Apply(ctx context.Context, kube kubernetes.Interface, f *Fleet, timeout time.Duration) ([]corev1.Node, error) {
	nodes := f.Nodes()
	for i := range nodes {
		if _, err := kube.CoreV1().Nodes().Create(ctx, &nodes[i], metav1.CreateOptions{FieldManager: "berth-fleet"}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create fake node %s: %w", nodes[i].Name, err)
		}
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return nodes, WaitReady(ctx, kube, names, timeout)
}

// WaitReady waits until every named node has condition Ready=True. On
// timeout it names the nodes that are not, so a stopped kwok is obvious.
func WaitReady(ctx context.Context, kube kubernetes.Interface, names []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		ready := map[string]bool{}
		for _, n := range list.Items {
			ready[n.Name] = IsReady(&n)
		}
		var notReady []string
		for _, n := range names {
			if !ready[n] {
				notReady = append(notReady, n)
			}
		}
		if len(notReady) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fake nodes not Ready after %s: %s; is kwok running with the Stage files of internal/devenv/kwok/stages?",
				timeout, strings.Join(notReady, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// IsReady reports whether the node's Ready condition is True.
func IsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Summary is one line per pool, e.g. "h100 ×4 (nvidia.com/gpu: 8 each)".
func (f *Fleet) Summary() []string {
	var out []string
	for _, p := range f.Pools {
		var gpus []string
		for _, k := range sortedKeys(p.Allocatable) {
			if strings.Contains(k, "/") { // extended resources: the accelerators
				gpus = append(gpus, k+": "+p.Allocatable[k])
			}
		}
		what := "CPU only"
		if len(gpus) > 0 {
			what = strings.Join(gpus, ", ") + " each"
		}
		out = append(out, fmt.Sprintf("%s ×%d (%s)", p.Name, p.Count, what))
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
