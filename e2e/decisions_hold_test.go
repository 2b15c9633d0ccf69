package e2e

// Decisions that hold, at admission (issue 21, items 2, 5 and 13's pvc
// form), on the real apiserver with berth's webhook and reconciler:
//
//   - OEP-0003's Story 2 runtime, applied verbatim, has no image: a
//     service of it is denied at kubectl apply naming the field, and the
//     runtime itself is warned about when it is applied;
//   - a pin never moves without the user: while the pinned runtime is
//     deleted, an unrelated update keeps the pin (with a warning) and the
//     service is Degraded (RuntimeDeleted); annotation ome.io/repin asks
//     for a new decision;
//   - OME's ClusterBaseModel storage form pvc://<namespace>:<claim>/<path>
//     is accepted and a service in that namespace mounts the claim; a
//     service in another namespace is denied naming both.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
)

// ---------------------------------------------------------------------------
// Story 2's runtime has no image

// TestStory2RuntimeWithoutImageIsDeniedAtApply: OEP-0003's Story 2 runtime
// (sglang-universal, as the seed writes it: acceleratorConfigurations but
// no container and so no image) is admitted with a warning that its pods
// would have no image; Story 2's service of it is denied at kubectl apply,
// naming the container's image field and the fix, and nothing is stored.
// Before, the service was admitted and pinned, and the reconciler's pod
// creates were refused for ever with nothing in the service's status.
func TestStory2RuntimeWithoutImageIsDeniedAtApply(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-story2")
	model := tinyModelObj(ns)
	model.Name = "llama-7b"
	_, err := berthClient(t).OmeV1beta1().BaseModels(ns).Create(ctxT(t, apiTimeout), model, metav1.CreateOptions{})
	require.NoError(t, err)

	out, err := kubectl(t, seedFile(t, "002-story2-sglang-universal.yaml"), "apply", "-n", ns, "-f", "-")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Warning:", "the runtime is admitted with a warning:\n%s", out)
	assert.Contains(t, out, "image", "the warning says what is missing:\n%s", out)

	svc := fmt.Sprintf(`apiVersion: ome.io/v1beta1
kind: InferenceService
metadata:
  name: llama-7b
  namespace: %s
spec:
  model:
    name: llama-7b
  runtime:
    name: sglang-universal
`, ns)
	// The webhook's informers may not hold the runtime yet: retry until
	// the answer is about the image, for at most 30 s.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		out, err = kubectl(t, svc, "apply", "--server-side", "-f", "-")
		if err == nil || strings.Contains(out, "image") || time.Now().After(deadline) {
			break
		}
	}
	require.Error(t, err, "Story 2's service of a runtime without an image was admitted:\n%s", out)
	assert.Contains(t, out, `The InferenceService "llama-7b" is invalid`, "the denial has causes:\n%s", out)
	assert.Contains(t, out, "pods[llama-7b-engine-0].spec.containers[0].image: Required value", "the denial names the composed pod's field:\n%s", out)
	assert.Contains(t, out, "spec.engine.runner.image", "the denial says how to fix it:\n%s", out)
	assertNotStored(t, ns, "llama-7b")
}

// ---------------------------------------------------------------------------
// A pin never moves without the user

// TestPinHoldsWhileRuntimeDeleted: a service pinned to the auto-selected
// runtime "first" keeps its pin when "first" is deleted and the service is
// then updated in a way that does not touch what the decision depends on
// (a label, as a GitOps sync or a server-side re-apply does): the update
// is admitted with a warning, the pod is not replaced, and the service is
// Degraded with reason RuntimeDeleted. Before, berth decided again and
// rolled the service onto "second". `berth repin` (annotation ome.io/repin)
// is the user's explicit request for a new decision: then the service
// moves to "second".
func TestPinHoldsWhileRuntimeDeleted(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-pinholds")
	createServingRuntime(t, autoRuntime(ns, "first", e2eImage, 20))
	createServingRuntime(t, autoRuntime(ns, "second", e2eImage, 10))
	first := "ServingRuntime/first"
	admittedDryRun(t, MakeService(ns, "chat").Obj(), func(s *v1beta1.InferenceService) bool {
		return s.Annotations[v1beta1.AnnotationResolvedRuntime] == first
	})
	createService(t, MakeService(ns, "chat").Obj())
	require.Equal(t, first, getService(t, ns, "chat").Annotations[v1beta1.AnnotationResolvedRuntime])
	pods := waitPods(t, ns, "chat", "the engine pod serving", podsNamed("chat-engine-0"))
	uid := pods[0].UID

	require.NoError(t, berthClient(t).OmeV1beta1().ServingRuntimes(ns).Delete(ctxT(t, apiTimeout), "first", metav1.DeleteOptions{}))
	// The webhook's informer learns of the deletion a moment later: wait
	// until a dry-run service is decided onto "second".
	admittedDryRun(t, MakeService(ns, "probe").Obj(), func(s *v1beta1.InferenceService) bool {
		return s.Annotations[v1beta1.AnnotationResolvedRuntime] == "ServingRuntime/second"
	})

	out, err := kubectl(t, "", "label", "-n", ns, "isvc", "chat", "team=search")
	require.NoError(t, err, out)
	assert.Contains(t, out, "Warning:", "the update is admitted with a warning:\n%s", out)
	assert.Contains(t, out, "ome.io/repin", "the warning names the explicit action:\n%s", out)
	got := getService(t, ns, "chat")
	assert.Equal(t, first, got.Annotations[v1beta1.AnnotationResolvedRuntime], "an unrelated update moved the pin")
	assert.Equal(t, "search", got.Labels["team"])

	degraded := waitService(t, ns, "chat", "Degraded=True, reason RuntimeDeleted", func(s *v1beta1.InferenceService) bool {
		c := condition(s, v1beta1.ConditionDegraded)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "RuntimeDeleted"
	})
	assert.Contains(t, condition(degraded, v1beta1.ConditionDegraded).Message, "first")
	p, err := env.Kube.CoreV1().Pods(ns).Get(ctxT(t, apiTimeout), "chat-engine-0", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, uid, p.UID, "the running pod was replaced")

	out, err = berthCLI(t, "repin", "isvc/chat", "-n", ns, "--kubeconfig", env.Cluster.KubeconfigPath)
	require.NoError(t, err, out)
	assert.Contains(t, out, "ServingRuntime/first -> ServingRuntime/second")
	got = getService(t, ns, "chat")
	assert.Equal(t, "ServingRuntime/second", got.Annotations[v1beta1.AnnotationResolvedRuntime], "berth repin did not decide again")
	assert.NotEmpty(t, got.Annotations[v1beta1.AnnotationRepin])
	waitService(t, ns, "chat", "Degraded=False again", func(s *v1beta1.InferenceService) bool {
		return conditionIs(s, v1beta1.ConditionDegraded, metav1.ConditionFalse)
	})
}

// ---------------------------------------------------------------------------
// OME's pvc://<namespace>:<claim>/<path>

// boundClaim creates a claim bound to a pre-bound hostPath volume (the
// devenv has no provisioner) and waits until it is Bound.
func boundClaim(t *testing.T, ns, claim string) {
	t.Helper()
	ctx := ctxT(t, 2*time.Minute)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/models"}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
		},
	}
	_, err := env.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().PersistentVolumes().Delete(ctxT(t, apiTimeout), pv.Name, metav1.DeleteOptions{})
	})
	empty := ""
	_, err = env.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
			StorageClassName: &empty,
			VolumeName:       pv.Name,
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, ns, "claim "+claim+" Bound", func() bool {
		c, err := env.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctxT(t, apiTimeout), claim, metav1.GetOptions{})
		return err == nil && c.Status.Phase == corev1.ClaimBound
	})
}

// TestClusterBaseModelOnNamespacedClaim: a ClusterBaseModel at OME's
// pvc://<namespace>:<claim>/<path> is accepted (it was refused: the claim
// name "<namespace>:<claim>" is not a DNS name); a service in that
// namespace mounts the claim with the sub-path, and its pod runs; a service
// in another namespace is denied, naming the claim's namespace, since a pod
// mounts only claims of its own.
func TestClusterBaseModelOnNamespacedClaim(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-cbm-pvc")
	const claim = "models"
	boundClaim(t, ns, claim)
	name := uniqueName("cbm-pvc")
	manifest := fmt.Sprintf(`apiVersion: ome.io/v1beta1
kind: ClusterBaseModel
metadata:
  name: %s
spec:
  modelFormat: {name: safetensors, version: "1.0.0"}
  modelFramework: {name: transformers, version: "4.57.1"}
  modelArchitecture: LlamaForCausalLM
  modelParameterSize: 1.24B
  storage:
    storageUri: pvc://%s:%s/meta/llama-3-2-1b-instruct
`, name, ns, claim)
	out, err := kubectl(t, manifest, "apply", "--server-side", "-f", "-")
	require.NoError(t, err, "OME's ClusterBaseModel form pvc://<namespace>:<claim>/<path> was refused:\n%s", out)
	t.Cleanup(func() { _, _ = kubectlQuiet("delete", "clusterbasemodel", name, "--ignore-not-found") })

	rt := createRuntime(t, MakeRuntime(uniqueName("cbm-pvc")).Obj())
	svc := MakeService(ns, "chat").Runtime(rt.Name).Replicas(1).Obj()
	svc.Spec.Model.Name = name
	createService(t, svc)
	pods := waitPods(t, ns, "chat", "an engine pod Running and Ready", engineServing(1))
	p := podsOf(pods, v1beta1.ComponentEngine)[0]
	runner := engineRunner(t, &p)
	mnt := modelMount(runner)
	require.NotNil(t, mnt, "the runner mounts nothing at %s: %v", merge.ModelMountPath, runner.VolumeMounts)
	assert.Equal(t, "meta/llama-3-2-1b-instruct", mnt.SubPath)
	vol := podVolume(&p, mnt.Name)
	require.NotNil(t, vol)
	if assert.NotNil(t, vol.PersistentVolumeClaim, "volume %+v", vol.VolumeSource) {
		assert.Equal(t, claim, vol.PersistentVolumeClaim.ClaimName)
	}

	other := lifecycleNamespace(t, "e2e-cbm-other")
	elsewhere := MakeService(other, "chat").Runtime(rt.Name).Replicas(1).Obj()
	elsewhere.Spec.Model.Name = name
	_, err = berthClient(t).OmeV1beta1().InferenceServices(other).Create(ctxT(t, apiTimeout), elsewhere, metav1.CreateOptions{})
	require.Error(t, err, "a service in another namespace than the model's claim was admitted")
	assert.Contains(t, err.Error(), fmt.Sprintf("PersistentVolumeClaim %q is in namespace %s", claim, ns), "the denial names the claim's namespace")
	assert.Contains(t, err.Error(), "spec.storage.storageUri", "the denial names the field")
}

// TestPinHoldsThroughServerSideReapply: a service created by `kubectl apply
// --server-side` (as GitOps tools apply) and re-applied unchanged after its
// pinned runtime was deleted keeps its pin: the re-apply does not count as
// the user removing berth's annotations, although the applier's field
// manager owns what the webhook set on create.
func TestPinHoldsThroughServerSideReapply(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-pinssa")
	createServingRuntime(t, autoRuntime(ns, "first", e2eImage, 20))
	createServingRuntime(t, autoRuntime(ns, "second", e2eImage, 10))
	admittedDryRun(t, MakeService(ns, "chat").Obj(), func(s *v1beta1.InferenceService) bool {
		return s.Annotations[v1beta1.AnnotationResolvedRuntime] == "ServingRuntime/first"
	})
	manifest := MakeService(ns, "chat").JSON(t)
	applyAdmitted(t, ns, manifest)
	require.Equal(t, "ServingRuntime/first", getService(t, ns, "chat").Annotations[v1beta1.AnnotationResolvedRuntime])

	require.NoError(t, berthClient(t).OmeV1beta1().ServingRuntimes(ns).Delete(ctxT(t, apiTimeout), "first", metav1.DeleteOptions{}))
	admittedDryRun(t, MakeService(ns, "probe").Obj(), func(s *v1beta1.InferenceService) bool {
		return s.Annotations[v1beta1.AnnotationResolvedRuntime] == "ServingRuntime/second"
	})
	out, err := kubectl(t, manifest, "apply", "--server-side", "-n", ns, "-f", "-")
	require.NoError(t, err, out)
	assert.Equal(t, "ServingRuntime/first", getService(t, ns, "chat").Annotations[v1beta1.AnnotationResolvedRuntime],
		"a server-side re-apply moved the pin:\n%s", out)
}
