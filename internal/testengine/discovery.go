package testengine

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// WorkerFromPod is the pure rule of service discovery: a pod is a worker
// when it is Running, Ready, not terminating and has an IP; its URL is
// http://IP:port; a prefill's bootstrap port comes from the annotation
// (default 8998). Otherwise it says why the pod is not a worker.
func WorkerFromPod(pod *corev1.Pod, role string, port int, annotation string) (Worker, string) {
	switch {
	case pod.DeletionTimestamp != nil:
		return Worker{}, "terminating"
	case pod.Status.Phase != corev1.PodRunning:
		return Worker{}, fmt.Sprintf("phase %s, not Running", cmpOr(string(pod.Status.Phase), "unknown"))
	case !podReady(pod):
		return Worker{}, "not Ready"
	case pod.Status.PodIP == "":
		return Worker{}, "no pod IP"
	}
	w := Worker{URL: "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)), Role: role,
		Source: SourceDiscovery, Pod: pod.Namespace + "/" + pod.Name, Pairing: pod.Labels[LabelPairing]}
	if role == RolePrefill {
		w.BootstrapPort = DefaultBootstrapPort
		if v, ok := pod.Annotations[annotation]; ok {
			p, err := parsePort(v)
			if err != nil {
				return Worker{}, fmt.Sprintf("annotation %s: %v", annotation, err)
			}
			w.BootstrapPort = p
		}
	}
	return w, ""
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// discoveryRoles are the roles the router watches pods for, with their
// selectors.
func (r *Router) discoveryRoles() map[string]map[string]string {
	if r.cfg.PD {
		return map[string]map[string]string{RolePrefill: r.cfg.PrefillSelector, RoleDecode: r.cfg.DecodeSelector}
	}
	return map[string]map[string]string{RoleRegular: r.cfg.Selector}
}

// StartDiscovery watches the namespace's pods through client, one informer
// per role, until ctx ends. It returns the informers' synced functions.
func (r *Router) StartDiscovery(ctx context.Context, client kubernetes.Interface) []cache.InformerSynced {
	var synced []cache.InformerSynced
	for role, sel := range r.discoveryRoles() {
		selector := labels.SelectorFromSet(sel)
		// client-go v0.35 lists through a watch-list unless the client
		// says it cannot (a fake clientset says so, and would otherwise
		// never end the initial list).
		lw := cache.ToListWatcherWithWatchListSemantics(r.listWatch(client, role, selector.String()), client)
		inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { r.podSeen(role, selector, obj) },
			UpdateFunc: func(_, obj any) { r.podSeen(role, selector, obj) },
			DeleteFunc: func(obj any) { r.podGone(role, obj, "deleted") },
		})
		go inf.Run(ctx.Done())
		synced = append(synced, inf.HasSynced)
		r.log.Info("service discovery started", "role", role, "namespace", r.cfg.Namespace,
			"selector", formatSelector(sel), "port", r.cfg.DiscoveryPort)
	}
	return synced
}

// listWatch lists and watches one role's pods, recording whether the API
// lets the router do so (a ServiceAccount without a Role gets 403).
func (r *Router) listWatch(client kubernetes.Interface, role, selector string) *cache.ListWatch {
	pods := client.CoreV1().Pods(r.cfg.Namespace)
	note := func(err error) {
		if err == nil {
			r.setDiscoveryError(role, "")
			return
		}
		msg := fmt.Sprintf("cannot list pods in namespace %s for %s workers (selector %s): %v", r.cfg.Namespace, role, selector, err)
		if apierrors.IsForbidden(err) {
			msg += "; the router's ServiceAccount needs get, list and watch on pods in that namespace (a Role and RoleBinding; the default ServiceAccount has none)"
		}
		r.setDiscoveryError(role, msg)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			l, err := pods.List(ctx, opts)
			note(err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			w, err := pods.Watch(ctx, opts)
			note(err)
			return w, err
		},
	}
}

// podSeen adds or drops the worker a pod is for role. The API filters by
// the selector already; the check here keeps a role's workers its own
// whatever a watch delivers.
func (r *Router) podSeen(role string, selector labels.Selector, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !selector.Matches(labels.Set(pod.Labels)) {
		return
	}
	w, why := WorkerFromPod(pod, role, r.cfg.DiscoveryPort, r.cfg.BootstrapPortAnnotation)
	if why != "" {
		if pod.Status.PodIP != "" && podReady(pod) {
			r.log.Warn("ready pod is not a worker", "pod", pod.Namespace+"/"+pod.Name, "role", role, "reason", why)
		}
		r.podGone(role, pod, why)
		return
	}
	if r.workers.put(w) {
		r.log.Info("worker added", "url", w.URL, "role", role, "pod", w.Pod, "bootstrap_port", w.BootstrapPort, "source", SourceDiscovery)
	}
}

// podGone drops the worker a pod was for role.
func (r *Router) podGone(role string, obj any, why string) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if w, ok := r.workers.removePod(pod.Namespace+"/"+pod.Name, role); ok {
		r.log.Info("worker removed", "url", w.URL, "role", w.Role, "pod", w.Pod, "reason", why, "source", SourceDiscovery)
	}
}
