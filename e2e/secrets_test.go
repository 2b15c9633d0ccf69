package e2e

// Least privilege for Secrets: the webhook reads a
// Secret only by name, in the namespace of the service that needs it, and
// only where a downloader in that namespace uses it. OME's gated models
// (storage.key hf-token) served from the node cache need no Secret in the
// service's namespace: OME's model agent, not the pod, reads it.

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/devenv/install"
	"github.com/berthdev/berth/internal/testing/e2eutil"
	"github.com/berthdev/berth/webhook/cache"
)

// omeGatedModel is the ClusterBaseModel of testdata/ome/gated-node-cache-model.yaml.
const (
	omeGatedModel     = "llama-3-2-3b-instruct"
	omeGatedCachePath = "/raid/models/meta/llama-3-2-3b-instruct"
)

// dryRunPinned creates svc with dryRun until the webhook's cache holds its
// model and runtime (the answer is pinned), for at most 30 s. A denial
// fails the test at once, quoting it.
func dryRunPinned(t *testing.T, svc *v1beta1.InferenceService) {
	t.Helper()
	bc := berthClient(t)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		got, err := bc.OmeV1beta1().InferenceServices(svc.Namespace).Create(ctxT(t, apiTimeout), svc.DeepCopy(),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.NoError(t, err, "InferenceService %s/%s was denied", svc.Namespace, svc.Name)
		if got.Annotations[v1beta1.AnnotationResolvedRuntime] != "" {
			return
		}
		require.False(t, time.Now().After(deadline), "InferenceService %s/%s not pinned after 30 s: %s",
			svc.Namespace, svc.Name, got.Annotations[v1beta1.AnnotationDecision])
	}
}

// TestOMEGatedNodeCacheModelNeedsNoSecret: OME's gated ClusterBaseModel
// (storage.key hf-token, storage.path: the node cache) serves a service in
// a namespace without any Secret: no downloader runs there, so nothing in
// the pods reads one. The engine pod lands on the node labelled
// model-ready and mounts the cache; no container references a Secret. A
// model that is downloaded (no storage.path) in the same namespace still
// needs its Secret there: that service is denied naming it.
func TestOMEGatedNodeCacheModelNeedsNoSecret(t *testing.T) {
	ns := lifecycleNamespace(t, "ome-gated")
	t.Cleanup(func() {
		out, err := kubectlQuiet("delete", "--ignore-not-found", "--wait=false", "clusterbasemodel/"+omeGatedModel)
		if err != nil {
			t.Logf("clean up: %v\n%s", err, out)
		}
	})
	kubectlApply(t, "-f", omeTestdata("gated-node-cache-model.yaml"))
	rt := createRuntime(t, MakeRuntime(uniqueName("ome-gated")).Obj())
	svc := MakeService(ns, "chat").Runtime(rt.Name).Replicas(1).Obj()
	svc.Spec.Model.Name = omeGatedModel
	dryRunPinned(t, svc)
	createService(t, svc)
	assertServedFromNodeCache(t, ns, "chat", omeGatedModel, omeGatedCachePath)
	for _, p := range podsOf(servicePods(t, ns, "chat"), v1beta1.ComponentEngine) {
		for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
			assert.Empty(t, c.EnvFrom, "pod %s container %s reads a Secret", p.Name, c.Name)
			for _, e := range c.Env {
				assert.True(t, e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil, "pod %s container %s: %s reads a Secret", p.Name, c.Name, e.Name)
			}
		}
	}

	// The downloaded model names the same Secret: its pods' downloader
	// reads it in this namespace, so the service is denied. Right after the
	// apply the webhook may not hold the model yet: retry until the denial
	// is about the Secret, for at most 30 s.
	kubectlApply(t, "-n", ns, "-f", omeTestdata("private-model.yaml"))
	dl := MakeService(ns, "private").Runtime(rt.Name).Replicas(1).Obj()
	dl.Spec.Model.Name = "private-llama"
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		_, err = berthClient(t).OmeV1beta1().InferenceServices(ns).Create(ctxT(t, apiTimeout), dl.DeepCopy(),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		require.Error(t, err, "a service of a downloaded model whose Secret does not exist was admitted")
		if strings.Contains(err.Error(), "Secret") || time.Now().After(deadline) {
			break
		}
	}
	assert.Contains(t, err.Error(), `Secret "hf-token" does not exist in namespace `+ns, "the denial names the Secret")
	assert.Contains(t, err.Error(), "spec.storage.key", "the denial names the field")
}

// webhookAccount is the identity deploy/base binds the webhook's
// ClusterRole to, as the apiserver sees its ServiceAccount token.
var webhookAccount = rest.ImpersonationConfig{
	UserName: "system:serviceaccount:berth-system:berth-webhook",
	Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:berth-system", "system:authenticated"},
}

// TestWebhookClusterRoleReadsSecretsByName applies deploy/base's RBAC for
// the webhook and acts as its ServiceAccount: it may get a Secret by name
// (metadata only), and may neither list nor watch Secrets, in any
// namespace or across all of them. The webhook's caches, built as
// berth-webhook builds them, sync under that role and answer whether a
// Secret exists.
func TestWebhookClusterRoleReadsSecretsByName(t *testing.T) {
	ctx := ctxT(t, 2*time.Minute)
	objs, err := install.ReadObjects(env.Path("deploy", "base", "rbac.yaml"))
	require.NoError(t, err)
	require.NoError(t, retryWebhook(ctx, func() error { return env.Applier.ApplyAll(ctx, objs) }))
	ns := e2eutil.Namespace(t, env.Kube, "rbac-secrets")
	_, err = env.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hf-token"}, StringData: map[string]string{"token": "hf_e2e"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	cfg := rest.CopyConfig(env.Cluster.RESTConfig())
	cfg.Impersonate = webhookAccount
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	meta, err := metadata.NewForConfig(cfg)
	require.NoError(t, err)
	berth, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)

	// The apiserver's authorizer sees a new binding within moments.
	secrets := meta.Resource(cache.SecretsResource)
	waitFor(t, ns, "the webhook's account may get Secret hf-token", func() bool {
		_, err := secrets.Namespace(ns).Get(ctx, "hf-token", metav1.GetOptions{})
		return err == nil
	})
	_, err = secrets.Namespace(ns).Get(ctx, "absent", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a missing Secret is NotFound, not Forbidden: %v", err)

	forbidden := func(what string, err error) {
		t.Helper()
		assert.True(t, apierrors.IsForbidden(err), "the webhook's account may %s: err = %v", what, err)
	}
	_, err = kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	forbidden("list Secrets in every namespace", err)
	_, err = kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	forbidden("list Secrets in "+ns, err)
	_, err = secrets.List(ctx, metav1.ListOptions{})
	forbidden("list Secrets' metadata", err)
	w, err := kube.CoreV1().Secrets("").Watch(ctx, metav1.ListOptions{})
	if w != nil {
		w.Stop()
	}
	forbidden("watch Secrets", err)

	c, err := cache.New(berth, kube, meta, 0, cache.ExemptNamespaces("berth-system"))
	require.NoError(t, err)
	c.Start(ctx)
	require.True(t, c.WaitForSync(ctxT(t, time.Minute)), "the webhook's caches did not sync under its ClusterRole")
	exists, known := c.Secrets.Has(ctx, ns, "hf-token")
	assert.True(t, exists && known, "Secrets.Has(hf-token) = %v, %v", exists, known)
	exists, known = c.Secrets.Has(ctx, ns, "absent")
	assert.True(t, !exists && known, "Secrets.Has(absent) = %v, %v", exists, known)
}
