package e2e

// OME users bring their manifests unchanged (issue 11): OME-shaped models,
// runtimes and sample InferenceServices from e2e/testdata/ome (each file
// names the OME file it mirrors), applied with kubectl as a user would.
// The reconciler reads hf:// models' metadata from a local test Hub
// (internal/hubtest) that TestMain starts in front of the suite.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/hubtest"
	"github.com/berthdev/berth/internal/testing/e2eutil"
	"github.com/berthdev/berth/merge"
)

// ---------------------------------------------------------------------------
// The test Hub

// gatedHub is the test Hub behind a gate: while held, requests wait (as on
// a slow Hub), so a test can see what happens before a model's metadata is
// known, whatever the machine's speed.
type gatedHub struct {
	hub   *hubtest.Server
	front *httptest.Server
	mu    sync.Mutex
	held  chan struct{} // nil: open
	// llamaRequests counts requests for meta-llama/Llama-3.1-8B-Instruct.
	llamaRequests atomic.Int64
}

// startHub serves the three real models of hubtest. OME's catalogue names
// meta-llama/Llama-3.1-8B-Instruct without credentials (its model file has
// no storage.key), so the suite's copy of it is public; hubtest's own
// tests cover the private repository and the token.
//
// It also serves privateRepo, a private copy of Llama-3.1-8B-Instruct (an
// organisation's mirror), which opens only with hubtest.Token.
func startHub() *gatedHub {
	llama := hubtest.Llama()
	llama.Private = false
	private := hubtest.Llama()
	private.ID, private.Private = privateRepo, true
	g := &gatedHub{hub: hubtest.NewServer(llama, hubtest.Qwen(), hubtest.LlamaFP8(), private)}
	g.front = httptest.NewServer(http.HandlerFunc(g.serve))
	return g
}

func (g *gatedHub) serve(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.URL.Path, "meta-llama/Llama-3.1-8B-Instruct") {
		g.llamaRequests.Add(1)
	}
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	g.hub.Config.Handler.ServeHTTP(w, r)
}

// URL is the Hub's endpoint, for berth-reconciler --hf-endpoint.
func (g *gatedHub) URL() string { return g.front.URL }

// hold makes requests wait until release.
func (g *gatedHub) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held == nil {
		g.held = make(chan struct{})
	}
}

// release lets waiting and later requests through.
func (g *gatedHub) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
}

func (g *gatedHub) Close() {
	g.release()
	g.front.Close()
	g.hub.Close()
}

// privateRepo is the test Hub's private repository.
const privateRepo = "acme/private-llama-3-1-8b-instruct"

// ---------------------------------------------------------------------------
// Helpers

func omeTestdata(elem ...string) string {
	return filepath.Join(append([]string{env.Root, "e2e", "testdata", "ome"}, elem...)...)
}

// kubectlApply runs `kubectl apply` with args, retrying only while the
// apiserver cannot reach a webhook in time (a busy machine); a denial
// fails at once.
func kubectlApply(t *testing.T, args ...string) string {
	t.Helper()
	return kubectlApplyStdin(t, "", args...)
}

// kubectlApplyStdin is kubectlApply with stdin (for -f -).
func kubectlApplyStdin(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := kubectl(t, stdin, append([]string{"apply"}, args...)...)
		if err == nil {
			return out
		}
		if time.Now().After(deadline) || !strings.Contains(out, "failed calling webhook") {
			require.NoError(t, err, "kubectl apply %s:\n%s", strings.Join(args, " "), out)
		}
		time.Sleep(time.Second)
	}
}

// engineRunner is the engine pod's runner: the container with MODEL_PATH.
func engineRunner(t *testing.T, p *corev1.Pod) corev1.Container {
	t.Helper()
	i := slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return envOf(c)[merge.EnvModelPath] != "" })
	require.GreaterOrEqual(t, i, 0, "pod %s: no container has %s; containers %v", p.Name, merge.EnvModelPath, containerNames(p.Spec.Containers))
	return p.Spec.Containers[i]
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func podVolume(p *corev1.Pod, name string) *corev1.Volume {
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == name {
			return &p.Spec.Volumes[i]
		}
	}
	return nil
}

func modelMount(c corev1.Container) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == merge.ModelMountPath {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// podsOf lists the service's pods of one component.
func podsOf(pods []corev1.Pod, component string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Labels[v1beta1.LabelComponent] == component && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// engineServing: at least n engine pods, each Running and Ready.
func engineServing(n int) func([]corev1.Pod) bool {
	return func(pods []corev1.Pod) bool {
		engines := podsOf(pods, v1beta1.ComponentEngine)
		if len(engines) < n {
			return false
		}
		for i := range engines {
			if !podServing(&engines[i]) {
				return false
			}
		}
		return true
	}
}

// ---------------------------------------------------------------------------
// 1. A directory applied in one command

// TestOMEManifestsAppliedTogether applies, with one `kubectl apply -f dir/`,
// OME's Llama-3.1-8B-Instruct model (storage only, storage.path included),
// OME's runtime for it and OME's sample InferenceService, all unchanged.
// While the Hub holds the model's files the service is admitted unpinned
// with a warning and waits with Resolved=False ModelMetadataPending; once
// the reconciler has read the model's config.json and safetensors headers,
// the model shows the published figures and the service is pinned to
// srt-llama-3-1-8b-instruct. Its model is served from OME's node cache: the
// engine pod waits for a node OME's model agent labelled; the test labels
// one GPU node the pod's class admits, as the agent does, and the pod lands
// there, mounts storage.path at /mnt/models and runs. (The download path is
// TestOMEPrivateModelWaitsForItsToken's.)
func TestOMEManifestsAppliedTogether(t *testing.T) {
	const (
		ns      = "llama-3-1-8b-instruct"
		name    = "llama-3-1-8b-instruct"
		runtime = "srt-llama-3-1-8b-instruct"
	)
	require.NotNil(t, hub, "TestMain started no test Hub")
	ensureLifecycleFixtures(t)
	dir := omeTestdata("apply-together")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := kubectlQuiet("get", "clusterbasemodel", name, "-o", "yaml")
			t.Logf("ClusterBaseModel %s at the failure:\n%s\n%s", name, out, describeNamespace(ns))
		}
		out, err := kubectlQuiet("delete", "--ignore-not-found", "--wait=false", "-f", dir)
		if err != nil {
			t.Logf("clean up %s: %v\n%s", dir, err, out)
		}
	})

	hub.hold()
	t.Cleanup(hub.release)
	out := kubectlApply(t, "-f", dir)
	t.Logf("kubectl apply -f %s:\n%s", dir, out)

	// Admitted unpinned, with a warning naming the model and what it lacks.
	assert.Contains(t, out, "inferenceservice.ome.io/"+name+" created")
	warning := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Warning:") && strings.Contains(l, name) {
			warning = l
		}
	}
	if assert.NotEmpty(t, warning, "no admission warning names the model; kubectl said:\n%s", out) {
		assert.Contains(t, warning, "modelArchitecture", "the warning says what is missing")
	}
	isvc := getService(t, ns, name)
	assert.NotContains(t, isvc.Annotations, v1beta1.AnnotationResolvedRuntime, "pinned before the model's metadata was known")
	waitService(t, ns, name, "Resolved=False ModelMetadataPending while the Hub holds the model's files", func(s *v1beta1.InferenceService) bool {
		c := condition(s, v1beta1.ConditionResolved)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "ModelMetadataPending"
	})
	assert.NotContains(t, getService(t, ns, name).Annotations, v1beta1.AnnotationResolvedRuntime)

	// The Hub answers: the model's metadata is discovered.
	hub.release()
	bc := berthClient(t)
	var model *v1beta1.ClusterBaseModel
	waitFor(t, ns, "ClusterBaseModel "+name+" MetadataResolved=True", func() bool {
		m, err := bc.OmeV1beta1().ClusterBaseModels().Get(ctxT(t, apiTimeout), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		model = m
		c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.ConditionMetadataResolved)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == m.Generation
	})
	assert.Positive(t, hub.llamaRequests.Load(), "the reconciler never asked the test Hub")
	d := model.Status.Discovered
	require.NotNil(t, d, "status.discovered")
	// Llama 3.1 8B's published figures: 8,030,261,248 parameters (the
	// model card's 8B; the Hub's safetensors total), LlamaForCausalLM,
	// bfloat16, a 131,072-token context.
	assert.Equal(t, "LlamaForCausalLM", deref(d.ModelArchitecture))
	if assert.NotNil(t, d.ParameterCount) {
		assert.Equal(t, int64(8_030_261_248), *d.ParameterCount)
	}
	assert.Equal(t, "8.03B", deref(d.ModelParameterSize))
	assert.Equal(t, "bfloat16", d.DType)
	if assert.NotNil(t, d.MaxTokens) {
		assert.Equal(t, int32(131072), *d.MaxTokens)
	}
	if assert.NotNil(t, d.ModelFormat) {
		assert.Equal(t, "safetensors", d.ModelFormat.Name)
	}
	assert.True(t, strings.HasPrefix(d.Source, "hf://meta-llama/Llama-3.1-8B-Instruct@"), "source %q", d.Source)
	assert.Empty(t, model.Spec.ModelArchitecture, "discovery wrote into the spec")

	// The service is pinned to the runtime OME pairs it with.
	isvc = waitService(t, ns, name, "pinned to "+runtime, func(s *v1beta1.InferenceService) bool {
		return s.Annotations[v1beta1.AnnotationResolvedRuntime] != ""
	})
	assert.Equal(t, "ClusterServingRuntime/"+runtime, isvc.Annotations[v1beta1.AnnotationResolvedRuntime], "decision:\n%s", isvc.Annotations[v1beta1.AnnotationDecision])
	assert.NotContains(t, isvc.Annotations, v1beta1.AnnotationModelDownloaderImage, "a node-cache model is not downloaded")

	// Served from the node cache: the engine pod runs once a node holds it.
	assertServedFromNodeCache(t, ns, name, name, omeLlamaCachePath)
}

// assertDownloaded: the runner gets MODEL_PATH=/mnt/models and mounts an
// emptyDir there, which the downloader init container (the pinned image)
// fills from uri.
func assertDownloaded(t *testing.T, p *corev1.Pod, image, uri string) {
	t.Helper()
	runner := engineRunner(t, p)
	assert.Equal(t, merge.ModelMountPath, envOf(runner)[merge.EnvModelPath])
	mnt := modelMount(runner)
	require.NotNil(t, mnt, "the runner mounts nothing at %s: %v", merge.ModelMountPath, runner.VolumeMounts)
	vol := podVolume(p, mnt.Name)
	require.NotNil(t, vol, "volume %s", mnt.Name)
	assert.NotNil(t, vol.EmptyDir, "a downloaded model lives in an emptyDir: %+v", vol.VolumeSource)
	i := slices.IndexFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == merge.ModelDownloaderName })
	if assert.GreaterOrEqual(t, i, 0, "no %s init container: %v", merge.ModelDownloaderName, containerNames(p.Spec.InitContainers)) {
		dl := p.Spec.InitContainers[i]
		assert.Equal(t, image, dl.Image)
		assert.Equal(t, []string{uri, merge.ModelMountPath}, dl.Args)
	}
}

// omeLlamaCachePath is OME's storage.path of Llama-3.1-8B-Instruct.
const omeLlamaCachePath = "/raid/models/meta/llama-3-1-8b-instruct"

// assertServedFromNodeCache checks the engine pod of service ns/name, whose
// ClusterBaseModel model is served from OME's node cache at path: it waits
// unscheduled until a node carries the model-ready label; the test then
// labels one node the pod admits, as OME's model agent does once the
// weights are on it (removed at cleanup, before the test's own cleanups
// delete the model). The pod lands there and runs, mounts the hostPath
// read-only at /mnt/models with MODEL_PATH set, and requires the label in
// every node-affinity term; router pods get no model.
func assertServedFromNodeCache(t *testing.T, ns, name, model, path string) {
	t.Helper()
	label, err := merge.ModelReadyLabel(merge.KindClusterBaseModel, "", model)
	require.NoError(t, err)
	pending := waitPods(t, ns, name, "an engine pod", func(pods []corev1.Pod) bool { return len(podsOf(pods, v1beta1.ComponentEngine)) > 0 })
	p := podsOf(pending, v1beta1.ComponentEngine)[0]
	assert.Empty(t, p.Spec.NodeName, "pod %s was scheduled before any node held the model", p.Name)
	node := nodeFor(t, &p, label)
	labelNode(t, node, label, merge.ModelReadyValue)
	t.Logf("engine pod %s unscheduled; labelled node %s %s=%s as OME's model agent would", p.Name, node, label, merge.ModelReadyValue)

	pods := waitPods(t, ns, name, "an engine pod Running and Ready on "+node, engineServing(1))
	for _, p := range podsOf(pods, v1beta1.ComponentEngine) {
		assert.Equal(t, node, p.Spec.NodeName, "pod %s is not on the node holding the model", p.Name)
		assertNodeCacheMount(t, &p, label, path)
	}
	for _, r := range podsOf(pods, v1beta1.ComponentRouter) {
		for _, c := range r.Spec.Containers {
			assert.Nil(t, modelMount(c), "router pod %s mounts the model", r.Name)
			assert.NotContains(t, envOf(c), merge.EnvModelPath, "router pod %s gets %s", r.Name, merge.EnvModelPath)
		}
	}
}

// assertNodeCacheMount: the runner mounts hostPath path read-only at
// /mnt/models with MODEL_PATH=/mnt/models, nothing is downloaded, and
// every required node-affinity term requires label=Ready.
func assertNodeCacheMount(t *testing.T, p *corev1.Pod, label, path string) {
	t.Helper()
	runner := engineRunner(t, p)
	assert.Equal(t, merge.ModelMountPath, envOf(runner)[merge.EnvModelPath], "pod %s", p.Name)
	mnt := modelMount(runner)
	if assert.NotNil(t, mnt, "pod %s: the runner mounts nothing at %s", p.Name, merge.ModelMountPath) {
		assert.True(t, mnt.ReadOnly, "pod %s: the model mount is read-only", p.Name)
		vol := podVolume(p, mnt.Name)
		if assert.NotNil(t, vol) && assert.NotNil(t, vol.HostPath, "pod %s: volume %+v", p.Name, vol.VolumeSource) {
			assert.Equal(t, path, vol.HostPath.Path)
		}
	}
	assert.Empty(t, p.Spec.InitContainers, "pod %s: nothing is downloaded from the node cache", p.Name)
	if !assert.NotNil(t, p.Spec.Affinity, "pod %s: no affinity", p.Name) || !assert.NotNil(t, p.Spec.Affinity.NodeAffinity) {
		return
	}
	req := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	require.NotNil(t, req, "pod %s: no required node affinity", p.Name)
	require.NotEmpty(t, req.NodeSelectorTerms)
	for _, term := range req.NodeSelectorTerms {
		assert.True(t, slices.ContainsFunc(term.MatchExpressions, func(r corev1.NodeSelectorRequirement) bool {
			return r.Key == label && r.Operator == corev1.NodeSelectorOpIn && slices.Equal(r.Values, []string{merge.ModelReadyValue})
		}), "pod %s: term %v does not require %s=%s", p.Name, term, label, merge.ModelReadyValue)
	}
}

// nodeFor is the first node, by name, that admits the pod once it carries
// label=Ready (the pod's class's nodes: its nodeSelector and required
// affinity) and has room for the pod's accelerator requests.
func nodeFor(t *testing.T, p *corev1.Pod, label string) string {
	t.Helper()
	nodes, err := env.Kube.CoreV1().Nodes().List(ctxT(t, apiTimeout), metav1.ListOptions{})
	require.NoError(t, err)
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	var admitted []string
	for _, n := range nodes.Items {
		labels := map[string]string{label: merge.ModelReadyValue}
		for k, v := range n.Labels {
			if k != label {
				labels[k] = v
			}
		}
		if n.Spec.Unschedulable || !podAdmitsNode(t, p, labels) {
			continue
		}
		admitted = append(admitted, n.Name)
		if hasRoomFor(t, &n, p) {
			return n.Name
		}
	}
	require.FailNowf(t, "no node", "no node admits pod %s once labelled %s=Ready, with room for it (admitted: %v)", p.Name, label, admitted)
	return ""
}

// hasRoomFor: the node's allocatable accelerators (extended resources,
// with a domain) less what its running pods request cover the pod's.
func hasRoomFor(t *testing.T, n *corev1.Node, p *corev1.Pod) bool {
	t.Helper()
	want := map[corev1.ResourceName]int64{}
	for _, c := range p.Spec.Containers {
		for r, q := range c.Resources.Requests {
			if strings.Contains(string(r), "/") {
				want[r] += q.Value()
			}
		}
	}
	if len(want) == 0 {
		return true
	}
	pods, err := env.Kube.CoreV1().Pods("").List(ctxT(t, apiTimeout), metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
	require.NoError(t, err)
	for r, need := range want {
		q := n.Status.Allocatable[r]
		free := q.Value()
		for _, o := range pods.Items {
			if o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, c := range o.Spec.Containers {
				used := c.Resources.Requests[r]
				free -= used.Value()
			}
		}
		if free < need {
			return false
		}
	}
	return true
}

// labelNode sets a node label, and removes it at cleanup.
func labelNode(t *testing.T, node, key, value string) {
	t.Helper()
	patch := func(v string) error {
		b, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
		if err != nil {
			return err
		}
		if v == "" {
			b = []byte(`{"metadata":{"labels":{"` + key + `":null}}}`)
		}
		_, err = env.Kube.CoreV1().Nodes().Patch(ctxT(t, apiTimeout), node, types.MergePatchType, b, metav1.PatchOptions{})
		return err
	}
	require.NoError(t, patch(value), "label node %s %s=%s", node, key, value)
	t.Cleanup(func() {
		if err := patch(""); err != nil {
			t.Logf("unlabel node %s: %v", node, err)
		}
	})
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// ---------------------------------------------------------------------------
// 2. A model on a PersistentVolumeClaim

// TestOMEPVCModelMountsTheClaim: a BaseModel at pvc://models/<sub-path>
// reaches the engine pod as a read-only mount of the claim at /mnt/models
// with that sub-path, and the pod runs on kwok. The claim is bound to a
// pre-bound PersistentVolume (the devenv has no provisioner), so the
// scheduler's volume binding passes as on a real cluster.
func TestOMEPVCModelMountsTheClaim(t *testing.T) {
	ns := lifecycleNamespace(t, "ome-pvc")
	const model, claim = "llama-3-2-1b-instruct", "models"
	ctx := ctxT(t, 2*time.Minute)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-models"},
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

	kubectlApply(t, "-n", ns, "-f", omeTestdata("pvc-model.yaml"))
	rt := createRuntime(t, MakeRuntime(uniqueName("ome-pvc")).Obj())
	svc := MakeService(ns, "chat").Runtime(rt.Name).Replicas(1).Obj()
	svc.Spec.Model.Name = model
	createService(t, svc)

	pods := waitPods(t, ns, "chat", "an engine pod Running and Ready", engineServing(1))
	p := podsOf(pods, v1beta1.ComponentEngine)[0]
	runner := engineRunner(t, &p)
	mnt := modelMount(runner)
	require.NotNil(t, mnt, "the runner mounts nothing at %s: %v", merge.ModelMountPath, runner.VolumeMounts)
	assert.True(t, mnt.ReadOnly, "the model mount is read-only")
	assert.Equal(t, "meta/llama-3-2-1b-instruct", mnt.SubPath)
	vol := podVolume(&p, mnt.Name)
	require.NotNil(t, vol)
	if assert.NotNil(t, vol.PersistentVolumeClaim, "volume %+v", vol.VolumeSource) {
		assert.Equal(t, claim, vol.PersistentVolumeClaim.ClaimName)
		assert.True(t, vol.PersistentVolumeClaim.ReadOnly)
	}
	assert.Empty(t, p.Spec.InitContainers, "nothing is downloaded from a claim")
	assert.Equal(t, merge.ModelMountPath, envOf(runner)[merge.EnvModelPath])
	assert.NotEmpty(t, p.Spec.NodeName)
}

// TestOMEPVCModelWithoutClaimIsDenied: a service of a pvc:// model whose
// claim does not exist in its namespace is denied, naming the field.
func TestOMEPVCModelWithoutClaimIsDenied(t *testing.T) {
	ns := lifecycleNamespace(t, "ome-noclaim")
	kubectlApply(t, "-n", ns, "-f", omeTestdata("pvc-model.yaml"))
	rt := createRuntime(t, MakeRuntime(uniqueName("ome-noclaim")).Obj())
	svc := MakeService(ns, "chat").Runtime(rt.Name).Replicas(1).Obj()
	svc.Spec.Model.Name = "llama-3-2-1b-instruct"
	// Right after the apply the webhook's informer may not hold the model
	// yet (then selection denies "no BaseModel"): retry until the denial
	// is about the claim, for at most 30 s.
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		_, err = berthClient(t).OmeV1beta1().InferenceServices(ns).Create(ctxT(t, apiTimeout), svc.DeepCopy(), metav1.CreateOptions{})
		require.Error(t, err, "a service of a model whose claim does not exist was admitted")
		if strings.Contains(err.Error(), "PersistentVolumeClaim") || time.Now().After(deadline) {
			break
		}
	}
	assert.True(t, apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || strings.Contains(err.Error(), "denied"), "%v", err)
	assert.Contains(t, err.Error(), `PersistentVolumeClaim "models" does not exist`, "the denial names the claim")
	assert.Contains(t, err.Error(), "spec.storage.storageUri", "the denial names the field")
}

// ---------------------------------------------------------------------------
// 3. A model in the node cache

// TestOMENodeCacheModelLandsOnLabelledNodes: a BaseModel with OME's
// storage.path is served from the node cache: its engine pods mount the
// path from the host and are placed only on nodes OME's model agent
// labelled models.ome.io/<namespace>.basemodel.<name>=Ready. One fleet node
// is labelled; every engine pod lands on it.
func TestOMENodeCacheModelLandsOnLabelledNodes(t *testing.T) {
	ns := lifecycleNamespace(t, "ome-cache")
	const model, node = "llama-3-2-1b-instruct", "cpu-1"
	label, err := merge.ModelReadyLabel(merge.KindBaseModel, ns, model)
	require.NoError(t, err)
	patch := func(value any) {
		b := `{"metadata":{"labels":{"` + label + `":null}}}`
		if value != nil {
			b = `{"metadata":{"labels":{"` + label + `":"` + value.(string) + `"}}}`
		}
		_, err := env.Kube.CoreV1().Nodes().Patch(ctxT(t, apiTimeout), node, types.MergePatchType, []byte(b), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	patch(merge.ModelReadyValue)
	t.Cleanup(func() { patch(nil) })

	kubectlApply(t, "-n", ns, "-f", omeTestdata("node-cache-model.yaml"))
	rt := createRuntime(t, MakeRuntime(uniqueName("ome-cache")).Obj())
	svc := MakeService(ns, "chat").Runtime(rt.Name).Replicas(3).Obj()
	svc.Spec.Model.Name = model
	createService(t, svc)

	pods := waitPods(t, ns, "chat", "3 engine pods Running and Ready", engineServing(3))
	for _, p := range podsOf(pods, v1beta1.ComponentEngine) {
		assert.Equal(t, node, p.Spec.NodeName, "pod %s is not on the only node holding the model", p.Name)
		assertNodeCacheMount(t, &p, label, "/raid/models/meta/llama-3-2-1b-instruct")
	}
}

// ---------------------------------------------------------------------------
// 4. A private model: failures are conditions, and the token opens it

// TestOMEPrivateModelWaitsForItsToken: a BaseModel of a private Hub
// repository names a Secret (storage.key) that does not exist yet. The
// model is MetadataResolved=False CredentialsMissing, and a service of it
// is admitted unpinned with a warning quoting that. A Secret with a wrong
// token makes the model Unauthorized; the right token resolves it (the
// reconciler retries with backoff; nobody edits the model) and the
// service is pinned; its engine pod downloads the model (no storage.path)
// with the Secret's token and runs. No token appears in the model's or the service's
// status, nor in an event.
func TestOMEPrivateModelWaitsForItsToken(t *testing.T) {
	ns := lifecycleNamespace(t, "ome-private")
	const model, secret = "private-llama", "hf-token"
	bc := berthClient(t)
	kubectlApply(t, "-n", ns, "-f", omeTestdata("private-model.yaml"))
	modelCond := func() *metav1.Condition {
		m, err := bc.OmeV1beta1().BaseModels(ns).Get(ctxT(t, apiTimeout), model, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		c := meta.FindStatusCondition(m.Status.Conditions, v1beta1.ConditionMetadataResolved)
		if c == nil || c.ObservedGeneration != m.Generation {
			return nil
		}
		return c
	}
	reasonIs := func(reason string) func() bool {
		return func() bool { c := modelCond(); return c != nil && c.Reason == reason }
	}
	waitFor(t, ns, "BaseModel "+model+" MetadataResolved reason CredentialsMissing", reasonIs("CredentialsMissing"))

	// A wrong token: Unauthorized. (The Secret must exist before a service
	// of the model: the webhook denies a service whose model's Secret is
	// missing from its namespace, since its pods could not start.)
	const wrong = "hf_wrong_token_0000"
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: ns}, StringData: map[string]string{"HF_TOKEN": wrong}}
	_, err := env.Kube.CoreV1().Secrets(ns).Create(ctxT(t, apiTimeout), sec, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, ns, "BaseModel "+model+" MetadataResolved reason Unauthorized", reasonIs("Unauthorized"))
	assert.NotContains(t, modelCond().Message, wrong, "the token leaked into the condition")

	// The service is admitted unpinned, the warning quoting the failure.
	rt := createRuntime(t, MakeRuntime(uniqueName("ome-private")).Obj())
	w := MakeService(ns, "chat").Runtime(rt.Name).Replicas(1)
	w.isvc.Spec.Model.Name = model
	out := kubectlApplyStdin(t, w.JSON(t), "-f", "-")
	assert.Contains(t, out, "admitted unpinned", "kubectl said:\n%s", out)
	assert.Contains(t, out, "Unauthorized", "the warning quotes the model's failure; kubectl said:\n%s", out)
	assert.NotContains(t, getService(t, ns, "chat").Annotations, v1beta1.AnnotationResolvedRuntime)
	waitService(t, ns, "chat", "Resolved=False ModelMetadataPending", func(s *v1beta1.InferenceService) bool {
		c := condition(s, v1beta1.ConditionResolved)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "ModelMetadataPending"
	})

	// The right token: resolved, and the service pinned.
	sec.StringData["HF_TOKEN"] = hubtest.Token
	_, err = env.Kube.CoreV1().Secrets(ns).Update(ctxT(t, apiTimeout), sec, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitFor(t, ns, "BaseModel "+model+" MetadataResolved=True Discovered", reasonIs("Discovered"))
	isvc := waitService(t, ns, "chat", "pinned", func(s *v1beta1.InferenceService) bool {
		return s.Annotations[v1beta1.AnnotationResolvedRuntime] != ""
	})
	assert.Equal(t, "ClusterServingRuntime/"+rt.Name, isvc.Annotations[v1beta1.AnnotationResolvedRuntime])
	m, err := bc.OmeV1beta1().BaseModels(ns).Get(ctxT(t, apiTimeout), model, metav1.GetOptions{})
	require.NoError(t, err)
	if assert.NotNil(t, m.Status.Discovered) && assert.NotNil(t, m.Status.Discovered.ParameterCount) {
		assert.Equal(t, int64(8_030_261_248), *m.Status.Discovered.ParameterCount)
	}

	// No storage.path: the engine pod downloads the model into /mnt/models
	// with the token from the Secret, and runs.
	assert.NotEmpty(t, isvc.Annotations[v1beta1.AnnotationModelDownloaderImage], "the downloader image is pinned")
	pods := waitPods(t, ns, "chat", "an engine pod Running and Ready", engineServing(1))
	p := podsOf(pods, v1beta1.ComponentEngine)[0]
	assertDownloaded(t, &p, isvc.Annotations[v1beta1.AnnotationModelDownloaderImage], "hf://"+privateRepo)
	i := slices.IndexFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == merge.ModelDownloaderName })
	if i >= 0 {
		dl := p.Spec.InitContainers[i]
		if assert.Len(t, dl.EnvFrom, 1, "the downloader reads the token from the Secret") && assert.NotNil(t, dl.EnvFrom[0].SecretRef) {
			assert.Equal(t, secret, dl.EnvFrom[0].SecretRef.Name)
		}
	}

	// No token anywhere a user without Secret access can read.
	dump, _ := kubectlQuiet("get", "basemodel,inferenceservice,events", "-n", ns, "-o", "yaml")
	for _, tok := range []string{wrong, hubtest.Token} {
		assert.NotContains(t, dump, tok, "a token leaked into a model, service or event")
	}
}

// ---------------------------------------------------------------------------
// 5. The service first: kubectl applies files in name order

// TestOMEServiceAppliedBeforeItsModelAndRuntime applies the same three OME
// manifests in the reverse order, in one `kubectl apply -f -` stream: the
// service first, naming a model and a runtime that do not exist yet, then
// the runtime, then the model (a directory whose file names sort that way
// does the same). The service is admitted unpinned with a warning naming
// both missing references, and ends pinned to srt-llama-3-1-8b-instruct
// with the model served from the node cache in its engine pod, on the node
// the test labels as OME's model agent would.
func TestOMEServiceAppliedBeforeItsModelAndRuntime(t *testing.T) {
	const (
		name    = "llama-3-1-8b-instruct"
		runtime = "srt-llama-3-1-8b-instruct"
	)
	require.NotNil(t, hub, "TestMain started no test Hub")
	ensureLifecycleFixtures(t)
	bc := berthClient(t)
	// The cluster-scoped model and runtime share OME's names with
	// TestOMEManifestsAppliedTogether: wait until that test's are gone.
	waitFor(t, "", "ClusterBaseModel and ClusterServingRuntime "+name+" of another test gone", func() bool {
		_, errM := bc.OmeV1beta1().ClusterBaseModels().Get(ctxT(t, apiTimeout), name, metav1.GetOptions{})
		_, errR := bc.OmeV1beta1().ClusterServingRuntimes().Get(ctxT(t, apiTimeout), runtime, metav1.GetOptions{})
		return apierrors.IsNotFound(errM) && apierrors.IsNotFound(errR)
	})
	ns := e2eutil.Namespace(t, env.Kube, "ome-reverse")
	read := func(file string) string {
		b, err := os.ReadFile(omeTestdata("apply-together", file))
		require.NoError(t, err)
		return string(b)
	}
	isvc := strings.Replace(read("30-inferenceservice.yaml"), "namespace: llama-3-1-8b-instruct", "namespace: "+ns, 1)
	require.Contains(t, isvc, "namespace: "+ns)
	stream := isvc + "\n---\n" + read("20-runtime.yaml") + "\n---\n" + read("10-model.yaml")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := kubectlQuiet("get", "clusterbasemodel", name, "-o", "yaml")
			t.Logf("ClusterBaseModel %s at the failure:\n%s\n%s", name, out, describeNamespace(ns))
		}
		out, err := kubectlQuiet("delete", "--ignore-not-found", "--wait=false", "clusterbasemodel/"+name, "clusterservingruntime/"+runtime)
		if err != nil {
			t.Logf("clean up: %v\n%s", err, out)
		}
	})

	out := kubectlApplyStdin(t, stream, "-f", "-")
	t.Logf("kubectl apply -f - (service, runtime, model):\n%s", out)
	warning := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Warning:") && strings.Contains(l, "admitted unpinned") {
			warning = l
		}
	}
	if assert.NotEmpty(t, warning, "no admission warning says the service waits; kubectl said:\n%s", out) {
		assert.Contains(t, warning, "spec.model.name", "the warning names the missing model")
		assert.Contains(t, warning, "spec.runtime.name", "the warning names the missing runtime")
	}

	got := waitService(t, ns, name, "pinned to "+runtime, func(s *v1beta1.InferenceService) bool {
		return s.Annotations[v1beta1.AnnotationResolvedRuntime] != ""
	})
	assert.Equal(t, "ClusterServingRuntime/"+runtime, got.Annotations[v1beta1.AnnotationResolvedRuntime], "decision:\n%s", got.Annotations[v1beta1.AnnotationDecision])
	assertServedFromNodeCache(t, ns, name, name, omeLlamaCachePath)
}
