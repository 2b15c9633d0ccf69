package e2e

// Admission decisions users can trust (issue 10, "What must be shown"), on
// the real apiserver with berth's webhook and reconciler:
//
//  1. a spoofed pin is decided again on CREATE, and an UPDATE that moves the
//     pin to an incompatible runtime is denied;
//  2. seed 001's KServe sklearn example gets no AcceleratorClass and no GPU;
//  3. seed 000's priority example lands on an NVIDIA class, not Intel's;
//  4. a 405B fp8 model is denied on 8 × A100-40GB with the numbers, and
//     admitted on H100;
//  5. seed 002's PCIe alternative of the A100 class matches a PCIe node;
//  7. a directory with two tied runtimes, applied at once, admits one;
//  8. a missing template key is denied at InferenceService apply.
//
// (Item 6, engine and decoder on different classes, has its own test.)
// Each test has its own namespace and uniquely named cluster-scoped
// objects; only the seed 000 test, which swaps shipped runtimes, runs
// alone.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/rand"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/fleet"
	"github.com/berthdev/berth/internal/testing/wrappers"
)

// ---------------------------------------------------------------------------
// Helpers of this file

// isvcManifest is the service as a JSON manifest for kubectl.
func isvcManifest(t *testing.T, isvc *v1beta1.InferenceService) string {
	t.Helper()
	obj := isvc.DeepCopy()
	obj.APIVersion, obj.Kind = v1beta1.SchemeGroupVersion.String(), "InferenceService"
	b, err := json.Marshal(obj)
	require.NoError(t, err)
	return string(b)
}

// admittedDryRun creates the service with dryRun=All until the webhook
// admits it and ok holds for what it would store (the webhook's informers
// may lag behind runtimes and models created a moment ago), and returns
// that object. It fails the test after 30 s with the last answer.
func admittedDryRun(t *testing.T, isvc *v1beta1.InferenceService, ok func(*v1beta1.InferenceService) bool) *v1beta1.InferenceService {
	t.Helper()
	bc := berthClient(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		got, err := bc.OmeV1beta1().InferenceServices(isvc.Namespace).Create(ctx, isvc.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		cancel()
		if err == nil && (ok == nil || ok(got)) {
			return got
		}
		if time.Now().After(deadline) {
			require.NoError(t, err, "dry-run create InferenceService %s/%s", isvc.Namespace, isvc.Name)
			require.FailNowf(t, "dry run", "InferenceService %s/%s: admitted, but not as expected: annotations %v", isvc.Namespace, isvc.Name, got.Annotations)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// applyAdmitted runs kubectl apply --server-side -n ns with the manifest
// until it succeeds; a denial is retried for 30 s (the webhook's informers
// may lag behind objects created a moment ago), then fails the test with
// kubectl's output.
func applyAdmitted(t *testing.T, ns, manifest string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := kubectl(t, manifest, "apply", "--server-side", "-n", ns, "-f", "-")
		if err == nil {
			return out
		}
		transient := strings.Contains(out, "denied") || strings.Contains(out, "failed calling webhook")
		if time.Now().After(deadline) || !transient {
			require.NoError(t, err, "kubectl apply -n %s:\n%s", ns, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// assertNotStored: the service does not exist.
func assertNotStored(t *testing.T, ns, name string) {
	t.Helper()
	_, err := berthClient(t).OmeV1beta1().InferenceServices(ns).Get(ctxT(t, apiTimeout), name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "InferenceService %s/%s was stored: %v", ns, name, err)
}

// explanationLine is the line of the ome.io/decision annotation that starts
// with prefix ("AcceleratorClass/intel-max-1550"), or "".
func explanationLine(isvc *v1beta1.InferenceService, prefix string) string {
	for _, l := range strings.Split(isvc.Annotations[v1beta1.AnnotationDecision], "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// isAcceleratorKey: a resource name or node label of a GPU vendor.
func isAcceleratorKey(k string) bool {
	return strings.Contains(k, "gpu") || strings.Contains(k, "i915") || strings.Contains(k, "amd.com") || strings.Contains(k, "habana")
}

// acceleratorConstraints lists what in the pod asks for accelerators:
// resources of every container and node constraints on GPU labels.
func acceleratorConstraints(p *corev1.Pod) []string {
	var out []string
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name, q := range rl {
					if isAcceleratorKey(string(name)) {
						out = append(out, fmt.Sprintf("container %s resource %s: %s", c.Name, name, q.String()))
					}
				}
			}
		}
	}
	for k, v := range p.Spec.NodeSelector {
		if isAcceleratorKey(k) {
			out = append(out, fmt.Sprintf("nodeSelector %s=%s", k, v))
		}
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		if req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			for _, term := range req.NodeSelectorTerms {
				for _, e := range term.MatchExpressions {
					if isAcceleratorKey(e.Key) {
						out = append(out, fmt.Sprintf("required node affinity %s %s %v", e.Key, e.Operator, e.Values))
					}
				}
			}
		}
		for _, pt := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			for _, e := range pt.Preference.MatchExpressions {
				if isAcceleratorKey(e.Key) {
					out = append(out, fmt.Sprintf("preferred node affinity %s %s %v", e.Key, e.Operator, e.Values))
				}
			}
		}
	}
	return out
}

// nodeSelectorOps maps node affinity operators to label selector ones.
var nodeSelectorOps = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
	corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt: selection.GreaterThan, corev1.NodeSelectorOpLt: selection.LessThan,
}

// termAdmits reports whether a node with these labels matches the term
// (its matchExpressions ANDed), as the scheduler reads it.
func termAdmits(t *testing.T, term corev1.NodeSelectorTerm, nodeLabels map[string]string) bool {
	t.Helper()
	if len(term.MatchFields) > 0 || len(term.MatchExpressions) == 0 {
		return false
	}
	sel := labels.NewSelector()
	for _, e := range term.MatchExpressions {
		op, ok := nodeSelectorOps[e.Operator]
		require.True(t, ok, "unknown node selector operator %q", e.Operator)
		r, err := labels.NewRequirement(e.Key, op, e.Values)
		require.NoError(t, err)
		sel = sel.Add(*r)
	}
	return sel.Matches(labels.Set(nodeLabels))
}

// podAdmitsNode reports whether the pod's nodeSelector and required node
// affinity (terms ORed) admit a node with these labels.
func podAdmitsNode(t *testing.T, p *corev1.Pod, nodeLabels map[string]string) bool {
	t.Helper()
	for k, v := range p.Spec.NodeSelector {
		if nodeLabels[k] != v {
			return false
		}
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termAdmits(t, term, nodeLabels) {
			return true
		}
	}
	return false
}

// createServingRuntime creates a namespaced runtime (deleted with its
// namespace).
func createServingRuntime(t *testing.T, sr *v1beta1.ServingRuntime) {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	err := retryWebhook(ctx, func() error {
		_, err := berthClient(t).OmeV1beta1().ServingRuntimes(sr.Namespace).Create(ctx, sr.DeepCopy(), metav1.CreateOptions{})
		return err
	})
	require.NoError(t, err, "create ServingRuntime %s/%s", sr.Namespace, sr.Name)
}

// spoofedDigest is the ome.io/resolved-inputs digest as anyone can compute
// it from the service's public fields (webhook/handlers.inputDigest): the
// same fields, JSON-encoded, SHA-256, the first 8 bytes in hex. The test
// checks it against the digest the webhook writes for an honest service,
// so the forged annotation below does match.
func spoofedDigest(isvc *v1beta1.InferenceService) string {
	in := struct {
		Model    *v1beta1.ModelRef
		Runtime  *v1beta1.ServingRuntimeRef
		Selector *v1beta1.AcceleratorSelector
		Protocol *v1beta1.ProtocolVersion
		Format   *v1beta1.ModelFormat
		Class    string
		Strategy string
	}{
		Model: isvc.Spec.Model, Runtime: isvc.Spec.Runtime, Selector: isvc.Spec.AcceleratorSelector,
		Protocol: isvc.Spec.ProtocolVersion,
		Class:    isvc.Annotations[v1beta1.AnnotationAcceleratorClass],
		Strategy: isvc.Annotations[v1beta1.AnnotationSelectionStrategy],
	}
	if p := isvc.Spec.Predictor; p != nil && p.Model != nil {
		in.Format = &p.Model.ModelFormat
	}
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// ---------------------------------------------------------------------------
// 1. Pins cannot be forged

// A CREATE that carries berth's annotations — a pin to a runtime that
// cannot serve the model, a class, and a digest that matches the service's
// inputs — is decided again: the service is stored pinned to the runtime
// berth chooses and its pod runs that runtime's image; for a model no
// runtime serves, the forged pin is denied. An UPDATE that moves the pin
// to an incompatible runtime is denied naming the annotation; moving it to
// a compatible one is honoured.
func TestDecisionSpoofedPinIsReDecided(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-spoof")
	bc := berthClient(t)

	// What berth chooses: the one auto-selectable runtime of the namespace
	// (namespaced runtimes outrank cluster ones).
	good := &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "good", Namespace: ns}, Spec: MakeRuntime("good").Obj().Spec}
	good.Spec.SupportedModelFormats[0].AutoSelect = ptr(true)
	createServingRuntime(t, good)
	// What the forger names: a runtime for another architecture.
	forgedImage := "registry.berth.dev/e2e/forged:v1"
	bad := MakeRuntime(uniqueName("e2e-forged")).Image(forgedImage).Obj()
	bad.Spec.SupportedModelFormats[0].ModelArchitecture = ptr("MistralForCausalLM")
	createRuntime(t, bad)
	// A runtime that can serve the model, for an honest pin edit.
	altImage := "registry.berth.dev/e2e/engine:alt"
	alt := createRuntime(t, MakeRuntime(uniqueName("e2e-alt")).Image(altImage).Obj())

	const goodRef = "ServingRuntime/good"
	badRef := "ClusterServingRuntime/" + bad.Name
	honest := MakeService(ns, "chat").Obj()
	dry := admittedDryRun(t, honest, func(s *v1beta1.InferenceService) bool {
		return s.Annotations[v1beta1.AnnotationResolvedRuntime] == goodRef
	})
	digest := spoofedDigest(honest)
	require.Equal(t, dry.Annotations[v1beta1.AnnotationResolvedInputs], digest,
		"the digest computed from public fields is the one the webhook writes (else update spoofedDigest)")

	forged := honest.DeepCopy()
	forged.Annotations = map[string]string{
		v1beta1.AnnotationResolvedRuntime:          badRef,
		v1beta1.AnnotationResolvedInputs:           digest,
		v1beta1.AnnotationResolvedAcceleratorClass: "amd-mi250x",
		v1beta1.AnnotationDecision:                 "runtime " + badRef + " (auto-selected), AcceleratorClass amd-mi250x (has room now)",
	}
	stored := createService(t, forged)
	assert.Equal(t, goodRef, stored.Annotations[v1beta1.AnnotationResolvedRuntime], "the forged pin %s was kept", badRef)
	assert.NotContains(t, stored.Annotations, v1beta1.AnnotationResolvedAcceleratorClass, "a runtime without GPUs gets no class; the forged amd-mi250x was kept")
	decision := stored.Annotations[v1beta1.AnnotationDecision]
	assert.NotEqual(t, forged.Annotations[v1beta1.AnnotationDecision], decision, "the forged decision text was kept")
	assert.True(t, strings.HasPrefix(decision, "runtime "+goodRef+" (auto-selected)"), "decision: %q", decision)
	assert.Contains(t, explanationLine(stored, badRef), "architecture MistralForCausalLM is not the model's LlamaForCausalLM",
		"the forged runtime is ranked, and loses, like any other: %q", decision)

	// The pod is composed from the runtime berth chose.
	pods := waitPods(t, ns, "chat", "the engine group serving", podsNamed("chat-engine-0"))
	assert.Equal(t, e2eImage, pods[0].Spec.Containers[0].Image, "the pod runs the image of %s, not of the forged %s", goodRef, badRef)

	// UPDATE: a pin moved by hand to a runtime that cannot serve the model
	// is denied, naming the annotation; the stored pin is unchanged.
	out, err := kubectl(t, "", "annotate", "--overwrite", "-n", ns, "inferenceservice", "chat", v1beta1.AnnotationResolvedRuntime+"="+badRef)
	require.Error(t, err, "the pin edit to %s was admitted:\n%s", badRef, out)
	assert.Contains(t, out, `The InferenceService "chat" is invalid`)
	assert.Contains(t, out, "metadata.annotations["+v1beta1.AnnotationResolvedRuntime+"]", "the denial's cause is the annotation")
	assert.Contains(t, out, bad.Name, "the denial names the runtime")
	assert.Equal(t, goodRef, getService(t, ns, "chat").Annotations[v1beta1.AnnotationResolvedRuntime])

	// A pin moved to a runtime that passes every check is honoured.
	altRef := "ClusterServingRuntime/" + alt.Name
	out, err = kubectl(t, "", "annotate", "--overwrite", "-n", ns, "inferenceservice", "chat", v1beta1.AnnotationResolvedRuntime+"="+altRef)
	require.NoError(t, err, out)
	moved := getService(t, ns, "chat")
	assert.Equal(t, altRef, moved.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.True(t, strings.HasPrefix(moved.Annotations[v1beta1.AnnotationDecision], "runtime "+altRef), "the decision is explained again: %q", moved.Annotations[v1beta1.AnnotationDecision])

	// CREATE of a model no runtime serves, with a forged pin to a runtime of
	// another architecture and a matching digest: denied, nothing stored.
	orphanModel := tinyModelObj(ns)
	orphanModel.Name = "orphan"
	orphanModel.Spec.ModelArchitecture = ptr("E2EOrphanForCausalLM")
	_, err = bc.OmeV1beta1().BaseModels(ns).Create(ctxT(t, apiTimeout), orphanModel, metav1.CreateOptions{})
	require.NoError(t, err)
	orphan := MakeService(ns, "orphan").Obj()
	orphan.Spec.Model.Name = "orphan"
	orphan.Annotations = map[string]string{
		v1beta1.AnnotationResolvedRuntime: goodRef,
		v1beta1.AnnotationResolvedInputs:  spoofedDigest(orphan),
	}
	_, err = bc.OmeV1beta1().InferenceServices(ns).Create(ctxT(t, apiTimeout), orphan, metav1.CreateOptions{})
	require.Error(t, err, "a service of a model no runtime serves was admitted on a forged pin")
	assert.Contains(t, err.Error(), "no runtime can serve")
	assertNotStored(t, ns, "orphan")
}

// ---------------------------------------------------------------------------
// 2. Accelerators only where asked

// Seed 001's KServe sklearn example, with its sklearn server (the seed's
// runtime with the containers it elides, in the service's namespace),
// gets no AcceleratorClass although classes exist, and its pod, created by
// the reconciler, asks for no GPU and selects no GPU node. Both the
// current schema (predictor.model) and the previous one
// (predictor.sklearn) are tried.
func TestDecisionSKLearnGetsNoAccelerator(t *testing.T) {
	t.Parallel()
	for _, seed := range []string{"001-implicit-isvc-sklearn.yaml", "001-previous-schema-isvc-sklearn.yaml"} {
		t.Run(seed, func(t *testing.T) {
			t.Parallel()
			ns := lifecycleNamespace(t, "e2e-sklearn")
			runtime := strings.Replace(seedFile(t, "001-priority-kserve-sklearnserver.yaml"), "kind: ClusterServingRuntime", "kind: ServingRuntime", 1) + `  containers:
    - name: kserve-container
      image: kserve/sklearnserver:latest
      args:
        - --model_name={{.Name}}
        - --model_dir=/mnt/models
        - --http_port=8080
      resources:
        requests: {cpu: "1", memory: 2Gi}
        limits: {cpu: "1", memory: 2Gi}
`
			out, err := kubectl(t, runtime, "apply", "--server-side", "-n", ns, "-f", "-")
			require.NoError(t, err, out)
			applyAdmitted(t, ns, seedFile(t, seed))

			isvc := getService(t, ns, "example-sklearn-isvc")
			assert.Equal(t, "ServingRuntime/kserve-sklearnserver", isvc.Annotations[v1beta1.AnnotationResolvedRuntime])
			assert.NotContains(t, isvc.Annotations, v1beta1.AnnotationResolvedAcceleratorClass, "a CPU service that asked for no accelerator was given a class")
			assert.Contains(t, isvc.Annotations[v1beta1.AnnotationDecision], "no AcceleratorClass", "decision: %q", isvc.Annotations[v1beta1.AnnotationDecision])

			pods := waitPods(t, ns, "example-sklearn-isvc", "the engine pod serving", podsNamed("example-sklearn-isvc-engine-0"))
			p := &pods[0]
			assert.Equal(t, "kserve/sklearnserver:latest", p.Spec.Containers[0].Image, "the pod was composed from the sklearn server")
			assert.Empty(t, acceleratorConstraints(p), "the sklearn pod asks for accelerators")
		})
	}
}

// ---------------------------------------------------------------------------
// 3. Vendor compatibility

// Seed 000's priority example, applied as TestSeedPriorityExampleEndToEnd
// applies it (the shipped classes and fleet, the seed's runtimes instead of
// the shipped Mistral ones), lands on an NVIDIA class: the CUDA SGLang
// image is never placed on intel-max-1550, which loses with the reason.
// The pod asks for nvidia.com/gpu and runs on an NVIDIA node.
func TestDecisionSeedPriorityLandsOnNVIDIA(t *testing.T) {
	ensureOutOfBox(t)
	// Cleanups run last first: the namespace (and its failure dump) goes,
	// then the seed's runtimes, then the shipped ones come back.
	withoutRuntimes(t, "srt-mistral-7b-instruct-rt", "vllm-mistral-7b-instruct-rt")
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "clusterservingruntime", "srt-mistral-7b-instruct", "srt-mistral-7b-instruct-2", "--ignore-not-found")
	})
	ns := lifecycleNamespace(t, "e2e-vendor")
	for _, f := range []string{"000-priority-srt-mistral-7b-instruct.yaml", "000-priority-srt-mistral-7b-instruct-2.yaml"} {
		out, err := kubectl(t, seedFile(t, f), "apply", "--server-side", "-f", "-")
		require.NoError(t, err, out)
	}
	isvcYAML := strings.Replace(seedFile(t, "000-isvc-auto-select.yaml"), "namespace: mistral-7b-instruct", "namespace: "+ns, 1)
	applyAdmitted(t, ns, mistralModel(ns)+"---\n"+isvcYAML)

	isvc := getService(t, ns, "mistral-7b-instruct")
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", isvc.Annotations[v1beta1.AnnotationResolvedRuntime])
	class := isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass]
	require.NotEmpty(t, class, "the runtime asks for nvidia.com/gpu: a class is chosen")
	assert.NotEqual(t, "intel-max-1550", class, "a CUDA image placed on Intel")
	ac, err := berthClient(t).OmeV1beta1().AcceleratorClasses().Get(ctxT(t, apiTimeout), class, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "nvidia", ac.Spec.Vendor, "AcceleratorClass %s spec.vendor", class)
	for _, foreign := range []string{"intel-max-1550", "amd-mi250x"} {
		line := explanationLine(isvc, "AcceleratorClass/"+foreign)
		vendor := strings.Split(foreign, "-")[0]
		assert.Contains(t, line, "runtime requests nvidia.com/gpu and has no configuration for "+vendor,
			"why %s lost; decision:\n%s", foreign, isvc.Annotations[v1beta1.AnnotationDecision])
	}

	pods := waitPods(t, ns, "mistral-7b-instruct", "the engine group Running and Ready", podsNamed("mistral-7b-instruct-engine-0"))
	p := &pods[0]
	c := p.Spec.Containers[0]
	assert.Equal(t, "lmsysorg/sglang:v0.4.6.post6", c.Image)
	assert.EqualValues(t, 2, nvidiaGPUs(c), "the pod asks for nvidia.com/gpu: %v", c.Resources.Limits)
	assert.EqualValues(t, 2, gpusOf(c), "no other vendor's resource: %v", c.Resources.Limits)
	node, err := env.Kube.CoreV1().Nodes().Get(ctxT(t, apiTimeout), p.Spec.NodeName, metav1.GetOptions{})
	require.NoError(t, err)
	gpus := node.Status.Allocatable["nvidia.com/gpu"]
	assert.Positive(t, gpus.Value(), "pod runs on node %s, which has no nvidia.com/gpu", node.Name)
	assert.NotEmpty(t, node.Labels["nvidia.com/gpu.product"], "pod runs on node %s, which is not an NVIDIA node", node.Name)
}

// ---------------------------------------------------------------------------
// 4. The model must fit

// A 405B fp8 Llama (the model vllm-llama-3-1-405b-instruct-fp8-rt serves)
// on a single-node runtime of 8 GPUs per group: 8 × A100-40GB (343.6 GB)
// cannot hold 405 GB × 1.2 headroom, so a service naming that class, by
// annotation or preferredClasses, is denied by kubectl apply with the
// numbers. The same service on H100 (8 × 80 GiB) is admitted; without a
// class named berth never picks the A100-40GB and says why; and the
// shipped 405B runtime is admitted on H100.
func TestDecisionModelMustFitItsGroup(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-fit")
	const modelName = "llama-3-1-405b-instruct-fp8"
	model := tinyModelObj(ns)
	model.Name = modelName
	model.Spec.Quantization = ptr(v1beta1.ModelQuantization("fp8"))
	model.Spec.ModelParameterSize = ptr("405B")
	// The shipped runtime serves transformers ≤ 4.55.2 (its operator is
	// GreaterThanOrEqual: the runtime's version is at least the model's).
	model.Spec.ModelFramework.Version = ptr("4.55.2")
	_, err := berthClient(t).OmeV1beta1().BaseModels(ns).Create(ctxT(t, apiTimeout), model, metav1.CreateOptions{})
	require.NoError(t, err)
	rtObj := MakeRuntime(uniqueName("e2e-405b")).GPUs(8).Obj()
	rtObj.Spec.SupportedModelFormats[0].Quantization = ptr(v1beta1.ModelQuantization("fp8"))
	rtObj.Spec.SupportedModelFormats[0].ModelFramework.Version = ptr("4.55.2")
	rtObj.Spec.ModelSizeRange = &v1beta1.ModelSizeRangeSpec{Min: ptr("370B"), Max: ptr("420B")}
	rt := createRuntime(t, rtObj)

	service := func(name string) *v1beta1.InferenceService {
		s := MakeService(ns, name).Runtime(rt.Name).Obj()
		s.Spec.Model.Name = modelName
		return s
	}
	byAnnotation := func(name, class string) *v1beta1.InferenceService {
		s := service(name)
		s.Annotations = map[string]string{v1beta1.AnnotationAcceleratorClass: class}
		return s
	}
	byPreference := func(name string, classes ...string) *v1beta1.InferenceService {
		s := service(name)
		s.Spec.AcceleratorSelector = &v1beta1.AcceleratorSelector{PreferredClasses: classes}
		return s
	}
	classOf := func(s *v1beta1.InferenceService) string {
		return s.Annotations[v1beta1.AnnotationResolvedAcceleratorClass]
	}

	// The webhook knows the runtime and the model: H100 is admitted.
	h100 := admittedDryRun(t, byAnnotation("on-h100", "nvidia-h100-80gb"), nil)
	assert.Equal(t, "nvidia-h100-80gb", classOf(h100))

	const numbers = "does not hold the model: needs ≥ 486 GB, group has 8 × 40 GiB (343.6 GB; 405B parameters × 1 byte (fp8) × 1.2 headroom)"
	for s, at := range map[*v1beta1.InferenceService]string{
		byAnnotation("a100-annotation", "nvidia-a100-40gb"): "metadata.annotations[ome.io/accelerator-class]: ",
		byPreference("a100-preferred", "nvidia-a100-40gb"):  "spec.acceleratorSelector.preferredClasses[0]: ",
	} {
		out, err := kubectl(t, isvcManifest(t, s), "apply", "--server-side", "-f", "-")
		require.Error(t, err, "%s on 8 × A100-40GB was admitted:\n%s", s.Name, out)
		assert.Contains(t, out, `The InferenceService "`+s.Name+`" is invalid`, s.Name)
		assert.Contains(t, out, at, "the cause is at the field that named the class")
		assert.Contains(t, out, "nvidia-a100-40gb", s.Name)
		assert.Contains(t, out, numbers, s.Name)
		assertNotStored(t, ns, s.Name)
	}

	// Preferences skip the class that cannot hold the model.
	pref := admittedDryRun(t, byPreference("preferred", "nvidia-a100-40gb", "nvidia-h100-80gb"), nil)
	assert.Equal(t, "nvidia-h100-80gb", classOf(pref), "preferredClasses [a100-40gb, h100-80gb]")
	assert.Contains(t, explanationLine(pref, "AcceleratorClass/nvidia-a100-40gb"), numbers, "decision:\n%s", pref.Annotations[v1beta1.AnnotationDecision])

	// Nothing named: berth picks a class that holds the model, and explains
	// why A100-40GB lost.
	auto := admittedDryRun(t, service("auto"), nil)
	require.NotEmpty(t, classOf(auto))
	assert.NotEqual(t, "nvidia-a100-40gb", classOf(auto))
	ac, err := berthClient(t).OmeV1beta1().AcceleratorClasses().Get(ctxT(t, apiTimeout), classOf(auto), metav1.GetOptions{})
	require.NoError(t, err)
	if assert.NotNil(t, ac.Spec.Capabilities.MemoryGB, "class %s memoryGB", ac.Name) {
		assert.GreaterOrEqual(t, 8*ac.Spec.Capabilities.MemoryGB.Value(), int64(486_000_000_000), "8 × %s of class %s holds 486 GB", ac.Spec.Capabilities.MemoryGB, ac.Name)
	}
	assert.Contains(t, explanationLine(auto, "AcceleratorClass/nvidia-a100-40gb"), numbers, "decision:\n%s", auto.Annotations[v1beta1.AnnotationDecision])

	// Admitted for real on H100 with kubectl; the reconciler's pod asks for
	// the 8 GPUs on H100 nodes.
	out, err := kubectl(t, isvcManifest(t, byAnnotation("on-h100", "nvidia-h100-80gb")), "apply", "--server-side", "-f", "-")
	require.NoError(t, err, out)
	assert.Equal(t, "nvidia-h100-80gb", classOf(getService(t, ns, "on-h100")))
	var pod *corev1.Pod
	waitPods(t, ns, "on-h100", "the engine pod created and composed", func(ps []corev1.Pod) bool {
		pod = podByName(ps, "on-h100-engine-0")
		return pod != nil && pod.Annotations[v1beta1.AnnotationRevision] != ""
	})
	assert.EqualValues(t, 8, nvidiaGPUs(pod.Spec.Containers[0]), "nvidia.com/gpu: %v", pod.Spec.Containers[0].Resources.Limits)
	assert.True(t, podAdmitsNode(t, pod, map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}), "the pod admits H100 nodes: nodeSelector %v, affinity %v", pod.Spec.NodeSelector, pod.Spec.Affinity)
	assert.False(t, podAdmitsNode(t, pod, map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}), "the pod admits A100-40GB nodes")

	// The shipped runtime for this model (a leader and a worker of 8 GPUs
	// each) on H100.
	shipped := "vllm-llama-3-1-405b-instruct-fp8-rt"
	objs, err := install.ReadObjects(env.Path("deploy", "runtimes", shipped+".yaml"))
	require.NoError(t, err)
	ctx := ctxT(t, time.Minute)
	require.NoError(t, retryWebhook(ctx, func() error { return env.Applier.ApplyAll(ctx, objs) }))
	s := byAnnotation("shipped-h100", "nvidia-h100-80gb")
	s.Spec.Runtime = &v1beta1.ServingRuntimeRef{Name: shipped}
	got := admittedDryRun(t, s, nil)
	assert.Equal(t, "ClusterServingRuntime/"+shipped, got.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.Equal(t, "nvidia-h100-80gb", classOf(got))
}

// ---------------------------------------------------------------------------
// 5. Discovery: nodeSelectorTerms are alternatives

// An A100 class written as seed 002 writes it — the SXM4 part in
// discovery.nodeSelector, and alternative patterns in nodeSelectorTerms
// that add the PCIe card — matches a node that has only the PCIe product
// label: a service pinned to the class is decided with room, its pod's
// node affinity admits the PCIe node (the terms ORed) and it runs there.
// The fleet has no PCIe node, so the test adds one kwok node (tainted, so
// only its pods land there) with product values no other class uses, and
// deletes it at the end. Two shapes: the seed's (one term In [SXM4, PCIe])
// and two terms (SXM4 | PCIe).
func TestDecisionPCIeAlternativeMatches(t *testing.T) {
	t.Parallel()
	suffix := rand.String(5)
	sxm, pcie := "E2E-A100-SXM4-40GB-"+suffix, "E2E-A100-PCIE-40GB-"+suffix
	const productKey = "nvidia.com/gpu.product"
	taint := corev1.Taint{Key: "berth.dev/e2e-pcie", Value: suffix, Effect: corev1.TaintEffectNoSchedule}
	nodeName := "e2e-a100-pcie-" + suffix

	// The node, as internal/fleet makes one.
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": nodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "type": "kwok",
				fleet.ZoneLabel: "us-west-2a", productKey: pcie, "nvidia.com/gpu.count": "8",
			},
			Annotations: map[string]string{fleet.KwokAnnotation: fleet.KwokValue},
		},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{taint}},
		Status: corev1.NodeStatus{Capacity: res.DeepCopy(), Allocatable: res.DeepCopy()},
	}
	ctx := ctxT(t, 2*time.Minute)
	_, err := env.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		assert.NoError(t, env.Kube.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{}), "delete node %s", nodeName)
	})
	require.NoError(t, fleet.WaitReady(ctx, env.Kube, []string{nodeName}, time.Minute))

	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-pcie")).GPUs(1).Obj())
	in := func(values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: productKey, Operator: corev1.NodeSelectorOpIn, Values: values}}}
	}
	shapes := []struct {
		name  string
		terms []corev1.NodeSelectorTerm
	}{
		{"seed 002: nodeSelector SXM4, a term In [SXM4, PCIe]", []corev1.NodeSelectorTerm{in(sxm, pcie)}},
		{"nodeSelector SXM4, terms SXM4 | PCIe", []corev1.NodeSelectorTerm{in(sxm), in(pcie)}},
	}
	for i, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			t.Parallel()
			ns := lifecycleNamespace(t, "e2e-pcie")
			class := wrappers.MakeAcceleratorClass(fmt.Sprintf("e2e-a100-40gb-%s-%d", suffix, i)).Label("berth.dev/e2e", "decisions").
				Vendor("nvidia").Family("ampere").Model("a100").
				NodeSelector(productKey, sxm).NodeSelectorTerms(shape.terms...).
				Memory("40Gi").ComputeCapability("8.0").ResourceQuantity("nvidia.com/gpu", "1").Obj()
			cctx := ctxT(t, time.Minute)
			require.NoError(t, retryWebhook(cctx, func() error {
				_, err := berthClient(t).OmeV1beta1().AcceleratorClasses().Create(cctx, class, metav1.CreateOptions{})
				return err
			}))
			t.Cleanup(func() {
				dumpIfFailed(t)
				ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
				defer cancel()
				_ = berthClient(t).OmeV1beta1().AcceleratorClasses().Delete(ctx, class.Name, metav1.DeleteOptions{})
			})

			svc := MakeService(ns, "pcie").Runtime(rt.Name).Obj()
			svc.Annotations = map[string]string{v1beta1.AnnotationAcceleratorClass: class.Name}
			svc.Spec.Engine.Tolerations = []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}}
			admittedDryRun(t, svc, func(s *v1beta1.InferenceService) bool {
				return strings.Contains(s.Annotations[v1beta1.AnnotationDecision], "(has room now)")
			})
			isvc := createService(t, svc)
			assert.Equal(t, class.Name, isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass])
			decision := isvc.Annotations[v1beta1.AnnotationDecision]
			assert.Contains(t, decision, "AcceleratorClass "+class.Name+" (has room now)", "the class's nodes include the PCIe node")
			assert.NotContains(t, decision, "matches no Ready node")

			// The composed pod expresses the OR (checked before waiting, so a
			// pod that can never schedule fails here with its constraints).
			var p *corev1.Pod
			waitPods(t, ns, "pcie", "the engine pod created and composed", func(ps []corev1.Pod) bool {
				p = podByName(ps, "pcie-engine-0")
				return p != nil && p.Annotations[v1beta1.AnnotationRevision] != ""
			})
			assert.EqualValues(t, 1, nvidiaGPUs(p.Spec.Containers[0]))
			assert.NotContains(t, p.Spec.NodeSelector, productKey, "a nodeSelector on the product ANDs the SXM4 pattern with the alternatives")
			assert.True(t, podAdmitsNode(t, p, map[string]string{productKey: sxm}), "the pod admits the SXM4 nodes: nodeSelector %v, affinity %v", p.Spec.NodeSelector, p.Spec.Affinity)
			assert.False(t, podAdmitsNode(t, p, map[string]string{productKey: "NVIDIA-H100-80GB-HBM3"}), "the pod admits other nodes: affinity %v", p.Spec.Affinity)
			require.True(t, podAdmitsNode(t, p, map[string]string{productKey: pcie}), "the pod admits the PCIe node: nodeSelector %v, affinity %v", p.Spec.NodeSelector, p.Spec.Affinity)

			pods := waitPods(t, ns, "pcie", "the engine pod Running on the PCIe node", podsNamed("pcie-engine-0"))
			assert.Equal(t, nodeName, pods[0].Spec.NodeName)
		})
	}
}

// ---------------------------------------------------------------------------
// 7. Priority ties that slip through the cache

// Two runtimes that tie (same format, same priority, overlapping size
// ranges, both auto-selectable), written as two files of one directory and
// applied with one `kubectl apply -f dir/`: the first is created, the
// second is denied naming the first, and exactly one is stored.
func TestDecisionTieInOneDirectoryIsDenied(t *testing.T) {
	t.Parallel()
	suffix := rand.String(5)
	// An architecture of this test alone, so no other runtime ties with them.
	arch := "E2ETie" + suffix + "ForCausalLM"
	first, second := "e2e-tie-a-"+suffix, "e2e-tie-b-"+suffix
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "delete", "clusterservingruntime", first, second, "--ignore-not-found")
	})
	manifest := func(name, minSize, maxSize string) string {
		return fmt.Sprintf(`apiVersion: ome.io/v1beta1
kind: ClusterServingRuntime
metadata:
  name: %s
  labels:
    berth.dev/e2e: decisions
spec:
  supportedModelFormats:
    - modelFormat:
        name: safetensors
        version: "1.0.0"
      modelFramework:
        name: transformers
        version: "4.57.1"
      modelArchitecture: %s
      autoSelect: true
      priority: 5
  protocolVersions:
    - openAI
  modelSizeRange:
    min: %s
    max: %s
  engineConfig:
    runner:
      image: %s
`, name, arch, minSize, maxSize, e2eImage)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "1-"+first+".yaml"), []byte(manifest(first, "1B", "10B")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "2-"+second+".yaml"), []byte(manifest(second, "5B", "20B")), 0o644))

	out, err := kubectl(t, "", "apply", "-f", dir+string(filepath.Separator))
	require.Error(t, err, "both tied runtimes were admitted:\n%s", out)

	bc := berthClient(t)
	stored := map[string]bool{}
	for _, name := range []string{first, second} {
		_, err := bc.OmeV1beta1().ClusterServingRuntimes().Get(ctxT(t, apiTimeout), name, metav1.GetOptions{})
		if err == nil {
			stored[name] = true
		} else {
			require.True(t, apierrors.IsNotFound(err), "get %s: %v", name, err)
		}
	}
	require.Len(t, stored, 1, "exactly one of the tied runtimes is stored; kubectl said:\n%s", out)
	assert.True(t, stored[first], "the first file is created, the second denied; kubectl said:\n%s", out)
	assert.Contains(t, out, "clusterservingruntime.ome.io/"+first+" created", "kubectl said:\n%s", out)
	assert.Contains(t, out, `The ClusterServingRuntime "`+second+`" is invalid`, "kubectl said:\n%s", out)
	assert.Contains(t, out, "spec.supportedModelFormats[0].priority", "the denial names the field")
	assert.Contains(t, out, "ClusterServingRuntime/"+first, "the denial names the first runtime")
}

// ---------------------------------------------------------------------------
// 8. Errors at the earliest gate

// A runtime whose args use {{.Labels.team}}: a service without the label is
// denied by kubectl apply, naming the key, and nothing is stored (before,
// it was admitted and its pods were refused later); a template key missing
// from the service's own args is denied too. With the label, the service
// is admitted and its pod has the rendered argument.
func TestDecisionMissingTemplateKeyDeniedAtApply(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-template")
	rt := MakeRuntime(uniqueName("e2e-template")).Obj()
	rt.Spec.EngineConfig.Runner.Args = []string{"--team={{.Labels.team}}", "--served-model-name={{.Name}}"}
	createRuntime(t, rt)

	labelled := MakeService(ns, "chat").Runtime(rt.Name).Obj()
	labelled.Labels = map[string]string{"team": "search"}
	admittedDryRun(t, labelled, nil) // the webhook knows the runtime

	unlabelled := MakeService(ns, "chat").Runtime(rt.Name).Obj()
	out, err := kubectl(t, isvcManifest(t, unlabelled), "apply", "--server-side", "-f", "-")
	require.Error(t, err, "a service without label team was admitted:\n%s", out)
	assert.Contains(t, out, `The InferenceService "chat" is invalid: spec.engine: `, "the denial's cause is the engine the pod is composed for:\n%s", out)
	assert.Contains(t, out, "template key .Labels.team not found on InferenceService "+ns+"/chat")
	assertNotStored(t, ns, "chat")

	own := labelled.DeepCopy()
	own.Name = "own-args"
	own.Spec.Engine.Runner = &v1beta1.RunnerSpec{Args: []string{"--owner={{.Annotations.owner}}"}}
	out, err = kubectl(t, isvcManifest(t, own), "apply", "--server-side", "-f", "-")
	require.Error(t, err, "a service whose own args miss a key was admitted:\n%s", out)
	assert.Contains(t, out, "template key .Annotations.owner not found on InferenceService "+ns+"/own-args")
	assertNotStored(t, ns, "own-args")

	out, err = kubectl(t, isvcManifest(t, labelled), "apply", "--server-side", "-f", "-")
	require.NoError(t, err, out)
	pods := waitPods(t, ns, "chat", "the engine pod serving", podsNamed("chat-engine-0"))
	args := pods[0].Spec.Containers[0].Args
	assert.Contains(t, args, "--team=search", "args: %q", args)
	assert.Contains(t, args, "--served-model-name=chat", "args: %q", args)
}
