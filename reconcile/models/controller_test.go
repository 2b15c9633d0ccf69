package models

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"

	berthfake "github.com/berthdev/berth/api/client/clientset/versioned/fake"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/hubtest"
	"github.com/berthdev/berth/modelmeta"
	"github.com/berthdev/berth/reconcile/plan"
)

// These tests drive the model controller's steps (syncModel, processNext)
// against client-go fakes and internal/hubtest, a local Hub serving real
// models' config.json and safetensors headers.

type modelFixture struct {
	t     *testing.T
	kube  *kubefake.Clientset
	berth *berthfake.Clientset
	c     *Controller
	ctx   context.Context
}

func newModelFixture(t *testing.T, opts Options, kubeObjs []runtime.Object, berthObjs ...runtime.Object) *modelFixture {
	t.Helper()
	bc := berthfake.NewSimpleClientset(berthObjs...)
	kc := kubefake.NewSimpleClientset(kubeObjs...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts.Now = time.Now
	c := New(kc, bc, nil, opts)
	c.informers.Start(ctx.Done())
	for !c.Synced() {
		time.Sleep(5 * time.Millisecond)
	}
	return &modelFixture{t: t, kube: kc, berth: bc, c: c, ctx: ctx}
}

func clusterModel(name, uri string) *v1beta1.ClusterBaseModel {
	return &v1beta1.ClusterBaseModel{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1beta1.BaseModelSpec{Storage: &v1beta1.StorageSpec{StorageURI: ptr(uri)}}}
}

// sync runs syncModel once the cache shows the model at its latest
// resourceVersion.
func (f *modelFixture) sync(kind, ns, name string) modelResult {
	f.t.Helper()
	f.waitCache(kind, ns, name)
	res, err := f.c.syncModel(f.ctx, modelKey(kind, ns, name))
	require.NoError(f.t, err)
	return res
}

// waitCache waits until the cache holds what the clientset holds (the
// fake clientset keeps resourceVersion empty, so contents are compared).
func (f *modelFixture) waitCache(kind, ns, name string) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		var spec v1beta1.BaseModelSpec
		var st v1beta1.ModelStatus
		if kind == KindBaseModel {
			o, err := f.berth.OmeV1beta1().BaseModels(ns).Get(f.ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			spec, st = o.Spec, o.Status
		} else {
			o, err := f.berth.OmeV1beta1().ClusterBaseModels().Get(f.ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			spec, st = o.Spec, o.Status
		}
		m, err := f.c.getModel(kind, ns, name)
		return m != nil && apiequality.Semantic.DeepEqual(m.spec, spec) && apiequality.Semantic.DeepEqual(m.status, st), err
	})
	require.NoError(f.t, err)
}

func (f *modelFixture) clusterModel(name string) *v1beta1.ClusterBaseModel {
	f.t.Helper()
	o, err := f.berth.OmeV1beta1().ClusterBaseModels().Get(f.ctx, name, metav1.GetOptions{})
	require.NoError(f.t, err)
	return o
}

func (f *modelFixture) statusWrites() int {
	n := 0
	for _, a := range f.berth.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func (f *modelFixture) secretReads() int {
	n := 0
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource == "secrets" {
			n++
		}
	}
	return n
}

func modelCondition(st v1beta1.ModelStatus, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(st.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// A model whose spec declares everything is resolved without any I/O, not
// even reading the Secret it names, and once written is left alone.
func TestModelDeclaredReadsNothing(t *testing.T) {
	m := clusterModel("declared", "hf://meta-llama/Llama-3.1-8B-Instruct")
	m.Spec.ModelFormat = v1beta1.ModelFormat{Name: "safetensors"}
	m.Spec.ModelArchitecture, m.Spec.ModelParameterSize = ptr("LlamaForCausalLM"), ptr("8B")
	m.Spec.Storage.Key = ptr("hf-token")
	f := newModelFixture(t, Options{HFEndpoint: "http://127.0.0.1:1"}, nil, m)

	res := f.sync(KindClusterBaseModel, "", "declared")
	assert.False(t, res.failed)
	got := f.clusterModel("declared").Status
	assert.Equal(t, plan.ReasonDeclared, modelCondition(got, v1beta1.ConditionMetadataResolved).Reason)
	assert.Equal(t, metav1.ConditionTrue, modelCondition(got, v1beta1.ConditionModelReady).Status)
	assert.Equal(t, v1beta1.ModelStateReady, got.State)
	assert.Equal(t, int64(1), got.ObservedGeneration)
	assert.Nil(t, got.Discovered)
	assert.Zero(t, f.secretReads(), "a declared model never reads its Secret")

	writes := f.statusWrites()
	f.sync(KindClusterBaseModel, "", "declared")
	assert.Equal(t, writes, f.statusWrites(), "nothing changed, nothing written")
	assert.Equal(t, map[string]float64{plan.ReasonDeclared: 1}, f.c.m.Discoveries())
}

// hubCase is one model read from the local Hub.
type hubCase struct {
	name      string
	uri       string
	key       *string
	params    map[string]string
	secret    *corev1.Secret
	endpoint  string // the controller's; "" the hub's
	reason    string
	state     v1beta1.LifeCycleState
	arch      string
	count     int64  // published parameter count
	quant     string // discovered quantization
	failed    bool
	inMessage string
}

func tokenSecret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestModelDiscoveredFromHub(t *testing.T) {
	hub := hubtest.NewServer()
	t.Cleanup(hub.Close)
	tests := []hubCase{
		// Qwen2.5-7B-Instruct: 7.61B parameters (Qwen's model card).
		{name: "public model", uri: "hf://" + hubtest.QwenID, reason: plan.ReasonDiscovered, state: v1beta1.ModelStateReady,
			arch: "Qwen2ForCausalLM", count: 7_615_616_512},
		// Llama-3.1-8B-Instruct is gated: 8.03B parameters with the token.
		{name: "private model with a token", uri: "hf://" + hubtest.LlamaID, key: ptr("hf-token"),
			secret: tokenSecret("berth-system", "hf-token", map[string]string{"token": hubtest.Token}),
			reason: plan.ReasonDiscovered, state: v1beta1.ModelStateReady, arch: "LlamaForCausalLM", count: 8_030_261_248},
		{name: "token under storage.storageKey", uri: "hf://" + hubtest.LlamaID, key: ptr("creds"),
			secret: tokenSecret("berth-system", "creds", map[string]string{"hub": hubtest.Token}),
			reason: plan.ReasonDiscovered, state: v1beta1.ModelStateReady, arch: "LlamaForCausalLM", count: 8_030_261_248},
		{name: "quantized model", uri: "hf://" + hubtest.FP8ID, reason: plan.ReasonDiscovered, state: v1beta1.ModelStateReady,
			arch: "LlamaForCausalLM", quant: "fp8"},
		{name: "per-model endpoint", uri: "hf://" + hubtest.QwenID, endpoint: "http://127.0.0.1:1", params: map[string]string{ParamEndpoint: "<hub>"},
			reason: plan.ReasonDiscovered, state: v1beta1.ModelStateReady, arch: "Qwen2ForCausalLM", count: 7_615_616_512},
		{name: "private model without a token", uri: "hf://" + hubtest.LlamaID, reason: "Unauthorized", state: v1beta1.ModelStateFailed,
			failed: true, inMessage: hubtest.LlamaID},
		{name: "missing Secret", uri: "hf://" + hubtest.LlamaID, key: ptr("nope"), reason: plan.ReasonCredentialsMissing,
			state: v1beta1.ModelStateFailed, failed: true, inMessage: "Secret berth-system/nope"},
		{name: "Secret without a token", uri: "hf://" + hubtest.LlamaID, key: ptr("empty"), secret: tokenSecret("berth-system", "empty", nil),
			reason: plan.ReasonCredentialsMissing, state: v1beta1.ModelStateFailed, failed: true, inMessage: "token or HF_TOKEN"},
		{name: "unknown model", uri: "hf://org/missing", key: ptr("hf-token"), secret: tokenSecret("berth-system", "hf-token", map[string]string{"HF_TOKEN": hubtest.Token}),
			reason: "NotFound", state: v1beta1.ModelStateFailed, failed: true},
		{name: "hub unreachable", uri: "hf://" + hubtest.QwenID, endpoint: "http://127.0.0.1:1", reason: plan.ReasonUnavailable,
			state: v1beta1.ModelStateCreating, failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := clusterModel("m", tt.uri)
			m.Spec.Storage.Key = tt.key
			if tt.name == "token under storage.storageKey" {
				m.Spec.Storage.StorageKey = ptr("hub")
			}
			if tt.params != nil {
				m.Spec.Storage.Parameters = map[string]string{ParamEndpoint: hub.URL}
			}
			var kube []runtime.Object
			if tt.secret != nil {
				kube = append(kube, tt.secret)
			}
			endpoint := tt.endpoint
			if endpoint == "" {
				endpoint = hub.URL
			}
			f := newModelFixture(t, Options{HFEndpoint: endpoint, CredentialsNamespace: "berth-system", DiscoveryTimeout: 20 * time.Second}, kube, m)
			res := f.sync(KindClusterBaseModel, "", "m")
			assert.Equal(t, tt.failed, res.failed)
			got := f.clusterModel("m").Status
			c := modelCondition(got, v1beta1.ConditionMetadataResolved)
			require.Equal(t, tt.reason, c.Reason, c.Message)
			assert.Contains(t, c.Message, tt.inMessage)
			assert.NotContains(t, c.Message, hubtest.Token, "a token never reaches status")
			assert.Equal(t, c.Status, modelCondition(got, v1beta1.ConditionModelReady).Status)
			assert.Equal(t, tt.state, got.State)
			assert.Equal(t, map[string]float64{tt.reason: 1}, f.c.m.Discoveries())
			if tt.reason != plan.ReasonDiscovered {
				assert.Nil(t, got.Discovered)
				return
			}
			require.NotNil(t, got.Discovered)
			d := got.Discovered
			assert.Equal(t, tt.arch, *d.ModelArchitecture)
			require.NotNil(t, d.ModelFormat)
			assert.Equal(t, "safetensors", d.ModelFormat.Name)
			if tt.count > 0 {
				require.NotNil(t, d.ParameterCount)
				assert.Equal(t, tt.count, *d.ParameterCount)
			}
			if tt.quant != "" {
				require.NotNil(t, d.Quantization)
				assert.Equal(t, tt.quant, string(*d.Quantization))
			}
			assert.True(t, strings.HasPrefix(d.Source, strings.SplitN(tt.uri, "@", 2)[0]+"@"), d.Source)
			awaits, why := v1beta1.ModelAwaitsMetadata(f.clusterModel("m").Spec, got, 1)
			assert.False(t, awaits, why)

			// Resolved for this generation: the next sync reads nothing.
			requests := hub.Requests()
			f.sync(KindClusterBaseModel, "", "m")
			assert.Equal(t, requests, hub.Requests())
		})
	}
}

// A failure is retried with backoff; the same failure writes nothing.
func TestModelFailureRetriedWithoutWrites(t *testing.T) {
	hub := hubtest.NewServer()
	t.Cleanup(hub.Close)
	f := newModelFixture(t, Options{HFEndpoint: hub.URL, RetryBase: time.Hour, RetryMax: time.Hour}, nil, clusterModel("llama", "hf://"+hubtest.LlamaID))
	require.True(t, f.sync(KindClusterBaseModel, "", "llama").failed)
	writes := f.statusWrites()
	require.True(t, f.sync(KindClusterBaseModel, "", "llama").failed)
	assert.Equal(t, writes, f.statusWrites())

	// processNext backs off between attempts rather than retrying at
	// once.
	key := modelKey(KindClusterBaseModel, "", "llama")
	for f.c.queue.Len() > 0 { // the informer's add
		k, _ := f.c.queue.Get()
		f.c.queue.Done(k)
	}
	f.c.queue.Add(key)
	require.True(t, f.c.processNext(f.ctx))
	assert.Zero(t, f.c.queue.Len(), "a failed model waits for its backoff")
	assert.Equal(t, 1, f.c.queue.NumRequeues(key))
}

// A BaseModel's Secret is read in its own namespace.
func TestBaseModelSecretInItsNamespace(t *testing.T) {
	hub := hubtest.NewServer()
	t.Cleanup(hub.Close)
	m := &v1beta1.BaseModel{ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: "team", Generation: 1},
		Spec: v1beta1.BaseModelSpec{Storage: &v1beta1.StorageSpec{StorageURI: ptr("hf://" + hubtest.LlamaID), Key: ptr("hf")}}}
	f := newModelFixture(t, Options{HFEndpoint: hub.URL, CredentialsNamespace: "berth-system"},
		[]runtime.Object{tokenSecret("team", "hf", map[string]string{"token": hubtest.Token}),
			tokenSecret("berth-system", "hf", map[string]string{"token": "wrong"})}, m)
	assert.False(t, f.sync(KindBaseModel, "team", "llama").failed)
	got, err := f.berth.OmeV1beta1().BaseModels("team").Get(f.ctx, "llama", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, plan.ReasonDiscovered, modelCondition(got.Status, v1beta1.ConditionMetadataResolved).Reason)
}

func TestSplitModelKey(t *testing.T) {
	tests := []struct {
		key, kind, ns, name string
		ok                  bool
	}{
		{"BaseModel/ns/a", KindBaseModel, "ns", "a", true},
		{"ClusterBaseModel/a", KindClusterBaseModel, "", "a", true},
		{"BaseModel/a", "", "", "", false},
		{"ClusterBaseModel/ns/a", "", "", "", false},
		{"Other/a", "", "", "", false},
		{"BaseModel//a", "", "", "", false},
	}
	for _, tt := range tests {
		kind, ns, name, err := splitModelKey(tt.key)
		assert.Equal(t, tt.ok, err == nil, tt.key)
		assert.Equal(t, []string{tt.kind, tt.ns, tt.name}, []string{kind, ns, name}, tt.key)
		if tt.ok {
			assert.Equal(t, tt.key, modelKey(kind, ns, name))
		}
	}
}

// A pvc:// model is read by an inspector Job that mounts the claim
// read-only; its pod's termination message carries the result. The Job
// is deleted once read.
func TestInspectorJob(t *testing.T) {
	md := string(modelmeta.NewInspectResult(modelmeta.Metadata{Format: "safetensors", FormatVersion: "1.0.0", Architecture: "Qwen2ForCausalLM",
		ParameterCount: 7615616512, Source: "pvc://models/qwen/7b"}, nil).TerminationMessage())
	missing := string(modelmeta.NewInspectResult(modelmeta.Metadata{}, modelmeta.Errorf(modelmeta.ReasonConfigMissing, "config.json", "no config.json")).TerminationMessage())
	tests := []struct {
		name    string
		message string
		failed  bool // the Job failed
		reason  string
	}{
		{"metadata", md, false, plan.ReasonDiscovered},
		{"a failure it reports", missing, true, "ConfigMissing"},
		{"no result", "", true, plan.ReasonInspectFailed},
		{"not its JSON", "exec format error", true, plan.ReasonInspectFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &v1beta1.BaseModel{ObjectMeta: metav1.ObjectMeta{Name: "qwen", Namespace: "team", UID: "uid-qwen", Generation: 2},
				Spec: v1beta1.BaseModelSpec{Storage: &v1beta1.StorageSpec{StorageURI: ptr("pvc://models/qwen/7b")}}}
			f := newModelFixture(t, Options{InspectorImage: "ghcr.io/berthdev/berth:test", DiscoveryTimeout: time.Minute}, nil, m)
			res := f.sync(KindBaseModel, "team", "qwen")
			assert.False(t, res.failed)
			assert.Positive(t, res.requeue, "a running Job is looked at again")
			got, err := f.berth.OmeV1beta1().BaseModels("team").Get(f.ctx, "qwen", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, plan.ReasonInspecting, modelCondition(got.Status, v1beta1.ConditionMetadataResolved).Reason)
			assert.Equal(t, v1beta1.ModelStateCreating, got.Status.State)

			name := inspectJobName(modelFromObject(m))
			job, err := f.kube.BatchV1().Jobs("team").Get(f.ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			pod := job.Spec.Template.Spec
			require.Len(t, pod.Containers, 1)
			ctr := pod.Containers[0]
			assert.Equal(t, "ghcr.io/berthdev/berth:test", ctr.Image)
			assert.Equal(t, []string{"model", "inspect", "pvc://models/qwen/7b", "--root", "/mnt/models", "--termination-message-path", "/dev/termination-log"}, ctr.Args)
			assert.Equal(t, []corev1.VolumeMount{{Name: "model", MountPath: "/mnt/models", ReadOnly: true}}, ctr.VolumeMounts)
			require.Len(t, pod.Volumes, 1)
			assert.Equal(t, &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models", ReadOnly: true}, pod.Volumes[0].PersistentVolumeClaim)
			assert.False(t, *pod.AutomountServiceAccountToken)
			assert.Equal(t, int64(60), *job.Spec.ActiveDeadlineSeconds)
			assert.Equal(t, "BaseModel", job.OwnerReferences[0].Kind)

			// Still running: nothing new.
			f.sync(KindBaseModel, "team", "qwen")
			jobs, err := f.kube.BatchV1().Jobs("team").List(f.ctx, metav1.ListOptions{})
			require.NoError(t, err)
			assert.Len(t, jobs.Items, 1)

			// It ends.
			cond := batchv1.JobComplete
			if tt.failed {
				cond = batchv1.JobFailed
			}
			job.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
			_, err = f.kube.BatchV1().Jobs("team").UpdateStatus(f.ctx, job, metav1.UpdateOptions{})
			require.NoError(t, err)
			_, err = f.kube.CoreV1().Pods("team").Create(f.ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-x", Namespace: "team", Labels: map[string]string{"job-name": name}},
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "inspect",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: tt.message}}}}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			res = f.sync(KindBaseModel, "team", "qwen")
			assert.Equal(t, tt.reason != plan.ReasonDiscovered, res.failed)
			got, err = f.berth.OmeV1beta1().BaseModels("team").Get(f.ctx, "qwen", metav1.GetOptions{})
			require.NoError(t, err)
			c := modelCondition(got.Status, v1beta1.ConditionMetadataResolved)
			assert.Equal(t, tt.reason, c.Reason, c.Message)
			if tt.reason == plan.ReasonDiscovered {
				require.NotNil(t, got.Status.Discovered)
				assert.Equal(t, "Qwen2ForCausalLM", *got.Status.Discovered.ModelArchitecture)
				assert.Equal(t, int64(7615616512), *got.Status.Discovered.ParameterCount)
			}
			_, err = f.kube.BatchV1().Jobs("team").Get(f.ctx, name, metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "a read Job is deleted")
		})
	}
}

// The Job's name follows the model's identity and generation.
func TestInspectJobName(t *testing.T) {
	m := modelFromObject(clusterModel("a", "pvc://c/p"))
	n := inspectJobName(m)
	assert.LessOrEqual(t, len(n), 63)
	m2 := *m
	m2.generation++
	assert.NotEqual(t, n, inspectJobName(&m2))
	assert.Equal(t, n, inspectJobName(modelFromObject(clusterModel("a", "pvc://c/p"))))
}

// An s3:// model is read at storage.parameters' endpoint, region and path
// style, signed with the Secret's keys; a refusal is Unauthorized.
func TestS3ModelParametersAndCredentials(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []*http.Request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name   string
		params map[string]string
		secret *corev1.Secret
		reason string
		auth   string // in the Authorization header; "" for none
	}{
		{name: "signed, path style", params: map[string]string{ParamEndpoint: srv.URL, ParamRegion: "eu-west-1", ParamPathStyle: "true"},
			secret: tokenSecret("berth-system", "s3", map[string]string{SecretKeyAccessKeyID: "AKIDEXAMPLE", SecretKeySecretAccessKey: "secret"}),
			reason: "Unauthorized", auth: "Credential=AKIDEXAMPLE/"},
		{name: "keys missing", params: map[string]string{ParamEndpoint: srv.URL, ParamPathStyle: "true"},
			secret: tokenSecret("berth-system", "s3", map[string]string{"token": "x"}), reason: plan.ReasonCredentialsMissing},
		{name: "bad pathStyle", params: map[string]string{ParamEndpoint: srv.URL, ParamPathStyle: "maybe"},
			secret: tokenSecret("berth-system", "s3", map[string]string{SecretKeyAccessKeyID: "a", SecretKeySecretAccessKey: "b"}), reason: plan.ReasonInvalidStorageURI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			m := clusterModel("s3", "s3://models/llama")
			m.Spec.Storage.Key, m.Spec.Storage.Parameters = ptr("s3"), tt.params
			f := newModelFixture(t, Options{}, []runtime.Object{tt.secret}, m)
			assert.True(t, f.sync(KindClusterBaseModel, "", "s3").failed)
			c := modelCondition(f.clusterModel("s3").Status, v1beta1.ConditionMetadataResolved)
			assert.Equal(t, tt.reason, c.Reason, c.Message)
			assert.NotContains(t, c.Message, "secret")
			mu.Lock()
			defer mu.Unlock()
			if tt.auth == "" {
				assert.Empty(t, seen, "nothing is sent without usable credentials")
				return
			}
			require.NotEmpty(t, seen)
			assert.True(t, strings.HasPrefix(seen[0].URL.Path, "/models/"), seen[0].URL.Path)
			assert.Contains(t, seen[0].Header.Get("Authorization"), tt.auth)
			assert.Contains(t, seen[0].Header.Get("Authorization"), "/eu-west-1/s3/")
		})
	}
}

// The inspector Job of a pvc://<namespace>:<claim>/<path> model runs where
// the claim is; others in the model's credentials namespace.
func TestInspectNamespace(t *testing.T) {
	for _, c := range []struct {
		loc  v1beta1.StorageLocation
		want string
	}{
		{v1beta1.StorageLocation{ClaimName: "models"}, "berth-system"},
		{v1beta1.StorageLocation{ClaimNamespace: "team-a", ClaimName: "models", SubPath: "llama"}, "team-a"},
	} {
		if got := inspectNamespace("berth-system", c.loc); got != c.want {
			t.Errorf("inspectNamespace(%+v) = %q, want %q", c.loc, got, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
