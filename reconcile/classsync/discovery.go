package classsync

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/gpudiscovery"
	"github.com/berthdev/berth/selection"
)

// discover is one discovery pass: every node discovery counts, every
// class, gpudiscovery.Plan, then its writes.
func (c *Controller) discover(ctx context.Context) error {
	nodes, err := c.gpuNodes()
	if err != nil {
		return err
	}
	props, problems := gpudiscovery.Propose(nodes)
	c.reportProblems(problems)
	classes, err := c.classes.List(labels.Everything())
	if err != nil {
		return err
	}
	existing := make([]gpudiscovery.ExistingClass, 0, len(classes))
	for _, cl := range classes {
		existing = append(existing, gpudiscovery.ExistingClass{Class: cl, Nodes: matchedNodes(cl, nodes)})
	}
	var errs []error
	for _, act := range gpudiscovery.Plan(props, existing) {
		if err := c.apply(ctx, act); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", act.Kind, act.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// gpuNodes are the nodes discovery counts (NodeSelector; not being
// deleted), as gpudiscovery reads them.
func (c *Controller) gpuNodes() ([]gpudiscovery.Node, error) {
	all, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]gpudiscovery.Node, 0, len(all))
	for _, n := range all {
		if n.DeletionTimestamp != nil {
			continue
		}
		out = append(out, gpudiscovery.Node{Name: n.Name, Labels: n.Labels, Resources: allocatableNames(n)})
	}
	return out, nil
}

// matchedNodes are the names of the nodes the class matches, sorted.
func matchedNodes(cl *v1beta1.AcceleratorClass, nodes []gpudiscovery.Node) []string {
	match := selection.ClassNodeMatcher(cl)
	var out []string
	for _, n := range nodes {
		if match(selection.NodeInfo{Name: n.Name, Labels: n.Labels}) {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

func (c *Controller) apply(ctx context.Context, act gpudiscovery.Action) error {
	cls := c.berth.OmeV1beta1().AcceleratorClasses()
	switch act.Kind {
	case gpudiscovery.Create:
		obj := &v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: act.Name,
			Labels: map[string]string{v1beta1.LabelAutoDiscovered: "true"}}, Spec: *act.Spec}
		created, err := cls.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManagerDiscovery})
		if apierrors.IsAlreadyExists(err) {
			return nil // the informer will show it; the next pass decides
		}
		if err == nil {
			c.recorder.Eventf(created, corev1.EventTypeNormal, "Discovered", "created from the labels of nodes %v",
				act.Spec.Discovery.NodeSelector)
		}
		return err
	case gpudiscovery.Update:
		cur, err := c.classes.Get(act.Name)
		if err != nil {
			return err
		}
		upd := cur.DeepCopy()
		upd.Spec = *act.Spec
		_, err = cls.Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManagerDiscovery})
		return err
	case gpudiscovery.SetStale:
		return c.applyStale(ctx, act)
	case gpudiscovery.NameTaken:
		c.warnOnce("class/"+act.Name, func() {
			c.log.Warn("accelerator discovery: an AcceleratorClass not made by discovery holds the name of a discovered product; left alone",
				"acceleratorclass", act.Name)
		})
	}
	return nil
}

// applyStale sets the Stale condition by server-side apply of the status
// subresource, owning that condition only.
func (c *Controller) applyStale(ctx context.Context, act gpudiscovery.Action) error {
	status := metav1.ConditionFalse
	if act.Stale {
		status = metav1.ConditionTrue
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1beta1.SchemeGroupVersion.String(), "kind": "AcceleratorClass",
		"metadata": map[string]any{"name": act.Name},
		"status": map[string]any{"conditions": []metav1.Condition{{Type: v1beta1.ConditionStale, Status: status,
			Reason: act.Reason, Message: act.Message, LastTransitionTime: metav1.NewTime(c.now())}}},
	})
	if err != nil {
		return err
	}
	force := true
	_, err = c.berth.OmeV1beta1().AcceleratorClasses().Patch(ctx, act.Name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: fieldManagerDiscovery, Force: &force}, "status")
	return err
}

// reportProblems says once per node, label and value, in a Warning Event
// on the node, that a label value was ignored.
func (c *Controller) reportProblems(problems []gpudiscovery.NodeProblems) {
	for _, np := range problems {
		for _, p := range np.Problems {
			c.warnOnce(np.Node+"/"+p.Label+"="+p.Value, func() {
				ref := &corev1.ObjectReference{Kind: "Node", Name: np.Node, UID: types.UID(np.Node), APIVersion: "v1"}
				c.recorder.Event(ref, corev1.EventTypeWarning, "InvalidGPULabel", p.String())
			})
		}
	}
}

func (c *Controller) warnOnce(key string, f func()) {
	c.mu.Lock()
	seen := c.warned[key]
	c.warned[key] = true
	c.mu.Unlock()
	if !seen {
		f()
	}
}

func allocatableNames(n *corev1.Node) []string {
	out := make([]string, 0, len(n.Status.Allocatable))
	for r := range n.Status.Allocatable {
		out = append(out, string(r))
	}
	sort.Strings(out)
	return out
}

func taintsEqual(a, b []corev1.Taint) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Taint) bool {
		return x.Key == y.Key && x.Value == y.Value && x.Effect == y.Effect
	})
}
