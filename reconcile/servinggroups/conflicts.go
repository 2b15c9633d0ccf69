package servinggroups

import (
	"context"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

// ConditionPriorityConflict on a ServingRuntime or ClusterServingRuntime:
// True when another enabled runtime of the same scope ties with it (the
// same priority for a model both could serve). The validating webhook
// denies a tie when the second runtime is applied; two runtimes created at
// the same moment can both pass it, so the reconciler checks every runtime
// after the fact and says so on both, with the same rule
// (selection.Index.PriorityConflicts). Selection's tie-break stays
// deterministic (newest, then name) meanwhile.
const ConditionPriorityConflict = "PriorityConflict"

// Reasons of ConditionPriorityConflict.
const (
	ReasonPriorityTie = "PriorityTie"
	ReasonNoConflict  = "NoConflict"
)

// conflictsKey is the one work item of the runtime check: every runtime
// event coalesces into it.
const conflictsKey = "runtime-priority-conflicts"

// runtimeRef is one runtime as the check sees it.
type runtimeRef struct {
	kind, namespace, name string
	spec                  *v1beta1.ServingRuntimeSpec
	conditions            []metav1.Condition
}

// listRuntimes reads every runtime from the cache, in a stable order.
func (c *Controller) listRuntimes() ([]runtimeRef, error) {
	var out []runtimeRef
	crts, err := c.clusterRuntimes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, r := range crts {
		out = append(out, runtimeRef{selection.KindClusterServingRuntime, "", r.Name, &r.Spec, r.Status.Conditions})
	}
	rts, err := c.runtimes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, r := range rts {
		out = append(out, runtimeRef{selection.KindServingRuntime, r.Namespace, r.Name, &r.Spec, r.Status.Conditions})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.kind+"/"+a.namespace+"/"+a.name < b.kind+"/"+b.namespace+"/"+b.name
	})
	return out, nil
}

// syncConflicts recomputes the PriorityConflict condition of every runtime
// and writes the ones that changed. It returns how many runtimes conflict.
func (c *Controller) syncConflicts(ctx context.Context) (int, error) {
	all, err := c.listRuntimes()
	if err != nil {
		return 0, err
	}
	idx := selection.NewIndex()
	for _, r := range all {
		if r.kind == selection.KindClusterServingRuntime {
			idx.UpsertClusterServingRuntime(&v1beta1.ClusterServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: r.name}, Spec: *r.spec})
		} else {
			idx.UpsertServingRuntime(&v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: r.namespace}, Spec: *r.spec})
		}
	}
	conflicting := 0
	var errs []error
	for _, r := range all {
		var lines []string // "<field>: <detail>", as the webhook prints them
		for _, e := range idx.PriorityConflicts(r.kind, r.namespace, r.name, r.spec) {
			lines = append(lines, e.Field+": "+e.Detail)
		}
		want := metav1.Condition{Type: ConditionPriorityConflict, Status: metav1.ConditionFalse, Reason: ReasonNoConflict,
			Message: "no enabled runtime of the same scope ties with this one"}
		if len(lines) > 0 {
			conflicting++
			want.Status, want.Reason, want.Message = metav1.ConditionTrue, ReasonPriorityTie, strings.Join(lines, "; ")
		}
		if have := meta.FindStatusCondition(r.conditions, ConditionPriorityConflict); have != nil &&
			have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
			continue
		}
		if err := c.writeRuntimeCondition(ctx, r, want); err != nil {
			errs = append(errs, err)
		}
	}
	c.m.conflicts.Set(float64(conflicting))
	if len(errs) > 0 {
		return conflicting, errs[0]
	}
	return conflicting, nil
}

// writeRuntimeCondition sets the condition on a fresh copy of the runtime.
func (c *Controller) writeRuntimeCondition(ctx context.Context, r runtimeRef, cond metav1.Condition) error {
	c.m.write("update", strings.ToLower(r.kind)+"s/status")
	var err error
	if r.kind == selection.KindClusterServingRuntime {
		var o *v1beta1.ClusterServingRuntime
		if o, err = c.clusterRuntimes.Get(r.name); err == nil {
			o = o.DeepCopy()
			meta.SetStatusCondition(&o.Status.Conditions, cond)
			_, err = c.berth.OmeV1beta1().ClusterServingRuntimes().UpdateStatus(ctx, o, metav1.UpdateOptions{})
		}
	} else {
		var o *v1beta1.ServingRuntime
		if o, err = c.runtimes.ServingRuntimes(r.namespace).Get(r.name); err == nil {
			o = o.DeepCopy()
			meta.SetStatusCondition(&o.Status.Conditions, cond)
			_, err = c.berth.OmeV1beta1().ServingRuntimes(r.namespace).UpdateStatus(ctx, o, metav1.UpdateOptions{})
		}
	}
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed: its event queues the check again
	}
	return err
}
