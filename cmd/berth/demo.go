package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/pin"
)

func init() {
	register(command{
		Name:    "demo",
		Summary: "start a local cluster with a fake GPU fleet, install berth, apply a sample InferenceService and tell what happened; runs until Ctrl-C",
		Run:     runDemo,
	})
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("berth demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keep := fs.Bool("keep", false, "keep certificates, etcd data and logs after exit")
	timeout := fs.Duration("timeout", 90*time.Second, "how long each process may take to become ready")
	realNode := fs.Bool("real-node", true, "also run a real node (containerd, kubelet, kube-proxy, CoreDNS) where this machine can (root, cgroups, make images); where it cannot, say why and go on with the kwok fleet")
	verbose := fs.Bool("v", false, "print each start-up step")
	if err := fs.Parse(args); err != nil {
		return err
	}
	progress := io.Discard
	if *verbose {
		progress = stderr
	}
	// Warnings the apiserver relays (berth's webhooks explain choices this
	// way) belong in the story, not in klog lines on stderr.
	rest.SetDefaultWarningHandler(apiWarnings)
	comps, err := components()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "berth demo: starting a Kubernetes control plane on 127.0.0.1 (the first run builds it; that takes a while)...")
	// Deaths and restarts of components are part of what a person watches,
	// with or without -v.
	env, err := devenv.Up(ctx, devenv.Options{Components: comps, Timeout: *timeout, KeepRunDir: *keep, RealNode: realNodeMode(*realNode), Log: progress, Events: stderr})
	if err != nil {
		return err
	}
	defer env.Stop()
	story(ctx, stdout, env)
	return waitForExit(ctx, stderr, env)
}

// story applies the out-of-box objects and the sample and prints, step by
// step, what the cluster did with them. Failures are part of the story:
// the demo goes on and says what was refused and why.
func story(ctx context.Context, w io.Writer, env *devenv.Env) {
	n := 0
	say := func(format string, a ...any) {
		n++
		fmt.Fprintf(w, "\n%d. %s\n", n, fmt.Sprintf(format, a...))
	}
	var plane time.Duration
	for _, t := range env.Timings {
		if t.Step == "control plane" {
			plane = t.Duration
		}
	}
	say("Kubernetes v1.34.4 is up in %s: etcd, kube-apiserver, kube-scheduler, kube-controller-manager, and kwok faking the nodes.",
		plane.Round(100*time.Millisecond))

	say("The apiserver serves berth's %d CRDs: %s.", len(env.CRDs), strings.Join(env.CRDs, ", "))
	if env.CRDErr != nil {
		fmt.Fprintf(w, "   Refused (this is a bug in deploy/crds):\n%s\n", indent(env.CRDErr.Error()))
	}

	nodes := env.Fleet.Nodes()
	say("A fake GPU fleet of %d nodes joined, all Ready:\n%s", len(nodes), indent(strings.Join(env.Fleet.Summary(), "\n")))

	if len(env.Components) == 0 {
		say("No berth component runs yet: objects are checked by the CRD schemas only, and nothing resolves runtimes or accelerators.")
	} else {
		say("berth components running: %s (restarted with backoff if they die).", strings.Join(env.ComponentNames(), ", "))
	}

	for _, dir := range []string{"runtimes", "accelerators"} {
		ok, refused := applyDir(ctx, env, dir)
		say("Applied deploy/%s: %d accepted by the apiserver (%s).", dir, len(ok), countKinds(ok))
		for _, r := range refused {
			fmt.Fprintf(w, "   refused: %s\n", r)
		}
	}

	apiWarnings.drain() // warnings of the out-of-box objects are not the sample's
	ok, refused := applyDir(ctx, env, "samples")
	say("Applied the sample deploy/samples: %s.", strings.Join(ok, ", "))
	for _, r := range refused {
		fmt.Fprintf(w, "   refused: %s\n", r)
	}
	for _, msg := range apiWarnings.drain() {
		fmt.Fprintf(w, "   apiserver warning: %s\n", msg)
	}
	describeSample(ctx, w, env)
	webhookStory(ctx, w, env, say)

	name, node, took, err := gpuProbe(ctx, env)
	if err != nil {
		say("A plain pod asking for 2 × nvidia.com/gpu on the H100 pool did not run: %v", err)
	} else {
		say("A plain pod %s asking for 2 × nvidia.com/gpu on the H100 pool was bound by the scheduler to %s and Running in %s.",
			name, node, took.Round(100*time.Millisecond))
	}
	gangStory(ctx, w, env, say)
	realNodeStory(ctx, w, env, say)

	fmt.Fprintf(w, "\nTry it:\n  export KUBECONFIG=%s\n", env.Cluster.KubeconfigPath)
	fmt.Fprintln(w, "  kubectl get nodes -L nvidia.com/gpu.product,amd.com/gpu.product")
	fmt.Fprintln(w, "  kubectl get inferenceservices,clusterservingruntimes,acceleratorclasses")
	fmt.Fprintf(w, "Logs: %s. Press Ctrl-C to stop; everything is removed.\n", env.Cluster.RunDir)
}

// applyDir applies every object of deploy/<dir> and returns the accepted
// ones ("Kind/name") and one line per refusal.
func applyDir(ctx context.Context, env *devenv.Env, dir string) (ok, refused []string) {
	objs, err := devenv.Manifests(dir)
	if err != nil {
		return nil, []string{err.Error()}
	}
	for _, o := range objs {
		if _, err := env.Applier.Apply(ctx, o); err != nil {
			refused = append(refused, err.Error())
			continue
		}
		ok = append(ok, o.GetKind()+"/"+o.GetName())
	}
	return ok, refused
}

// describeSample reports what happened to the sample InferenceService:
// the decision berth pinned, if a webhook runs, and the pods created for it.
func describeSample(ctx context.Context, w io.Writer, env *devenv.Env) {
	objs, err := devenv.Manifests("samples")
	if err != nil {
		return
	}
	for _, o := range objs {
		if o.GetKind() != "InferenceService" {
			continue
		}
		res, err := env.Applier.Resource(o.Unstructured)
		if err != nil {
			continue
		}
		got, err := res.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(w, "   InferenceService %s: not stored (%v)\n", o.GetName(), err)
			continue
		}
		if p, _ := pin.Read(got); pin.Pinned(got) {
			fmt.Fprintf(w, "   InferenceService %s/%s: berth chose runtime %s and AcceleratorClass %s.\n",
				got.GetNamespace(), got.GetName(), p.Runtime(), p.AcceleratorClass)
		} else {
			fmt.Fprintf(w, "   InferenceService %s/%s is stored as written: no berth webhook has resolved its runtime and AcceleratorClass.\n",
				got.GetNamespace(), got.GetName())
		}
		if runs(env, "berth-reconciler") {
			waitSample(ctx, w, env, got.GetNamespace(), got.GetName())
		}
	}
}

// waitSample waits (up to 2 minutes) for the reconciler to bring the sample
// to Ready, then shows its pods and the service as kubectl get shows it.
func waitSample(ctx context.Context, w io.Writer, env *devenv.Env, ns, name string) {
	res, err := env.Applier.Resource(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1beta1.SchemeGroupVersion.String(), "kind": "InferenceService", "metadata": map[string]any{"namespace": ns}}})
	if err != nil {
		return
	}
	var svc v1beta1.InferenceService
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if u, err := res.Get(ctx, name, metav1.GetOptions{}); err == nil {
			svc = v1beta1.InferenceService{}
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &svc)
			if c := meta.FindStatusCondition(svc.Status.Conditions, v1beta1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	pods, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelInferenceService + "=" + name})
	if err == nil {
		for i := range pods.Items {
			describePod(w, &pods.Items[i])
		}
	}
	ready := meta.FindStatusCondition(svc.Status.Conditions, v1beta1.ConditionReady)
	if ready == nil {
		fmt.Fprintf(w, "   The reconciler has not reported on %s/%s yet.\n", ns, name)
		return
	}
	fmt.Fprintf(w, "   kubectl get isvc: READY %s, STATUS %s, URL %s\n   Ready=%s: %s\n",
		orNone(svc.Status.Ready), ready.Reason, orNone(svc.Status.URL), ready.Status, ready.Message)
}

// gpuProbe runs a plain 2-GPU pod on the H100 pool and deletes it again.
func gpuProbe(ctx context.Context, env *devenv.Env) (name, node string, took time.Duration, err error) {
	two := *resource.NewQuantity(2, resource.DecimalSI)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "gpu-probe-", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
			Containers: []corev1.Container{{Name: "probe", Image: "busybox",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": two}}}},
		},
	}
	start := time.Now()
	created, err := env.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", "", 0, err
	}
	defer env.Kube.CoreV1().Pods("default").Delete(context.Background(), created.Name, metav1.DeleteOptions{})
	for time.Since(start) < 30*time.Second && ctx.Err() == nil {
		p, err := env.Kube.CoreV1().Pods("default").Get(ctx, created.Name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			return p.Name, p.Spec.NodeName, time.Since(start), nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return created.Name, "", 0, fmt.Errorf("pod %s not Running after 30s", created.Name)
}

// countKinds turns ["A/x", "A/y", "B/z"] into "2 A, 1 B" (kinds in first-seen order).
func countKinds(refs []string) string {
	var kinds []string
	count := map[string]int{}
	for _, r := range refs {
		kind, _, _ := strings.Cut(r, "/")
		if count[kind] == 0 {
			kinds = append(kinds, kind)
		}
		count[kind]++
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", count[k], k)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// warningCollector keeps the warnings the apiserver sends with responses.
type warningCollector struct {
	mu   sync.Mutex
	msgs []string
}

var apiWarnings = &warningCollector{}

func (c *warningCollector) HandleWarningHeader(code int, agent, message string) {
	if code != 299 || message == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, message)
}

// drain returns the warnings collected so far, without repeats, and forgets them.
func (c *warningCollector) drain() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, m := range c.msgs {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	c.msgs = nil
	return out
}

func indent(s string) string {
	return "   " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n   ")
}

func orNone(s string) string {
	if s == "" {
		return "(not scheduled)"
	}
	return s
}
