package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	berthscheme "github.com/berthdev/berth/api/client/clientset/versioned/scheme"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/fleet"
)

// Bounds of the counts the flags accept.
const (
	maxPods     = 30000
	maxServices = 5000
	podsPerNode = 110
)

// Names of what the tool creates.
const (
	modelName   = "load-tiny-llama"
	runtimeName = "load-cpu-rt"
	engineImage = "registry.berth.dev/load/engine:v1"
	loadLabel   = "berth.dev/load"
	fieldOwner  = "berth-reconcile-load"
)

// load is a running environment and the clients of the tool.
type load struct {
	cfg   config
	env   *devenv.Env
	rec   *devenv.ProcessComponent
	nodes int
	// kube and berth are the tool's own clients, with a high client-side
	// limit so that they never hold back a measurement; the raw loop has
	// its own (rawClient).
	kube  kubernetes.Interface
	berth versioned.Interface
}

// start runs devenv.Up with the webhook, the reconciler (the client QPS
// and burst passed explicitly) and a fleet sized for the largest phase,
// then creates the model and the runtime every service uses.
func start(ctx context.Context, cfg config) (*load, error) {
	webhookBin, err := devenv.FindComponent("berth-webhook")
	if err != nil {
		return nil, err
	}
	recBin, err := devenv.FindComponent("berth-reconciler")
	if err != nil {
		return nil, err
	}
	rec := devenv.Reconciler(recBin, reconcilerArgs(cfg)...)
	nodes := fleetNodes(cfg)
	progress("starting the local control plane, %d kwok nodes, %s and %s (%s)", nodes, webhookBin, recBin, strings.Join(rec.Args, " "))
	env, err := devenv.Up(ctx, devenv.Options{
		Components: []devenv.Component{devenv.Webhook(webhookBin), rec},
		Fleet:      loadFleet(nodes),
		KeepRunDir: cfg.keep,
		Log:        os.Stderr,
	})
	if err != nil {
		return nil, err
	}
	l := &load{cfg: cfg, env: env, rec: rec, nodes: nodes}
	if err := l.clients(); err != nil {
		env.Stop()
		return nil, err
	}
	if err := l.fixtures(ctx); err != nil {
		env.Stop()
		return nil, err
	}
	progress("ready; component logs in %s", env.Cluster.RunDir)
	return l, nil
}

// reconcilerArgs are berth up's (Lease in kube-system, a fixed identity)
// plus the client limits, passed explicitly so the raw loop can match them,
// and the resync period, so the report can tell when one falls in the
// idle window.
func reconcilerArgs(cfg config) []string {
	args := []string{
		"--leader-elect-namespace=kube-system", "--leader-elect-identity=reconcile-load",
		"--kube-api-qps=" + strconv.FormatFloat(cfg.qps, 'g', -1, 64),
		"--kube-api-burst=" + strconv.Itoa(cfg.burst),
		"--resync=" + cfg.resync.String(),
	}
	if cfg.pprofAddress != "" {
		args = append(args, "--pprof-address="+cfg.pprofAddress)
	}
	return args
}

func (l *load) clients() error {
	cfg := l.env.Cluster.RESTConfig()
	cfg.QPS, cfg.Burst, cfg.UserAgent = 1000, 2000, fieldOwner
	var err error
	if l.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	l.berth, err = versioned.NewForConfig(cfg)
	return err
}

// rawClient is the raw loop's client: the reconciler's QPS and burst.
func (l *load) rawClient() (kubernetes.Interface, error) {
	cfg := l.env.Cluster.RESTConfig()
	cfg.QPS, cfg.Burst, cfg.UserAgent = float32(l.cfg.qps), l.cfg.burst, fieldOwner+"-raw"
	return kubernetes.NewForConfig(rest.CopyConfig(cfg))
}

// fleetNodes is enough nodes for the largest phase at 100 pods a node.
func fleetNodes(cfg config) int {
	most := cfg.applyServices
	for _, n := range cfg.groups {
		most = max(most, n)
	}
	if cfg.runs(phaseIdle) {
		most = max(most, cfg.idleServices*cfg.idleReplicas)
	}
	return most/100 + 1
}

// loadFleet is one pool of CPU-only nodes: the test runtime asks for no
// GPU, so its pods fit anywhere and only the pod count limits a node.
func loadFleet(nodes int) *fleet.Fleet {
	return &fleet.Fleet{
		Zones: []string{"us-west-2a", "us-west-2b"},
		Pools: []fleet.Pool{{
			Name: "load", Count: nodes,
			Labels:      map[string]string{"node-type": "cpu-only"},
			Allocatable: map[string]string{"cpu": "64", "memory": "256Gi", "pods": strconv.Itoa(podsPerNode)},
		}},
	}
}

// serviceIPs is how many ClusterIPs the local control plane hands out
// besides the "kubernetes" Service's: every InferenceService gets one (its
// front Service), so more services than this never settle.
func serviceIPs() int {
	_, n, err := net.ParseCIDR(cluster.ServiceCIDR)
	if err != nil {
		return 0
	}
	ones, bits := n.Mask.Size()
	return 1<<(bits-ones) - 3 // network and broadcast addresses, and "kubernetes"
}

func ptr[T any](v T) *T { return &v }

// fixtures creates the ClusterBaseModel and the test-only runtime: no GPU,
// never auto-selected, so only services naming it use it.
func (l *load) fixtures(ctx context.Context) error {
	spec := v1beta1.BaseModelSpec{
		ModelFormat:        v1beta1.ModelFormat{Name: "safetensors", Version: ptr("1.0.0")},
		ModelFramework:     &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: ptr("4.57.1")},
		ModelArchitecture:  ptr("LlamaForCausalLM"),
		ModelParameterSize: ptr("1.24B"),
	}
	model := &v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: modelName}, Spec: spec}
	rt := &v1beta1.ClusterServingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: runtimeName, Labels: map[string]string{loadLabel: "runtime"}},
		Spec: v1beta1.ServingRuntimeSpec{
			SupportedModelFormats: []v1beta1.SupportedModelFormat{{
				ModelFormat:       &spec.ModelFormat,
				ModelFramework:    spec.ModelFramework,
				ModelArchitecture: spec.ModelArchitecture,
				AutoSelect:        ptr(false),
			}},
			ProtocolVersions: []v1beta1.ProtocolVersion{"openAI"},
			EngineConfig: &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{
				Image: engineImage,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			}},
		},
	}
	for _, obj := range []runtime.Object{model, rt} {
		if err := l.apply(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// service is an InferenceService of the tiny model on the test runtime
// with replicas single-pod engine groups (maxReplicas the same).
func service(ns, name string, replicas int) *v1beta1.InferenceService {
	r := int32(replicas)
	return &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{loadLabel: "service"}},
		Spec: v1beta1.InferenceServiceSpec{
			Model:   &v1beta1.ModelRef{Name: modelName, Kind: ptr("ClusterBaseModel")},
			Runtime: &v1beta1.ServingRuntimeRef{Name: runtimeName},
			Engine:  &v1beta1.EngineSpec{ComponentExtensionSpec: v1beta1.ComponentExtensionSpec{Replicas: &r, MaxReplicas: &r}},
		},
	}
}

// apply server-side-applies obj with env.Applier (what kubectl apply
// --server-side sends). A denial or an unreachable webhook is retried for
// 30s: right after the runtime is created the webhook's cache may lag.
func (l *load) apply(ctx context.Context, obj runtime.Object) error {
	gvks, _, err := berthscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	delete(m, "status")
	u := install.Object{Source: fieldOwner, Unstructured: &unstructured.Unstructured{Object: m}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := l.env.Applier.Apply(ctx, u)
		transient := err != nil && (strings.Contains(err.Error(), "denied") || strings.Contains(err.Error(), "failed calling webhook"))
		if !transient || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// namespace creates ns (deleted first if it is left from before).
func (l *load) namespace(ctx context.Context, ns string) error {
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{loadLabel: "namespace"}}}
	_, err := l.kube.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldOwner})
	return err
}

// deleteNamespace deletes ns and waits until it is gone (its pods
// included: kwok finishes their graceful deletion).
func (l *load) deleteNamespace(ctx context.Context, ns string) error {
	t := time.Now()
	err := l.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for last := time.Now(); ; {
		_, err := l.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			progress("namespace %s deleted in %s", ns, since(t))
			return nil
		}
		if time.Since(t) > l.cfg.wait {
			return fmt.Errorf("namespace %s still there %s after its deletion", ns, l.cfg.wait)
		}
		if time.Since(last) > 15*time.Second {
			last = time.Now()
			progress("waiting for namespace %s to be deleted (%s)", ns, since(t))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }
