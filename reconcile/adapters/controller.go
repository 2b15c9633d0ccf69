// Package adapters is the reconciler's LoRA adapters controller: it hands
// an InferenceService's spec.adapters to the engine runtime sidecars of
// its pods and reports what each sidecar's engine has loaded.
//
// Rules:
//
//   - A pod takes part when it has a downward API volume that projects the
//     annotation ome.io/lora-adapters (the engine runtime profiles in
//     deploy/profiles have one): only there can the sidecar read it.
//   - Handing over: the controller patches the pod's annotation
//     ome.io/lora-adapters to the JSON of spec.adapters ([] when none) and
//     the kubelet rewrites the projected file. The annotation is not part of
//     the pods' revision: adding or removing an adapter restarts nothing and
//     rolls nothing.
//   - Reporting: every PollInterval (while the service declares adapters
//     or still reports some) the controller reads each Running pod's
//     sidecar, GET http://<pod IP>:<port named "sidecar", else 8091>/adapters,
//     and writes status.adapters (one entry per pod: loaded, failed with
//     the engine's reason, or why the sidecar could not be read) with a
//     merge patch of the status subresource, only when it changed.
//   - A service without adapters whose pods report nothing loaded has no
//     status.adapters.
package adapters

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	berthinformers "github.com/berthdev/berth/api/client/informers/externalversions"
	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/byservice"
)

// Options configure the controller; zero values are the defaults.
type Options struct {
	// PollInterval is how often a service's sidecars are read (default 5s).
	PollInterval time.Duration
	// HTTPClient reads the sidecars (default: 3s timeout).
	HTTPClient *http.Client
	// Resync of the pod informer (default 10m).
	Resync time.Duration
	Log    *slog.Logger
	// Pods is the informer factory whose pod informer the controller
	// reads: one listing only pods with the ome.io/inferenceservice
	// label. The manager passes the serving groups controller's, so the
	// pods are cached once; nil makes one of the controller's own.
	Pods kubeinformers.SharedInformerFactory
}

// DefaultSidecarPort is the sidecar's port when its container names none
// "sidecar".
const DefaultSidecarPort = 8091

// Controller is the LoRA adapters controller.
type Controller struct {
	kube     kubernetes.Interface
	berth    versioned.Interface
	services listers.InferenceServiceLister
	podIndex cache.Indexer // pods by service (internal/byservice)
	podInf   kubeinformers.SharedInformerFactory
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	opts     Options
	log      *slog.Logger
}

// New builds the controller on the shared informer factory of berth's
// objects and the pod informer of o.Pods (pods of InferenceServices only).
func New(kube kubernetes.Interface, berth versioned.Interface, shared berthinformers.SharedInformerFactory, o Options) *Controller {
	if o.PollInterval <= 0 {
		o.PollInterval = 5 * time.Second
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 3 * time.Second}
	}
	if o.Resync <= 0 {
		o.Resync = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	podInf := o.Pods
	if podInf == nil {
		podInf = kubeinformers.NewSharedInformerFactoryWithOptions(kube, o.Resync, kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.LabelSelector = v1beta1.LabelInferenceService
		}))
	}
	isvcs := shared.Ome().V1beta1().InferenceServices()
	pods := podInf.Core().V1().Pods()
	utilruntime.Must(byservice.Add(pods.Informer()))
	c := &Controller{kube: kube, berth: berth, services: isvcs.Lister(), podIndex: pods.Informer().GetIndexer(), podInf: podInf,
		synced: []cache.InformerSynced{isvcs.Informer().HasSynced, pods.Informer().HasSynced},
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		opts:   o, log: o.Log.With("controller", "adapters")}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	_, err := isvcs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) }})
	utilruntime.Must(err)
	podEvent := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok && p.Labels[v1beta1.LabelInferenceService] != "" {
			c.queue.Add(p.Namespace + "/" + p.Labels[v1beta1.LabelInferenceService])
		}
	}
	_, err = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: podEvent,
		UpdateFunc: func(_, cur any) { podEvent(cur) }})
	utilruntime.Must(err)
	return c
}

// Run starts the informers and one worker until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	c.podInf.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("adapters caches did not sync: %w", ctx.Err())
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); wait.UntilWithContext(ctx, c.worker, time.Second) }()
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// Synced reports whether the caches have synced.
func (c *Controller) Synced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

func (c *Controller) worker(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		again, err := c.sync(ctx, key)
		switch {
		case err != nil:
			c.log.Error("syncing LoRA adapters failed", "service", key, "error", err.Error())
			c.queue.AddRateLimited(key)
		default:
			c.queue.Forget(key)
			if again {
				c.queue.AddAfter(key, c.opts.PollInterval)
			}
		}
		c.queue.Done(key)
	}
}

// sync hands spec.adapters to the service's sidecar pods and writes what
// they report; it says whether to poll again.
func (c *Controller) sync(ctx context.Context, key string) (bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return false, nil
	}
	isvc, err := c.services.InferenceServices(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	pods, err := byservice.For[*corev1.Pod](c.podIndex, ns, name)
	if err != nil {
		return false, err
	}
	want, err := Annotation(isvc.Spec.Adapters)
	if err != nil {
		return false, err
	}
	var sidecars []*corev1.Pod
	for _, p := range pods {
		if !Projects(p) || p.DeletionTimestamp != nil {
			continue
		}
		sidecars = append(sidecars, p)
		if p.Annotations[v1beta1.AnnotationLoRAAdapters] != want {
			if err := c.annotate(ctx, p, want); err != nil {
				return false, err
			}
		}
	}
	if len(isvc.Spec.Adapters) == 0 && len(isvc.Status.Adapters) == 0 {
		return false, nil
	}
	status := Collect(sidecars, func(p *corev1.Pod) (State, error) { return c.read(ctx, p) })
	if len(isvc.Spec.Adapters) == 0 && Idle(status) {
		status = nil
	}
	if err := c.writeStatus(ctx, isvc, status); err != nil {
		return false, err
	}
	return len(isvc.Spec.Adapters) > 0 || len(status) > 0, nil
}

func (c *Controller) annotate(ctx context.Context, p *corev1.Pod, want string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{v1beta1.AnnotationLoRAAdapters: want}}})
	if err != nil {
		return err
	}
	_, err = c.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		c.log.Info("LoRA adapters handed to the pod's sidecar", "pod", p.Namespace+"/"+p.Name, "adapters", want)
	}
	return err
}

// read asks one pod's sidecar for its LoRA state.
func (c *Controller) read(ctx context.Context, p *corev1.Pod) (State, error) {
	u := fmt.Sprintf("http://%s:%d/adapters", p.Status.PodIP, SidecarPort(p))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return State{}, err
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return State{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return State{}, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var st State
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&st); err != nil {
		return State{}, fmt.Errorf("GET %s: %v", u, err)
	}
	return st, nil
}

func (c *Controller) writeStatus(ctx context.Context, isvc *v1beta1.InferenceService, status []v1beta1.PodAdapters) error {
	if Equal(isvc.Status.Adapters, status) {
		return nil
	}
	var value any = status
	if status == nil {
		value = nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"adapters": value}})
	if err != nil {
		return err
	}
	_, err = c.berth.OmeV1beta1().InferenceServices(isvc.Namespace).Patch(ctx, isvc.Name, types.MergePatchType, patch,
		metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
