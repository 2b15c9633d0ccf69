package servinggroups

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// ServicePort is the port of the InferenceService's ClusterIP Service.
const ServicePort = 80

// defaultTargetPort is used until a completed pod shows its port.
const defaultTargetPort = 8080

// ownerRef makes the service the controller of what the reconciler creates,
// so that deleting it garbage-collects everything.
func ownerRef(isvc *v1beta1.InferenceService) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "InferenceService",
		Name: isvc.Name, UID: isvc.UID, Controller: &t, BlockOwnerDeletion: &t}
}

// frontComponent is what the service's URL reaches: the router when there
// is one, else the engine.
func frontComponent(topo []merge.ComponentTopology) merge.ComponentTopology {
	for _, t := range topo {
		if t.Component == v1beta1.ComponentRouter {
			return t
		}
	}
	return topo[0]
}

// frontSelector selects one pod per group of a component: the leader of
// multi-node groups, else every pod.
func frontSelector(isvc *v1beta1.InferenceService, t merge.ComponentTopology) map[string]string {
	sel := map[string]string{v1beta1.LabelInferenceService: isvc.Name, v1beta1.LabelComponent: t.Component}
	if t.MultiNode {
		sel[v1beta1.LabelRole] = merge.RoleLeader
	}
	return sel
}

// desiredFrontService is the ClusterIP Service of the whole InferenceService.
func desiredFrontService(isvc *v1beta1.InferenceService, topo []merge.ComponentTopology, targetPort int32) *corev1.Service {
	front := frontComponent(topo)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: isvc.Name, Namespace: isvc.Namespace,
			Labels:          map[string]string{v1beta1.LabelInferenceService: isvc.Name, v1beta1.LabelComponent: front.Component},
			OwnerReferences: []metav1.OwnerReference{ownerRef(isvc)},
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: frontSelector(isvc, front),
			Ports: []corev1.ServicePort{{Name: "http", Port: ServicePort, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(targetPort)}},
		},
	}
}

// desiredGroupService is the headless Service of one multi-node group: it
// gives the leader the stable DNS name in LWS_LEADER_ADDRESS.
func desiredGroupService(isvc *v1beta1.InferenceService, component string, group int32) *corev1.Service {
	g := strconv.Itoa(int(group))
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: merge.GroupServiceName(isvc.Name, component, int(group)), Namespace: isvc.Namespace,
			Labels: map[string]string{v1beta1.LabelInferenceService: isvc.Name, v1beta1.LabelComponent: component,
				v1beta1.LabelGroupIndex: g},
			OwnerReferences: []metav1.OwnerReference{ownerRef(isvc)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector: map[string]string{v1beta1.LabelInferenceService: isvc.Name, v1beta1.LabelComponent: component,
				v1beta1.LabelGroupIndex: g},
		},
	}
}

// targetPort is the first port of the main container of a completed pod of
// the front component, so the Service follows what the runtime declares.
func targetPort(pods []*corev1.Pod, front merge.ComponentTopology) int32 {
	for _, p := range pods {
		if p.Labels[v1beta1.LabelComponent] != front.Component || (front.MultiNode && p.Labels[v1beta1.LabelRole] != merge.RoleLeader) {
			continue
		}
		for _, c := range p.Spec.Containers {
			if len(c.Ports) > 0 {
				return c.Ports[0].ContainerPort
			}
		}
	}
	return defaultTargetPort
}

// serviceURL is where the service answers inside the cluster.
func serviceURL(isvc *v1beta1.InferenceService) string {
	return fmt.Sprintf("http://%s.%s.svc.cluster.local", isvc.Name, isvc.Namespace)
}

// ensureService creates want, or updates the fields berth owns when they
// differ. A Service of the same name that berth does not own is left alone
// and reported.
func (c *Controller) ensureService(ctx context.Context, isvc *v1beta1.InferenceService, want *corev1.Service) error {
	have, err := c.svcs.Services(want.Namespace).Get(want.Name)
	if apierrors.IsNotFound(err) {
		c.m.write("create", "services")
		_, err = c.kube.CoreV1().Services(want.Namespace).Create(ctx, want, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			return nil // the cache is behind; the next sync compares
		case err != nil:
			// Say it on the service, not only in the log: a cluster out of
			// ClusterIPs, a quota or a policy refusing Services.
			c.recorder.Eventf(isvc, corev1.EventTypeWarning, "FailedCreateService", "creating Service %s/%s: %v", want.Namespace, want.Name, err)
		}
		return err
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(have, isvc) {
		// Left alone, never adopted: the service is Degraded reason
		// NameConflict naming it (problems.go), one event per change.
		return nil
	}
	if apiequality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector) &&
		apiequality.Semantic.DeepEqual(have.Spec.Ports, mergePorts(have.Spec.Ports, want.Spec.Ports)) &&
		have.Spec.PublishNotReadyAddresses == want.Spec.PublishNotReadyAddresses &&
		apiequality.Semantic.DeepEqual(have.Labels, want.Labels) {
		return nil
	}
	upd := have.DeepCopy()
	upd.Labels, upd.Spec.Selector, upd.Spec.PublishNotReadyAddresses = want.Labels, want.Spec.Selector, want.Spec.PublishNotReadyAddresses
	upd.Spec.Ports = mergePorts(have.Spec.Ports, want.Spec.Ports)
	c.m.write("update", "services")
	_, err = c.kube.CoreV1().Services(want.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	return err
}

// mergePorts keeps the node ports the apiserver allocated.
func mergePorts(have, want []corev1.ServicePort) []corev1.ServicePort {
	out := make([]corev1.ServicePort, len(want))
	for i, w := range want {
		for _, h := range have {
			if h.Name == w.Name {
				w.NodePort = h.NodePort
			}
		}
		out[i] = w
	}
	return out
}

// deleteService removes an owned Service, with a UID precondition.
func (c *Controller) deleteService(ctx context.Context, svc *corev1.Service) error {
	c.m.write("delete", "services")
	uid := svc.UID
	err := c.kube.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
