package servinggroups

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/reconcile/plan"
)

// ReasonModelMetadataPending (Resolved=False): the service is not pinned
// because its model's metadata is not known yet; the message is the
// model's. The webhook decides once the reconciler nudges the service.
const ReasonModelMetadataPending = "ModelMetadataPending"

// ReasonResolveRefused (Resolved=False): the model's metadata is known, but
// the webhook refused the nudge's update, i.e. it cannot resolve the
// service (no runtime serves the model, ...); the message is its answer.
// The next change of the service, its model or a runtime tries again.
const ReasonResolveRefused = "ResolveRefused"

// Kinds of models.
const (
	KindBaseModel        = "BaseModel"
	KindClusterBaseModel = "ClusterBaseModel"
)

// model is a BaseModel or a ClusterBaseModel as the serving side reads it
// (copies, never the cache's objects): what a service waits for and what
// its merge input carries. Its status is the model controller's
// (reconcile/models).
type model struct {
	kind, namespace, name string
	generation            int64
	spec                  v1beta1.BaseModelSpec
	status                v1beta1.ModelStatus
}

func (m *model) ref() string {
	if m.kind == KindBaseModel {
		return m.kind + " " + m.namespace + "/" + m.name
	}
	return m.kind + " " + m.name
}

func modelFromObject(obj any) *model {
	switch o := obj.(type) {
	case *v1beta1.BaseModel:
		o = o.DeepCopy()
		return &model{kind: KindBaseModel, namespace: o.Namespace, name: o.Name, generation: o.Generation, spec: o.Spec, status: o.Status}
	case *v1beta1.ClusterBaseModel:
		o = o.DeepCopy()
		return &model{kind: KindClusterBaseModel, name: o.Name, generation: o.Generation, spec: o.Spec, status: o.Status}
	case cache.DeletedFinalStateUnknown:
		return modelFromObject(o.Obj)
	}
	return nil
}

// getModel reads a model from the cache; nil when it does not exist.
func (c *Controller) getModel(kind, namespace, name string) (*model, error) {
	var obj any
	var err error
	if kind == KindBaseModel {
		obj, err = c.baseModels.BaseModels(namespace).Get(name)
	} else {
		obj, err = c.clusterModels.Get(name)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return modelFromObject(obj), nil
}

// indexByModel indexes services by spec.model.name, so a model's change
// finds the services that name it.
const indexByModel = "spec.model.name"

func serviceModelName(obj any) ([]string, error) {
	isvc, ok := obj.(*v1beta1.InferenceService)
	if !ok || isvc.Spec.Model == nil || isvc.Spec.Model.Name == "" {
		return nil, nil
	}
	return []string{isvc.Spec.Model.Name}, nil
}

// wireModelInformers watches BaseModels and ClusterBaseModels for the
// serving side: any change of a model (its status too: that is where its
// metadata arrives) queues the services that name it, since the model's
// effective spec is an input of their revision and of the nudge.
func (c *Controller) wireModelInformers() {
	om := c.berthInformers.Ome().V1beta1()
	bms, cbms := om.BaseModels(), om.ClusterBaseModels()
	c.baseModels, c.clusterModels = bms.Lister(), cbms.Lister()
	utilruntime.Must(om.InferenceServices().Informer().AddIndexers(cache.Indexers{indexByModel: serviceModelName}))
	c.serviceIndex = om.InferenceServices().Informer().GetIndexer()
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueServicesOf,
		UpdateFunc: func(_, n any) { c.enqueueServicesOf(n) },
		DeleteFunc: c.enqueueServicesOf,
	}
	for _, inf := range []cache.SharedIndexInformer{bms.Informer(), cbms.Informer()} {
		_, err := inf.AddEventHandler(handler)
		utilruntime.Must(err)
		c.synced = append(c.synced, inf.HasSynced)
	}
}

// enqueueServicesOf queues the services that name the model: for a
// BaseModel those of its namespace, for a ClusterBaseModel all (a service
// without spec.model.kind whose namespace holds a BaseModel of that name
// resolves to the BaseModel; queueing it too is harmless).
func (c *Controller) enqueueServicesOf(obj any) {
	m := modelFromObject(obj)
	if m == nil {
		return
	}
	objs, err := c.serviceIndex.ByIndex(indexByModel, m.name)
	if err != nil {
		return
	}
	for _, o := range objs {
		isvc, ok := o.(*v1beta1.InferenceService)
		if !ok || m.kind == KindBaseModel && isvc.Namespace != m.namespace {
			continue
		}
		c.queue.Add(isvc.Namespace + "/" + isvc.Name)
	}
}

// serviceModel finds the model a service names, as selection does:
// spec.model.kind if set, else a BaseModel in the service's namespace,
// else a ClusterBaseModel. nil when the service names none or it does not
// exist.
func (c *Controller) serviceModel(isvc *v1beta1.InferenceService) (*model, error) {
	ref := isvc.Spec.Model
	if ref == nil || ref.Name == "" {
		return nil, nil
	}
	kind := ""
	if ref.Kind != nil {
		kind = *ref.Kind
	}
	switch kind {
	case KindBaseModel, KindClusterBaseModel:
		return c.getModel(kind, isvc.Namespace, ref.Name)
	case "":
		m, err := c.getModel(KindBaseModel, isvc.Namespace, ref.Name)
		if m != nil || err != nil {
			return m, err
		}
		return c.getModel(KindClusterBaseModel, "", ref.Name)
	}
	return nil, nil // an unknown kind: the webhook says so
}

// modelWait decides, for a service the webhook has not pinned, what its
// model means (pure):
//
//   - no model found, or the service is pinned: nothing;
//   - the model awaits metadata (v1beta1.ModelAwaitsMetadata, the
//     webhook's rule: format, architecture or size undeclared, a storage
//     URI berth reads, MetadataResolved not True for its generation): the
//     service waits, Resolved=False reason ModelMetadataPending, with the
//     model's MetadataResolved message;
//   - it is known and the service's ome.io/model-metadata-revision differs
//     from the model's ModelMetadataRevision: nudge, i.e. patch that
//     annotation so the webhook decides on the UPDATE. Once it equals, the
//     webhook had its chance; the service is NotPinned as any other.
func modelWait(isvc *v1beta1.InferenceService, m *model) (nudge string, wait *unresolved) {
	if m == nil || pin.Pinned(isvc) {
		return "", nil
	}
	// The webhook's rule (v1beta1.ModelAwaitsMetadata), not "resolved": a
	// model nothing will discover (a node-local path, gs://, no storage)
	// is nudged at once, so the webhook's answer reaches the service.
	if awaits, _ := v1beta1.ModelAwaitsMetadata(m.spec, m.status, m.generation); awaits {
		why := "its metadata has not been read yet"
		if c := meta.FindStatusCondition(m.status.Conditions, v1beta1.ConditionMetadataResolved); c != nil && c.Message != "" {
			why = c.Reason + ": " + c.Message
		}
		return "", &unresolved{ReasonModelMetadataPending, fmt.Sprintf(
			"InferenceService %s/%s waits for the metadata of %s (%s); the webhook pins a runtime once it is known",
			isvc.Namespace, isvc.Name, m.ref(), why)}
	}
	if rev := plan.ModelMetadataRevision(m.spec, m.status); pin.NudgeBase(pin.ReadNudge(isvc).ModelRevision) != rev {
		return rev, nil
	}
	return "", nil
}

// nudge patches the nudge annotations on the service (serviceWait), so
// that the webhook resolves it on this UPDATE (nudged: the service's own
// event syncs it again). A refusal by the webhook is not retried with
// backoff (the next change of the service, its model or a runtime tries
// again): the service is Resolved=False reason ResolveRefused with the
// webhook's answer.
func (c *Controller) nudge(ctx context.Context, isvc *v1beta1.InferenceService, n *nudges) (*unresolved, bool, error) {
	body := n.set.MergePatch()
	c.m.write("patch", "inferenceservices")
	_, err := c.berth.OmeV1beta1().InferenceServices(isvc.Namespace).Patch(ctx, isvc.Name, types.MergePatchType, body, metav1.PatchOptions{})
	why := strings.Join(n.why, " and ")
	switch {
	case err == nil:
		c.m.nudges.Inc()
		reason := "RuntimeCreated"
		if n.model != nil {
			reason = "ModelMetadataResolved"
		}
		c.recorder.Eventf(isvc, corev1.EventTypeNormal, reason, "%s; asked the webhook to resolve the service", why)
		return nil, true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil, true, nil // gone, or changed: its own event syncs it again
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		return &unresolved{ReasonResolveRefused, fmt.Sprintf(
			"InferenceService %s/%s: %s, but the webhook refused to resolve the service: %v",
			isvc.Namespace, isvc.Name, why, err)}, false, nil
	}
	return nil, false, err
}
