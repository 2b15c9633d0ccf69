package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/fleet"
)

const (
	namespace  = "accel-load"
	fieldOwner = "berth-accelerator-load"
)

// pool is one GPU product of the fleet and its class.
type pool struct {
	name, product, productLabel, resource, model string
}

var pools = []pool{
	{"h100", "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.product", "nvidia.com/gpu", "h100"},
	{"a100", "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.product", "nvidia.com/gpu", "a100"},
	{"h200", "NVIDIA-H200", "nvidia.com/gpu.product", "nvidia.com/gpu", "h200"},
	{"mi300x", "AMD-Instinct-MI300X", "amd.com/gpu.product", "amd.com/gpu", "mi300x"},
}

// broadClass discovers every NVIDIA node: several products.
const broadClass = "load-nvidia-any"

type load struct {
	cfg   config
	env   *devenv.Env
	rec   *devenv.ProcessComponent
	kube  kubernetes.Interface
	berth versioned.Interface
	nodes []corev1.Node // the fleet's nodes
	seq   atomic.Int64  // pod names
	mu    sync.Mutex
	live  []string // names of live pods
}

func start(ctx context.Context, cfg config) (*load, error) {
	bin, err := devenv.FindComponent("berth-reconciler")
	if err != nil {
		return nil, err
	}
	rec := devenv.Reconciler(bin, "--leader-elect=false", "--kube-api-qps=200", "--kube-api-burst=400",
		"--accelerator-status-interval="+cfg.interval.String())
	f := gpuFleet(cfg.nodes)
	progress("starting the local control plane, %d kwok GPU nodes and %s (%s)", cfg.nodes, bin, strings.Join(rec.Args, " "))
	env, err := devenv.Up(ctx, devenv.Options{Components: []devenv.Component{rec}, Fleet: f, KeepRunDir: cfg.keep, Log: os.Stderr})
	if err != nil {
		return nil, err
	}
	l := &load{cfg: cfg, env: env, rec: rec, nodes: f.Nodes()}
	rc := env.Cluster.RESTConfig()
	rc.QPS, rc.Burst, rc.UserAgent = 1000, 2000, fieldOwner
	if l.kube, err = kubernetes.NewForConfig(rc); err == nil {
		l.berth, err = versioned.NewForConfig(rc)
	}
	if err == nil {
		err = l.fixtures(ctx)
	}
	if err != nil {
		env.Stop()
		return nil, err
	}
	progress("ready; component logs in %s", env.Cluster.RunDir)
	return l, nil
}

// gpuFleet splits nodes over the four pools.
func gpuFleet(nodes int) *fleet.Fleet {
	f := &fleet.Fleet{Zones: []string{"us-west-2a", "us-west-2b"}}
	for i, p := range pools {
		n := nodes / len(pools)
		if i < nodes%len(pools) {
			n++
		}
		f.Pools = append(f.Pools, fleet.Pool{Name: "gpu-" + p.name, Count: n,
			Labels:      map[string]string{p.productLabel: p.product},
			Allocatable: map[string]string{"cpu": "96", "memory": "1Ti", "pods": "110", p.resource: "8"}})
	}
	return f
}

func classes() []*v1beta1.AcceleratorClass {
	var out []*v1beta1.AcceleratorClass
	for _, p := range pools {
		vendor, _, _ := strings.Cut(p.resource, ".")
		out = append(out, &v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: "load-" + p.name},
			Spec: v1beta1.AcceleratorClassSpec{Vendor: vendor, Model: p.model,
				Discovery: v1beta1.AcceleratorDiscovery{NodeSelector: map[string]string{p.productLabel: p.product}},
				Resources: []v1beta1.AcceleratorResource{{Name: p.resource, Quantity: resource.MustParse("1")}}}})
	}
	out = append(out, &v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: broadClass},
		Spec: v1beta1.AcceleratorClassSpec{Vendor: "nvidia",
			Discovery: v1beta1.AcceleratorDiscovery{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpExists}}}}}}})
	return out
}

// fixtures creates the classes, the namespace and the pods.
func (l *load) fixtures(ctx context.Context) error {
	for _, c := range classes() {
		if _, err := l.berth.OmeV1beta1().AcceleratorClasses().Create(ctx, c, metav1.CreateOptions{FieldManager: fieldOwner}); err != nil {
			return fmt.Errorf("create AcceleratorClass %s: %w", c.Name, err)
		}
	}
	if _, err := l.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	t := time.Now()
	progress("creating %d pods of 1 GPU bound to the nodes", l.cfg.pods)
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := l.createPod(ctx, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
	for i := 0; i < l.cfg.pods && err == nil; i++ {
		select {
		case work <- i:
		case err = <-errs:
		}
	}
	close(work)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	if err != nil {
		return err
	}
	progress("%d pods created in %s", l.cfg.pods, since(t))
	return nil
}

// createPod binds pod i to node i mod nodes (spread over every pool).
func (l *load) createPod(ctx context.Context, i int) error {
	n := &l.nodes[i%len(l.nodes)]
	var res corev1.ResourceName
	for r := range n.Status.Allocatable {
		if strings.Contains(string(r), "/") {
			res = r
		}
	}
	name := "gpu-" + itoa(int(l.seq.Add(1)))
	one := resource.MustParse("1")
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "engine", Image: "registry.berth.dev/load/engine:v1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{res: one}, Limits: corev1.ResourceList{res: one}}}}}}
	if _, err := l.kube.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: fieldOwner}); err != nil {
		return fmt.Errorf("create pod %s: %w", name, err)
	}
	l.mu.Lock()
	l.live = append(l.live, name)
	l.mu.Unlock()
	return nil
}
