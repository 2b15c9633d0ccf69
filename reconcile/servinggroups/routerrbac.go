package servinggroups

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// ReasonRouterRBACConflict: a ServiceAccount, Role or RoleBinding named
// <isvc>-router exists and is not controlled by the service, so berth
// neither adopts nor changes it, and the router runs without it.
const ReasonRouterRBACConflict = "RouterRBACConflict"

// RouterServiceAccountName is the ServiceAccount, Role and RoleBinding a
// service's router runs under: <isvc>-router.
func RouterServiceAccountName(isvc string) string { return merge.RouterServiceAccountName(isvc) }

// routerRBACLabels are berth's identity labels on the router's RBAC
// objects; the informers watch only objects carrying the first.
func routerRBACLabels(isvc *v1beta1.InferenceService) map[string]string {
	return map[string]string{
		v1beta1.LabelInferenceService: isvc.Name,
		v1beta1.LabelComponent:        v1beta1.ComponentRouter,
		LabelManagedBy:                ManagedByReconciler,
	}
}

// routerPodRules is everything the router's Role grants: reading the pods
// of its namespace, which service discovery (sglang-router's
// --service-discovery, berth-test-engine's router) lists and watches.
func routerPodRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}
}

func desiredRouterServiceAccount(isvc *v1beta1.InferenceService) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: routerRBACMeta(isvc)}
}

func desiredRouterRole(isvc *v1beta1.InferenceService) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: routerRBACMeta(isvc), Rules: routerPodRules()}
}

func desiredRouterRoleBinding(isvc *v1beta1.InferenceService) *rbacv1.RoleBinding {
	name := RouterServiceAccountName(isvc.Name)
	return &rbacv1.RoleBinding{
		ObjectMeta: routerRBACMeta(isvc),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: isvc.Namespace}},
	}
}

func routerRBACMeta(isvc *v1beta1.InferenceService) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: RouterServiceAccountName(isvc.Name), Namespace: isvc.Namespace,
		Labels: routerRBACLabels(isvc), OwnerReferences: []metav1.OwnerReference{ownerRef(isvc)}}
}

// hasRouter reports whether the service's topology has a router component.
func hasRouter(topo []merge.ComponentTopology) bool {
	for _, t := range topo {
		if t.Component == v1beta1.ComponentRouter {
			return true
		}
	}
	return false
}

// routerAccess is the outcome of syncRouterRBAC: the ServiceAccount the
// router's skeleton pods name ("" for none: no router, or a conflict), and
// the conflict's message for the Degraded condition.
type routerAccess struct {
	serviceAccount string
	conflict       string
}

// syncRouterRBAC ensures the router's ServiceAccount, Role and RoleBinding
// (all named <isvc>-router) when the service has a router. An object of
// that name the service does not control is left alone: the router then
// runs under the namespace's default account and the service says so. A
// service without a router gets none; ones made earlier stay until the
// service is deleted (owner references).
func (c *Controller) syncRouterRBAC(ctx context.Context, isvc *v1beta1.InferenceService, topo []merge.ComponentTopology) (routerAccess, error) {
	if !hasRouter(topo) {
		return routerAccess{}, nil
	}
	steps := []func(context.Context, *v1beta1.InferenceService) (string, error){
		c.ensureRouterServiceAccount, c.ensureRouterRole, c.ensureRouterRoleBinding,
	}
	for _, ensure := range steps {
		conflict, err := ensure(ctx, isvc)
		if err != nil {
			c.recorder.Eventf(isvc, corev1.EventTypeWarning, "FailedRouterRBAC", "%v", err)
			return routerAccess{}, err
		}
		if conflict != "" {
			return routerAccess{conflict: conflict}, nil
		}
	}
	return routerAccess{serviceAccount: RouterServiceAccountName(isvc.Name)}, nil
}

// routerConflictRecheck is how often a service whose router account is in
// conflict looks again: the conflicting object lacks berth's label, so the
// informers do not see it deleted.
const routerConflictRecheck = 30 * time.Second

// routerRequeue is the sync's requeue, at most routerConflictRecheck while
// the router's account is in conflict.
func routerRequeue(requeue time.Duration, a routerAccess) time.Duration {
	if a.conflict != "" && (requeue == 0 || requeue > routerConflictRecheck) {
		return routerConflictRecheck
	}
	return requeue
}

// conflictMessage names the object berth will not take over, and the fix.
func conflictMessage(isvc *v1beta1.InferenceService, kind, name string) string {
	return fmt.Sprintf("%s %s/%s exists and is not controlled by InferenceService %s; berth does not adopt or change it, "+
		"so the router runs under the namespace's default ServiceAccount and cannot discover its workers. "+
		"Delete or rename that %s (berth then creates its own)", kind, isvc.Namespace, name, isvc.Name, kind)
}

// rbacWriteError wraps a failed write of a router RBAC object.
func rbacWriteError(verb, kind string, isvc *v1beta1.InferenceService, err error) error {
	return fmt.Errorf("InferenceService %s/%s: %s %s %s/%s for the router: %w (the reconciler's ClusterRole must allow "+
		"serviceaccounts, roles and rolebindings, and hold pods get/list/watch itself)", isvc.Namespace, isvc.Name,
		verb, kind, isvc.Namespace, RouterServiceAccountName(isvc.Name), err)
}

// fetchOnConflict reads an object the cache does not show (it lacks
// berth's label, or the cache is behind) after a create said it exists.
func fetchOnConflict[T metav1.Object](get func() (T, error)) (T, bool, error) {
	o, err := get()
	if apierrors.IsNotFound(err) {
		var zero T
		return zero, false, nil // deleted meanwhile: the next sync creates it
	}
	return o, err == nil, err
}

func (c *Controller) ensureRouterServiceAccount(ctx context.Context, isvc *v1beta1.InferenceService) (string, error) {
	want := desiredRouterServiceAccount(isvc)
	client := c.kube.CoreV1().ServiceAccounts(isvc.Namespace)
	have, err := c.serviceAccounts.ServiceAccounts(isvc.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		c.m.write("create", "serviceaccounts")
		if _, err = client.Create(ctx, want, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return "", rbacWriteError("creating", "ServiceAccount", isvc, err)
			}
			return "", nil
		}
		var found bool
		if have, found, err = fetchOnConflict(func() (*corev1.ServiceAccount, error) { return client.Get(ctx, want.Name, metav1.GetOptions{}) }); !found {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	if !metav1.IsControlledBy(have, isvc) {
		return conflictMessage(isvc, "ServiceAccount", want.Name), nil
	}
	if apiequality.Semantic.DeepEqual(have.Labels, want.Labels) {
		return "", nil
	}
	upd := have.DeepCopy()
	upd.Labels = want.Labels
	c.m.write("update", "serviceaccounts")
	if _, err := client.Update(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return "", rbacWriteError("updating", "ServiceAccount", isvc, err)
	}
	return "", nil
}

func (c *Controller) ensureRouterRole(ctx context.Context, isvc *v1beta1.InferenceService) (string, error) {
	want := desiredRouterRole(isvc)
	client := c.kube.RbacV1().Roles(isvc.Namespace)
	have, err := c.roles.Roles(isvc.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		c.m.write("create", "roles")
		if _, err = client.Create(ctx, want, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return "", rbacWriteError("creating", "Role", isvc, err)
			}
			return "", nil
		}
		var found bool
		if have, found, err = fetchOnConflict(func() (*rbacv1.Role, error) { return client.Get(ctx, want.Name, metav1.GetOptions{}) }); !found {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	if !metav1.IsControlledBy(have, isvc) {
		return conflictMessage(isvc, "Role", want.Name), nil
	}
	if apiequality.Semantic.DeepEqual(have.Labels, want.Labels) && apiequality.Semantic.DeepEqual(have.Rules, want.Rules) {
		return "", nil
	}
	upd := have.DeepCopy()
	upd.Labels, upd.Rules = want.Labels, want.Rules // a widened Role is narrowed back
	c.m.write("update", "roles")
	if _, err := client.Update(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return "", rbacWriteError("updating", "Role", isvc, err)
	}
	return "", nil
}

func (c *Controller) ensureRouterRoleBinding(ctx context.Context, isvc *v1beta1.InferenceService) (string, error) {
	want := desiredRouterRoleBinding(isvc)
	client := c.kube.RbacV1().RoleBindings(isvc.Namespace)
	have, err := c.roleBindings.RoleBindings(isvc.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		c.m.write("create", "rolebindings")
		if _, err = client.Create(ctx, want, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return "", rbacWriteError("creating", "RoleBinding", isvc, err)
			}
			return "", nil
		}
		var found bool
		if have, found, err = fetchOnConflict(func() (*rbacv1.RoleBinding, error) { return client.Get(ctx, want.Name, metav1.GetOptions{}) }); !found {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	if !metav1.IsControlledBy(have, isvc) {
		return conflictMessage(isvc, "RoleBinding", want.Name), nil
	}
	if apiequality.Semantic.DeepEqual(have.Labels, want.Labels) && apiequality.Semantic.DeepEqual(have.Subjects, want.Subjects) &&
		apiequality.Semantic.DeepEqual(have.RoleRef, want.RoleRef) {
		return "", nil
	}
	if have.RoleRef != want.RoleRef {
		// roleRef is immutable: replace the binding (UID precondition).
		uid := have.UID
		c.m.write("delete", "rolebindings")
		err := client.Delete(ctx, have.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return "", rbacWriteError("replacing", "RoleBinding", isvc, err)
		}
		return "", nil // its delete event queues the service, which creates it again
	}
	upd := have.DeepCopy()
	upd.Labels, upd.Subjects = want.Labels, want.Subjects
	c.m.write("update", "rolebindings")
	if _, err := client.Update(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
		return "", rbacWriteError("updating", "RoleBinding", isvc, err)
	}
	return "", nil
}

// syncPodLabels adds the labels OME's runtimes select on
// (merge.OMECompatLabels) to running pods made before berth set them, with
// one merge patch of metadata.labels per pod (its UID in the patch is a
// precondition). Labels are not part of the revision and the pod webhook
// sees only CREATE, so this rolls nothing; OME's routers then find workers
// that already run.
func (c *Controller) syncPodLabels(ctx context.Context, pods []*corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		g, err := merge.GroupIdentityFromPod(p)
		if err != nil {
			continue // a malformed pod is the planner's to replace
		}
		missing := map[string]string{}
		for k, v := range merge.OMECompatLabels(componentOf(p), g) {
			if p.Labels[k] != v {
				missing[k] = v
			}
		}
		if len(missing) == 0 {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": p.UID, "labels": missing}})
		if err != nil {
			return err
		}
		c.m.write("patch", "pods")
		_, err = c.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, k8stypes.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("labelling pod %s/%s for OME's runtimes: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// routerAccountSuffix marks, in the planner's view, the revision of a
// router pod that predates its ServiceAccount (markRouterAccount).
const routerAccountSuffix = "+no-router-serviceaccount"

// markRouterAccount makes router pods that were created before the
// router's ServiceAccount existed, and do not run under it, outdated in
// the planner's view, so they are rolled (partition and maxUnavailable
// honoured) and come back under the account: serviceAccountName is
// immutable, and a router made by an earlier berth, or during a name
// conflict since resolved, otherwise keeps the default account and finds
// no workers. Pods created after the account are never marked, whatever
// they run under, so another webhook that rewrites the account cannot
// cause an endless roll; nor is anything marked when the runtime or the
// service names its own account (the composed router sets one).
func (c *Controller) markRouterAccount(isvc *v1beta1.InferenceService, dec *decision, pods []*corev1.Pod, observed []plan.Pod) {
	account := dec.router.serviceAccount
	if account == "" {
		return
	}
	sa, err := c.serviceAccounts.ServiceAccounts(isvc.Namespace).Get(account)
	if err != nil {
		return // just created: the cache is behind; the next sync looks again
	}
	composed := merge.SkeletonPod(isvc, v1beta1.ComponentRouter, merge.GroupIdentity{})
	if err := merge.ComposePod(dec.input(isvc, v1beta1.ComponentRouter), composed); err != nil || composed.Spec.ServiceAccountName != "" {
		return
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	for i := range observed {
		p := byName[observed[i].Name]
		// Timestamps have whole seconds: a pod of the account's second
		// may predate it, so only a later second counts as after (a pod
		// rewritten by another webhook is then rolled at most until one
		// is created in a later second).
		if p == nil || p.Spec.ServiceAccountName == account || sa.CreationTimestamp.Before(&p.CreationTimestamp) {
			continue
		}
		observed[i].Revision += routerAccountSuffix
	}
}
