package models

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	berthinformers "github.com/berthdev/berth/api/client/informers/externalversions"
	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/events"
	"github.com/berthdev/berth/reconcile/plan"
)

// Options configure the model metadata controller. Zero values are the
// defaults.
type Options struct {
	// HFEndpoint is the Hugging Face Hub (or mirror) hf:// models are read
	// from (default https://huggingface.co); storage.parameters.endpoint
	// overrides it per model.
	HFEndpoint string
	// CredentialsNamespace holds the Secrets (storage.key) and runs the
	// inspector Jobs of ClusterBaseModels (default berth-system). A
	// BaseModel's are in its own namespace.
	CredentialsNamespace string
	// DiscoveryTimeout bounds one discovery, and an inspector Job's run
	// (default 2m).
	DiscoveryTimeout time.Duration
	// RetryBase and RetryMax shape the backoff between failed discoveries
	// (defaults 5s and 10m).
	RetryBase, RetryMax time.Duration
	// InspectorImage runs `berth model inspect` in the Job that reads a
	// pvc:// model; "" leaves pvc:// models Unsupported.
	InspectorImage string
	// HTTPClient reads hf:// and s3:// (default: a client with a 30s
	// timeout per request).
	HTTPClient *http.Client
	// NamespacedEndpoints are the base URLs a BaseModel's
	// storage.parameters.endpoint may name (a ClusterBaseModel's may name
	// any); another is MetadataResolved=False reason EndpointNotAllowed.
	NamespacedEndpoints []string

	// Resync re-lists models this often when New makes its own informer
	// factory (default 10m).
	Resync time.Duration
	Log    *slog.Logger
	// Metrics: the discovery counters (default: on a registry of their own).
	Metrics *Metrics
	// Writes counts one API write by verb and resource (the manager wires
	// the reconciler's berth_reconciler_api_writes_total); nil counts none.
	Writes func(verb, resource string)
	// Now is the clock (tests).
	Now func() time.Time
}

// DefaultHFEndpoint is the Hugging Face Hub.
const DefaultHFEndpoint = "https://huggingface.co"

func (o Options) withDefaults() Options {
	if o.HFEndpoint == "" {
		o.HFEndpoint = DefaultHFEndpoint
	}
	if o.CredentialsNamespace == "" {
		o.CredentialsNamespace = "berth-system"
	}
	if o.DiscoveryTimeout == 0 {
		o.DiscoveryTimeout = 2 * time.Minute
	}
	if o.RetryBase == 0 {
		o.RetryBase = 5 * time.Second
	}
	if o.RetryMax == 0 {
		o.RetryMax = 10 * time.Minute
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Resync == 0 {
		o.Resync = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	if o.Writes == nil {
		o.Writes = func(string, string) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Controller is the model metadata controller: it writes the status of
// BaseModels and ClusterBaseModels (see the package documentation).
type Controller struct {
	kube  kubernetes.Interface
	berth versioned.Interface
	opts  Options
	log   *slog.Logger
	m     *Metrics
	now   func() time.Time

	informers     berthinformers.SharedInformerFactory
	baseModels    listers.BaseModelLister
	clusterModels listers.ClusterBaseModelLister
	synced        []cache.InformerSynced
	// queue holds model keys (modelKey); failed discoveries back off
	// exponentially (RetryBase doubling up to RetryMax).
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	events   record.EventBroadcaster
}

// New wires the model informers of informers (a shared factory the
// manager passes; nil makes one), the queue and the event recorder.
func New(kube kubernetes.Interface, berth versioned.Interface, informers berthinformers.SharedInformerFactory, opts Options) *Controller {
	opts = opts.withDefaults()
	if informers == nil {
		informers = berthinformers.NewSharedInformerFactory(berth, opts.Resync)
	}
	c := &Controller{kube: kube, berth: berth, opts: opts, log: opts.Log, m: opts.Metrics, now: opts.Now, informers: informers}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.RetryBase, opts.RetryMax),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "models"})
	c.wireInformers()
	c.events, c.recorder = events.New()
	return c
}

// Run starts the informers and workers (default 2 when workers < 1) and
// blocks until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if workers < 1 {
		workers = 2
	}
	c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kube.CoreV1().Events("")})
	defer c.events.Shutdown()
	c.informers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("model caches did not sync: %w", ctx.Err())
	}
	c.log.Info("model caches synced; reading metadata", "workers", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, c.worker, time.Second)
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// Synced reports whether the model caches have synced (readiness).
func (c *Controller) Synced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Kinds of models.
const (
	KindBaseModel        = "BaseModel"
	KindClusterBaseModel = "ClusterBaseModel"
)

// model is a BaseModel or a ClusterBaseModel as the controller sees it:
// copies, never the cache's objects.
type model struct {
	kind, namespace, name string
	generation            int64
	uid                   string
	spec                  v1beta1.BaseModelSpec
	status                v1beta1.ModelStatus
	base                  *v1beta1.BaseModel
	cluster               *v1beta1.ClusterBaseModel
}

func (m *model) ref() string {
	if m.kind == KindBaseModel {
		return m.kind + " " + m.namespace + "/" + m.name
	}
	return m.kind + " " + m.name
}

func (m *model) meta() metav1.Object {
	if m.base != nil {
		return m.base
	}
	return m.cluster
}

func (m *model) key() string { return modelKey(m.kind, m.namespace, m.name) }

// modelKey is the model queue's key: BaseModel/<ns>/<name> or
// ClusterBaseModel/<name>.
func modelKey(kind, namespace, name string) string {
	if kind == KindBaseModel {
		return kind + "/" + namespace + "/" + name
	}
	return kind + "/" + name
}

func splitModelKey(key string) (kind, namespace, name string, err error) {
	parts := strings.Split(key, "/")
	switch {
	case len(parts) == 3 && parts[0] == KindBaseModel && parts[1] != "" && parts[2] != "":
		return parts[0], parts[1], parts[2], nil
	case len(parts) == 2 && parts[0] == KindClusterBaseModel && parts[1] != "":
		return parts[0], "", parts[1], nil
	}
	return "", "", "", fmt.Errorf("malformed model key %q", key)
}

func modelFromObject(obj any) *model {
	switch o := obj.(type) {
	case *v1beta1.BaseModel:
		o = o.DeepCopy()
		return &model{kind: KindBaseModel, namespace: o.Namespace, name: o.Name, generation: o.Generation, uid: string(o.UID),
			spec: o.Spec, status: o.Status, base: o}
	case *v1beta1.ClusterBaseModel:
		o = o.DeepCopy()
		return &model{kind: KindClusterBaseModel, name: o.Name, generation: o.Generation, uid: string(o.UID),
			spec: o.Spec, status: o.Status, cluster: o}
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

// wireInformers watches BaseModels and ClusterBaseModels. A model is
// queued when it is added, deleted, its spec (generation) or metadata
// changes, or on a resync, not when only its status changed (that is our
// own write, and retries keep their backoff).
func (c *Controller) wireInformers() {
	om := c.informers.Ome().V1beta1()
	bms, cbms := om.BaseModels(), om.ClusterBaseModels()
	c.baseModels, c.clusterModels = bms.Lister(), cbms.Lister()
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.modelChanged(nil, o) },
		UpdateFunc: c.modelChanged,
		DeleteFunc: func(o any) { c.modelChanged(nil, o) },
	}
	for _, inf := range []cache.SharedIndexInformer{bms.Informer(), cbms.Informer()} {
		_, err := inf.AddEventHandler(handler)
		utilruntime.Must(err)
		c.synced = append(c.synced, inf.HasSynced)
	}
}

func (c *Controller) modelChanged(old, cur any) {
	m := modelFromObject(cur)
	if m == nil {
		return
	}
	om, _ := old.(metav1.Object)
	nm, _ := cur.(metav1.Object)
	switch {
	case om == nil || nm == nil || om.GetResourceVersion() == nm.GetResourceVersion():
		c.queue.Add(m.key()) // added, deleted or a resync
	case om.GetGeneration() != nm.GetGeneration() ||
		!maps.Equal(om.GetLabels(), nm.GetLabels()) || !maps.Equal(om.GetAnnotations(), nm.GetAnnotations()):
		c.queue.Add(m.key())
	}
}

// worker runs the queue.
func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	res, err := c.syncModel(ctx, key)
	switch {
	case err != nil:
		c.log.Error("model sync failed; retrying with backoff", "model", key, "err", err)
		c.queue.AddRateLimited(key)
	case res.failed:
		c.log.Info("model metadata not resolved; retrying with backoff", "model", key, "reason", res.reason,
			"retry", c.queue.NumRequeues(key)+1)
		c.queue.AddRateLimited(key)
	case res.requeue > 0:
		c.queue.AddAfter(key, res.requeue)
	default:
		c.queue.Forget(key)
	}
	return true
}

// modelResult is how one model sync ended.
type modelResult struct {
	// failed: discovery failed (reason); retry with backoff.
	failed bool
	reason string
	// requeue: look again after this long (an inspector Job runs).
	requeue time.Duration
}

// syncModel runs one step of the model controller (plan.PlanModel): a
// status write without I/O, a discovery through a Source, or the
// inspector Job of a pvc:// model. Status is written only when it changed.
func (c *Controller) syncModel(ctx context.Context, key string) (modelResult, error) {
	kind, ns, name, err := splitModelKey(key)
	if err != nil {
		return modelResult{}, nil // a malformed key never becomes valid
	}
	m, err := c.getModel(kind, ns, name)
	if err != nil || m == nil {
		return modelResult{}, err
	}
	facts := plan.ModelFacts{Generation: m.generation, Spec: m.spec, Status: m.status,
		InspectPVC: c.opts.InspectorImage != "", Now: c.now()}
	p := plan.PlanModel(facts)
	var out plan.ModelOutcome
	switch p.Action {
	case plan.ModelUpToDate:
		return modelResult{}, nil
	case plan.ModelWrite:
		return c.finishModel(ctx, m, p.Status, modelOutcomeOf(p.Status))
	case plan.ModelDiscover:
		start := time.Now()
		out = c.discover(ctx, m, p.Location)
		c.m.observeDiscovery(time.Since(start))
	case plan.ModelInspect:
		var requeue time.Duration
		if out, requeue, err = c.inspect(ctx, m, p.Location); err != nil {
			return modelResult{}, err
		}
		if out.Reason == plan.ReasonInspecting {
			res, err := c.finishModel(ctx, m, plan.ModelStatusAfter(facts, out), out)
			res.requeue = requeue
			return res, err
		}
	}
	return c.finishModel(ctx, m, plan.ModelStatusAfter(facts, out), out)
}

// modelOutcomeOf reads back the outcome a planned status carries.
func modelOutcomeOf(st v1beta1.ModelStatus) plan.ModelOutcome {
	for _, cond := range st.Conditions {
		if cond.Type == v1beta1.ConditionMetadataResolved {
			return plan.ModelOutcome{Reason: cond.Reason, Message: cond.Message}
		}
	}
	return plan.ModelOutcome{}
}

// finishModel counts the outcome, writes the status if it changed, and
// says whether to retry.
func (c *Controller) finishModel(ctx context.Context, m *model, want v1beta1.ModelStatus, out plan.ModelOutcome) (modelResult, error) {
	result := out.Reason
	if out.Metadata != nil {
		result = plan.ReasonDiscovered
	}
	if result != plan.ReasonInspecting {
		c.m.discovery(result)
	}
	if err := c.writeModelStatus(ctx, m, want); apierrors.IsConflict(err) {
		// Changed meanwhile; a status-only change queues nothing, so
		// look again soon rather than lose what was read.
		return modelResult{requeue: time.Second}, nil
	} else if err != nil {
		return modelResult{}, err
	}
	if out.Metadata == nil && result != plan.ReasonDeclared && result != plan.ReasonInspecting {
		return modelResult{failed: true, reason: result}, nil
	}
	return modelResult{}, nil
}

// writeModelStatus updates the status subresource when it changed, with
// an event when MetadataResolved changes its status or reason.
func (c *Controller) writeModelStatus(ctx context.Context, m *model, want v1beta1.ModelStatus) error {
	if apiequality.Semantic.DeepEqual(m.status, want) {
		return nil
	}
	c.modelEvent(m, want)
	c.opts.Writes("update", strings.ToLower(m.kind)+"s/status")
	var err error
	if m.kind == KindBaseModel {
		o := m.base.DeepCopy()
		o.Status = want
		_, err = c.berth.OmeV1beta1().BaseModels(m.namespace).UpdateStatus(ctx, o, metav1.UpdateOptions{})
	} else {
		o := m.cluster.DeepCopy()
		o.Status = want
		_, err = c.berth.OmeV1beta1().ClusterBaseModels().UpdateStatus(ctx, o, metav1.UpdateOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil // gone
	}
	return err
}

// modelEvent records one event when MetadataResolved changes: Normal
// when it becomes True, Warning when False.
func (c *Controller) modelEvent(m *model, want v1beta1.ModelStatus) {
	var old, cur *metav1.Condition
	for i := range m.status.Conditions {
		if m.status.Conditions[i].Type == v1beta1.ConditionMetadataResolved {
			old = &m.status.Conditions[i]
		}
	}
	for i := range want.Conditions {
		if want.Conditions[i].Type == v1beta1.ConditionMetadataResolved {
			cur = &want.Conditions[i]
		}
	}
	if cur == nil || old != nil && old.Status == cur.Status && old.Reason == cur.Reason {
		return
	}
	var obj runtime.Object = m.base
	if m.cluster != nil {
		obj = m.cluster
	}
	switch cur.Status {
	case metav1.ConditionTrue:
		c.recorder.Event(obj, corev1.EventTypeNormal, "Metadata"+cur.Reason, cur.Message)
	case metav1.ConditionFalse:
		c.recorder.Event(obj, corev1.EventTypeWarning, cur.Reason, cur.Message)
	}
}
