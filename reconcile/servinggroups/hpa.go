package servinggroups

import (
	"context"
	"math"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// defaultUtilization is the HPA target when scaleTarget is unset.
const defaultUtilization = 80

// desiredHPA is the HorizontalPodAutoscaler of the engine when it scales on
// cpu or memory: it drives spec.engine.replicas through the service's scale
// subresource, bounded by min and max replicas. Other metrics (concurrency,
// rps) need an external autoscaler such as KEDA; nil then.
func desiredHPA(isvc *v1beta1.InferenceService, engine merge.ComponentTopology) *autoscalingv2.HorizontalPodAutoscaler {
	if engine.ScaleMetric == nil {
		return nil
	}
	var res corev1.ResourceName
	switch *engine.ScaleMetric {
	case v1beta1.ScaleMetricCPU:
		res = corev1.ResourceCPU
	case v1beta1.ScaleMetricMemory:
		res = corev1.ResourceMemory
	default:
		return nil
	}
	minR := max(engine.MinReplicas, 1)
	maxR := engine.MaxReplicas
	if maxR == 0 {
		maxR = math.MaxInt32 // maxReplicas 0 means unbounded
	}
	target := int32(defaultUtilization)
	if engine.ScaleTarget != nil {
		target = *engine.ScaleTarget
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{
			Name: isvc.Name, Namespace: isvc.Namespace,
			Labels:          map[string]string{v1beta1.LabelInferenceService: isvc.Name, v1beta1.LabelComponent: v1beta1.ComponentEngine},
			OwnerReferences: []metav1.OwnerReference{ownerRef(isvc)},
		},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "InferenceService", Name: isvc.Name},
			MinReplicas:    &minR,
			MaxReplicas:    maxR,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: res, Target: autoscalingv2.MetricTarget{
					Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}},
			}},
		},
	}
}

// syncHPA creates, updates or deletes the engine's HPA.
func (c *Controller) syncHPA(ctx context.Context, isvc *v1beta1.InferenceService, engine merge.ComponentTopology) error {
	want := desiredHPA(isvc, engine)
	have, err := c.hpas.HorizontalPodAutoscalers(isvc.Namespace).Get(isvc.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	client := c.kube.AutoscalingV2().HorizontalPodAutoscalers(isvc.Namespace)
	switch {
	case have != nil && !metav1.IsControlledBy(have, isvc):
		return nil // someone else's autoscaler: not ours to touch
	case want == nil && have != nil:
		c.m.write("delete", "horizontalpodautoscalers")
		uid := have.UID
		err = client.Delete(ctx, have.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case want == nil:
		return nil
	case have == nil:
		c.m.write("create", "horizontalpodautoscalers")
		_, err = client.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	case sameHPASpec(have.Spec, want.Spec):
		return nil
	}
	upd := have.DeepCopy()
	upd.Spec.ScaleTargetRef, upd.Spec.MinReplicas = want.Spec.ScaleTargetRef, want.Spec.MinReplicas
	upd.Spec.MaxReplicas, upd.Spec.Metrics = want.Spec.MaxReplicas, want.Spec.Metrics
	c.m.write("update", "horizontalpodautoscalers")
	_, err = client.Update(ctx, upd, metav1.UpdateOptions{})
	return err
}

// sameHPASpec compares the fields berth sets; the apiserver defaults others
// (behavior), which must not cause a write on every sync.
func sameHPASpec(have, want autoscalingv2.HorizontalPodAutoscalerSpec) bool {
	return apiequality.Semantic.DeepEqual(have.ScaleTargetRef, want.ScaleTargetRef) &&
		apiequality.Semantic.DeepEqual(have.MinReplicas, want.MinReplicas) &&
		have.MaxReplicas == want.MaxReplicas &&
		apiequality.Semantic.DeepEqual(have.Metrics, want.Metrics)
}
