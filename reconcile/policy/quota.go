package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"

	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	policyset "github.com/berthdev/berth/policy"
)

// The ResourceQuota backstop of a ServingPolicy's namespace budget
// (rules.maxAcceleratorsPerNamespace): one ResourceQuota per policy and
// selected namespace, so the apiserver caps accelerator requests of pods
// atomically, whatever admission let through.
const (
	// QuotaPrefix starts the name of every ResourceQuota berth keeps:
	// berth-policy-<policy>.
	QuotaPrefix = "berth-policy-"
	// LabelManagedBy (app.kubernetes.io/managed-by) is
	// ManagedByReconciler on every ResourceQuota berth keeps: the
	// reconciler updates and deletes only those.
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	ManagedByReconciler = "berth-reconciler"
	// LabelServingPolicy names the ServingPolicy a ResourceQuota keeps the
	// budget of (when the name fits a label value; the owner reference
	// always names it).
	LabelServingPolicy = "policy.berth.dev/servingpolicy"
)

// quotaName is the ResourceQuota of a policy: berth-policy-<policy>, or,
// when that would not be a valid name, a prefix of it and a hash of the
// policy's name.
func quotaName(policy string) string {
	name := QuotaPrefix + policy
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(policy))
	return name[:validation.DNS1123SubdomainMaxLength-11] + "-" + hex.EncodeToString(sum[:])[:10]
}

// namespaceSelected: the policy's namespaceSelector (unset or empty: all)
// selects the namespace, which is not exempt and not terminating. A
// selector that does not parse (admission refuses it) selects nothing.
func namespaceSelected(p *policyv1alpha1.ServingPolicy, ns *corev1.Namespace, exempt func(string) bool) bool {
	if exempt(ns.Name) || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return false
	}
	ls := p.Spec.NamespaceSelector
	if ls == nil || len(ls.MatchLabels) == 0 && len(ls.MatchExpressions) == 0 {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	return err == nil && sel.Matches(labels.Set(ns.Labels))
}

// desiredQuotas are the ResourceQuotas a policy calls for: none without a
// namespace budget, else one per selected namespace, in namespace order,
// with hard requests.<resource> = the budget for every accelerator
// resource. A namespace budget is the namespace's: the quota covers every
// pod in it, as admission counts every pinned service in it.
func desiredQuotas(p *policyv1alpha1.ServingPolicy, namespaces []*corev1.Namespace, resources []corev1.ResourceName, exempt func(string) bool) []*corev1.ResourceQuota {
	budget := p.Spec.Rules.MaxAcceleratorsPerNamespace
	if budget == nil || p.DeletionTimestamp != nil {
		return nil
	}
	var out []*corev1.ResourceQuota
	for _, ns := range namespaces {
		if namespaceSelected(p, ns, exempt) {
			out = append(out, quotaFor(p, ns.Name, *budget, resources))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}

func quotaFor(p *policyv1alpha1.ServingPolicy, namespace string, budget int64, resources []corev1.ResourceName) *corev1.ResourceQuota {
	hard := corev1.ResourceList{}
	for _, r := range resources {
		hard[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(r))] = *resource.NewQuantity(budget, resource.DecimalSI)
	}
	lbls := map[string]string{LabelManagedBy: ManagedByReconciler}
	if len(validation.IsValidLabelValue(p.Name)) == 0 {
		lbls[LabelServingPolicy] = p.Name
	}
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{
			Name: quotaName(p.Name), Namespace: namespace, Labels: lbls,
			Annotations: map[string]string{LabelServingPolicy: p.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "ServingPolicy",
				Name: p.Name, UID: p.UID, Controller: ptrTo(true),
			}},
		},
		Spec: corev1.ResourceQuotaSpec{Hard: hard},
	}
}

func ptrTo[T any](v T) *T { return &v }

// quotaPolicy names the ServingPolicy a ResourceQuota keeps the budget of:
// its controller owner's name when that is a ServingPolicy and the quota
// is berth's; "" for any other quota.
func quotaPolicy(q *corev1.ResourceQuota) string {
	if q.Labels[LabelManagedBy] != ManagedByReconciler {
		return ""
	}
	if ref := metav1.GetControllerOf(q); ref != nil && ref.Kind == "ServingPolicy" && ref.APIVersion == policyv1alpha1.SchemeGroupVersion.String() {
		return ref.Name
	}
	return ""
}

// quotaUpToDate: have carries want's hard limits, labels, annotations and
// owner reference (other labels, annotations and fields are left alone).
func quotaUpToDate(have, want *corev1.ResourceQuota) bool {
	if !apiequality.Semantic.DeepEqual(have.Spec.Hard, want.Spec.Hard) || have.Spec.Scopes != nil || have.Spec.ScopeSelector != nil {
		return false
	}
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	for k, v := range want.Annotations {
		if have.Annotations[k] != v {
			return false
		}
	}
	ref := metav1.GetControllerOf(have)
	return ref != nil && ref.UID == want.OwnerReferences[0].UID && ref.Name == want.OwnerReferences[0].Name
}

// updatedQuota is have with want's hard limits, labels, annotations and
// owner reference.
func updatedQuota(have, want *corev1.ResourceQuota) *corev1.ResourceQuota {
	upd := have.DeepCopy()
	upd.Spec = want.Spec
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	for k, v := range want.Labels {
		upd.Labels[k] = v
	}
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	for k, v := range want.Annotations {
		upd.Annotations[k] = v
	}
	upd.OwnerReferences = slices.DeleteFunc(upd.OwnerReferences, func(r metav1.OwnerReference) bool { return r.Controller != nil && *r.Controller })
	upd.OwnerReferences = append(upd.OwnerReferences, want.OwnerReferences...)
	return upd
}

// syncQuotas makes the ResourceQuotas of one policy (nil: deleted) what
// desiredQuotas says: created when missing, updated only when a field
// berth owns differs, deleted (with a UID precondition) when the policy no
// longer selects the namespace or lost its budget. It returns how many
// quotas the policy keeps.
func (p *Controller) syncQuotas(ctx context.Context, name string, sp *policyv1alpha1.ServingPolicy, namespaces []*corev1.Namespace) (int, error) {
	var want []*corev1.ResourceQuota
	if sp != nil {
		classes, err := p.objects.classes.List(labels.Everything())
		if err != nil {
			return 0, err
		}
		want = desiredQuotas(sp, namespaces, policyset.AcceleratorResources(classes), p.exempt)
	}
	all, err := p.quotas.List(labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedByReconciler}))
	if err != nil {
		return 0, err
	}
	have := map[string]*corev1.ResourceQuota{}
	for _, q := range all {
		if quotaPolicy(q) == name {
			have[q.Namespace+"/"+q.Name] = q
		}
	}
	var errs []error
	for _, w := range want {
		key := w.Namespace + "/" + w.Name
		h := have[key]
		delete(have, key)
		errs = append(errs, p.applyQuota(ctx, h, w))
	}
	for _, h := range have {
		errs = append(errs, p.deleteQuota(ctx, h))
	}
	return len(want), errors.Join(errs...)
}

func (p *Controller) applyQuota(ctx context.Context, have, want *corev1.ResourceQuota) error {
	qs := p.kube.CoreV1().ResourceQuotas(want.Namespace)
	switch {
	case have == nil:
		p.opts.Writes("create", "resourcequotas")
		_, err := qs.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache yet, or someone else's quota of that name:
			// the informer's event brings the next look.
			return fmt.Errorf("ResourceQuota %s/%s exists and is not (yet) berth's: %w", want.Namespace, want.Name, err)
		}
		if err != nil {
			return fmt.Errorf("create ResourceQuota %s/%s: %w", want.Namespace, want.Name, err)
		}
		p.log.Info("ResourceQuota created for a namespace budget", "namespace", want.Namespace, "quota", want.Name, "hard", want.Spec.Hard)
	case !quotaUpToDate(have, want):
		p.opts.Writes("update", "resourcequotas")
		if _, err := qs.Update(ctx, updatedQuota(have, want), metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("update ResourceQuota %s/%s: %w", want.Namespace, want.Name, err)
		}
	}
	return nil
}

func (p *Controller) deleteQuota(ctx context.Context, q *corev1.ResourceQuota) error {
	p.opts.Writes("delete", "resourcequotas")
	uid := q.UID
	err := p.kube.CoreV1().ResourceQuotas(q.Namespace).Delete(ctx, q.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete ResourceQuota %s/%s: %w", q.Namespace, q.Name, err)
	}
	p.log.Info("ResourceQuota of a namespace budget deleted", "namespace", q.Namespace, "quota", q.Name)
	return nil
}

// quotaEvents queue the ServingPolicy a changed or deleted berth quota
// belongs to (it is put back as the policy says). A quota's usage alone
// changes nothing here.
func (p *Controller) quotaEvents() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) {
			oq, ok1 := o.(*corev1.ResourceQuota)
			nq, ok2 := n.(*corev1.ResourceQuota)
			if !ok1 || !ok2 {
				return
			}
			if name := quotaPolicy(nq); name != "" && oq.ResourceVersion != nq.ResourceVersion && !quotaSpecSame(oq, nq) {
				p.enqueue(name)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if q, ok := obj.(*corev1.ResourceQuota); ok {
				if name := quotaPolicy(q); name != "" {
					p.enqueue(name)
				}
			}
		},
	}
}

// quotaSpecSame: only the status (usage) changed.
func quotaSpecSame(a, b *corev1.ResourceQuota) bool {
	return apiequality.Semantic.DeepEqual(a.Spec, b.Spec) && labels.Equals(a.Labels, b.Labels) &&
		labels.Equals(a.Annotations, b.Annotations) && apiequality.Semantic.DeepEqual(a.OwnerReferences, b.OwnerReferences)
}
