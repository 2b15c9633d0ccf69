package servinggroups

import (
	"context"
	"errors"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/byservice"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// deleteStrayPods removes pods of components the service no longer has
// (its decoder or router was removed). The validating webhook refuses such
// shape changes while groups run; this catches the rest (a runtime edit).
func (c *Controller) deleteStrayPods(ctx context.Context, key string, isvc *v1beta1.InferenceService, topo []merge.ComponentTopology, pods []*corev1.Pod) error {
	have := map[string]bool{}
	for _, t := range topo {
		have[t.Component] = true
	}
	var errs []error
	for _, p := range pods {
		if have[componentOf(p)] || p.DeletionTimestamp != nil {
			continue
		}
		c.recorder.Eventf(isvc, corev1.EventTypeNormal, "DeletingStrayPod", "pod %s belongs to component %s, which the service no longer has", p.Name, componentOf(p))
		errs = append(errs, c.deletePod(ctx, key, p.Namespace, plan.PodRef{Name: p.Name, UID: string(p.UID)}))
	}
	return errors.Join(errs...)
}

// syncServices ensures the service's ClusterIP Service and one headless
// Service per live multi-node group, and removes headless Services of
// groups that are gone.
func (c *Controller) syncServices(ctx context.Context, isvc *v1beta1.InferenceService, topo []merge.ComponentTopology, results []componentResult, pods []*corev1.Pod) error {
	var errs []error
	front := frontComponent(topo)
	errs = append(errs, c.ensureService(ctx, isvc, desiredFrontService(isvc, topo, targetPort(pods, front))))

	want := map[string]bool{}
	for _, r := range results {
		if !r.topo.MultiNode {
			continue
		}
		for _, g := range liveGroups(pods, r) {
			svc := desiredGroupService(isvc, r.topo.Component, g)
			want[svc.Name] = true
			errs = append(errs, c.ensureService(ctx, isvc, svc))
		}
	}
	existing, err := byservice.For[*corev1.Service](c.svcIndex, isvc.Namespace, isvc.Name)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, s := range existing {
		if s.Name == isvc.Name || want[s.Name] || s.Labels[v1beta1.LabelGroupIndex] == "" {
			continue
		}
		if metav1.IsControlledBy(s, isvc) {
			errs = append(errs, c.deleteService(ctx, s))
		}
	}
	return errors.Join(errs...)
}

// liveGroups are the ordinals of a component with pods now or about to be
// created.
func liveGroups(pods []*corev1.Pod, r componentResult) []int32 {
	seen := map[int32]bool{}
	var out []int32
	add := func(g int32) {
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	for _, p := range pods {
		if componentOf(p) != r.topo.Component {
			continue
		}
		if g, err := strconv.Atoi(p.Labels[v1beta1.LabelGroupIndex]); err == nil && g >= 0 {
			add(int32(g))
		}
	}
	for _, p := range r.step.Create {
		add(p.Group)
	}
	return out
}
