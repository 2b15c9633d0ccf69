package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv"
	"github.com/berthdev/berth/internal/devenv/node"
	"github.com/berthdev/berth/version"
)

// The real node's part of the demo: a CPU InferenceService on
// berth-test-engine (the stand-in for SGLang) serving a chat completion
// through its Service.
const (
	demoChatNamespace = "default"
	demoChatService   = "demo-chat"
	demoChatModel     = "demo-tiny-llama"
)

// realNodeStory tells whether a real node runs and, when one does, serves
// a request end to end.
func realNodeStory(ctx context.Context, w io.Writer, env *devenv.Env, say func(string, ...any)) {
	if env.Node == nil {
		if env.NodeErr != nil {
			say("No real node runs here (%v): every pod above is faked by kwok.", env.NodeErr)
		}
		return
	}
	say("A real node %s runs next to the fleet (containerd, kubelet, kube-proxy, CoreDNS; up in %s), with %d of berth's images loaded, nothing pulled.",
		node.Name, nodeTime(env).Round(100*time.Millisecond), len(env.Node.Images))
	reply, cmd, took, err := serveDemoChat(ctx, env)
	if err != nil {
		say("The CPU InferenceService %s/%s on berth-test-engine did not serve: %v", demoChatNamespace, demoChatService, err)
		return
	}
	say("InferenceService %s/%s (berth-test-engine, a stand-in for SGLang, on the real node) turned Ready and answered in %s through its Service:\n   $ %s\n   %s",
		demoChatNamespace, demoChatService, took.Round(100*time.Millisecond), cmd, strings.TrimSpace(reply))
}

func nodeTime(env *devenv.Env) time.Duration {
	for _, t := range env.Node.Timings {
		if t.Step == "real node" {
			return t.Duration
		}
	}
	return 0
}

// serveDemoChat applies the test engine's runtime, a model on the node and
// the service, waits for Ready, and asks it from a pod by DNS name.
func serveDemoChat(ctx context.Context, env *devenv.Env) (reply, cmd string, took time.Duration, err error) {
	start := time.Now()
	objs, err := devenv.Manifests("test-engine")
	if err != nil {
		return "", "", 0, err
	}
	if err := env.Applier.ApplyAll(ctx, objs); err != nil {
		return "", "", 0, err
	}
	dir := filepath.Join(env.Node.Dir, "demo-model")
	if err := writeDemoModel(dir); err != nil {
		return "", "", 0, err
	}
	c, err := versioned.NewForConfig(env.Cluster.RESTConfig())
	if err != nil {
		return "", "", 0, err
	}
	if err := createDemoChat(ctx, c, dir); err != nil {
		return "", "", 0, err
	}
	if err := waitReady(ctx, c, 3*time.Minute); err != nil {
		return "", "", 0, err
	}
	url := "http://" + demoChatService + "." + demoChatNamespace + ".svc"
	args := []string{"berth-test-engine", "chat", "--url", url, "--retry-for", "60s"}
	reply, err = chatPod(ctx, env, args)
	return reply, "kubectl run ask --rm -i --restart=Never --image=" + version.Image("berth-test-engine") + " --command -- " + strings.Join(args, " "), time.Since(start), err
}

func writeDemoModel(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"config.json":           `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16"}`,
		"tokenizer_config.json": `{"model_max_length": 131072}`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func createDemoChat(ctx context.Context, c versioned.Interface, dir string) error {
	str := func(s string) *string { return &s }
	model := &v1beta1.BaseModel{
		ObjectMeta: metav1.ObjectMeta{Name: demoChatModel, Namespace: demoChatNamespace},
		Spec: v1beta1.BaseModelSpec{
			ModelFormat:        v1beta1.ModelFormat{Name: "safetensors", Version: str("1.0.0")},
			ModelArchitecture:  str("LlamaForCausalLM"),
			ModelParameterSize: str("1.24B"),
			Storage:            &v1beta1.StorageSpec{StorageURI: str("local://" + dir)},
		},
	}
	if _, err := c.OmeV1beta1().BaseModels(demoChatNamespace).Create(ctx, model, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: demoChatService, Namespace: demoChatNamespace},
		Spec: v1beta1.InferenceServiceSpec{
			Model:   &v1beta1.ModelRef{Name: demoChatModel, Kind: str("BaseModel")},
			Runtime: &v1beta1.ServingRuntimeRef{Name: "berth-test-engine-rt"},
			Engine:  &v1beta1.EngineSpec{},
		},
	}
	isvc.Spec.Engine.NodeSelector, isvc.Spec.Engine.Tolerations = node.Placement()
	if _, err := c.OmeV1beta1().InferenceServices(demoChatNamespace).Create(ctx, isvc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

func waitReady(ctx context.Context, c versioned.Interface, timeout time.Duration) error {
	var last []metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		isvc, err := c.OmeV1beta1().InferenceServices(demoChatNamespace).Get(ctx, demoChatService, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = isvc.Status.Conditions
		return meta.IsStatusConditionTrue(isvc.Status.Conditions, v1beta1.ConditionReady), nil
	})
	if err != nil {
		return fmt.Errorf("not Ready within %s (conditions %v): %w", timeout, last, err)
	}
	return nil
}

// chatPod runs args in a pod of the test engine's image on the real node
// and returns its log.
func chatPod(ctx context.Context, env *devenv.Env, args []string) (string, error) {
	sel, tol := node.Placement()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "ask-"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, NodeSelector: sel, Tolerations: tol,
		Containers: []corev1.Container{{Name: "ask", Image: version.Image("berth-test-engine"), Command: args}},
	}}
	pods := env.Kube.CoreV1().Pods(demoChatNamespace)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	defer pods.Delete(context.Background(), created.Name, metav1.DeleteOptions{})
	var phase corev1.PodPhase
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, logErr := pods.GetLogs(created.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || phase != corev1.PodSucceeded {
		return "", fmt.Errorf("pod %s ended %s (%v): %s %v", created.Name, phase, err, logs, logErr)
	}
	return string(logs), logErr
}

// realNodeMode maps the --real-node flag.
func realNodeMode(on bool) devenv.RealNode {
	if on {
		return devenv.RealNodeAuto
	}
	return devenv.RealNodeOff
}
