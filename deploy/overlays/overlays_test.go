// Package overlays holds the kustomize overlays that install berth's webhook
// with certificates from cert-manager or self-managed ones. Its tests render
// every overlay with `kubectl kustomize` (as `kubectl apply -k` would) and
// check the invariants that keep admissions safe: webhook paths and scopes,
// failure policy, timeouts, selectors, a hardened two-replica Deployment and
// read-only RBAC apart from the self-managed certificate writes.
package overlays

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/version"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/webhook/server"
)

const (
	namespace      = "berth-system"
	webhookName    = "berth-webhook"
	secretName     = "berth-webhook-tls"
	mutatingName   = "berth-mutating"
	validatingName = "berth-validating"
	serviceDNSName = "berth-webhook.berth-system.svc"
)

// overlays are the installable variants; "../.." is deploy/kustomization.yaml.
var overlays = []string{"self-managed", "cert-manager"}

// wantWebhooks is the contract with webhook/server: name, path (the
// server's own route constants, so a renamed route fails here) and what it
// intercepts.
var wantWebhooks = map[string]struct {
	mutating bool
	path     string
	group    string
	version  string
	resource string
	scope    admissionregistrationv1.ScopeType
	ops      []admissionregistrationv1.OperationType
}{
	"inferenceservices.mutate.ome.io":              {true, server.PathMutateInferenceServices, "ome.io", "v1beta1", "inferenceservices", admissionregistrationv1.NamespacedScope, createUpdate},
	server.WebhookMutatePods:                       {true, server.PathMutatePods, "", "v1", "pods", admissionregistrationv1.NamespacedScope, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}},
	"inferenceservices.validate.ome.io":            {false, server.PathValidateInferenceServices, "ome.io", "v1beta1", "inferenceservices", admissionregistrationv1.NamespacedScope, createUpdate},
	"servingruntimes.validate.ome.io":              {false, server.PathValidateServingRuntimes, "ome.io", "v1beta1", "servingruntimes", admissionregistrationv1.NamespacedScope, createUpdate},
	"clusterservingruntimes.validate.ome.io":       {false, server.PathValidateClusterServingRuntimes, "ome.io", "v1beta1", "clusterservingruntimes", admissionregistrationv1.ClusterScope, createUpdate},
	"acceleratorclasses.validate.ome.io":           {false, server.PathValidateAcceleratorClasses, "ome.io", "v1beta1", "acceleratorclasses", admissionregistrationv1.ClusterScope, createUpdate},
	"clusterengineruntimeprofiles.validate.ome.io": {false, server.PathValidateProfiles, "ome.io", "v1beta1", "clusterengineruntimeprofiles", admissionregistrationv1.ClusterScope, createUpdate},
	"basemodels.validate.ome.io":                   {false, server.PathValidateBaseModels, "ome.io", "v1beta1", "basemodels", admissionregistrationv1.NamespacedScope, createUpdate},
	"clusterbasemodels.validate.ome.io":            {false, server.PathValidateClusterBaseModels, "ome.io", "v1beta1", "clusterbasemodels", admissionregistrationv1.ClusterScope, createUpdate},
	"servingpolicies.validate.policy.berth.dev":    {false, server.PathValidateServingPolicies, "policy.berth.dev", "v1alpha1", "servingpolicies", admissionregistrationv1.ClusterScope, createUpdate},
}

var createUpdate = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}

// readVerbs are what the caches need; anything else must be a listed write.
var readVerbs = []string{"get", "list", "watch"}

// wantReads are the resources the webhook's caches list and watch.
var wantReads = []string{
	"ome.io/inferenceservices", "ome.io/servingruntimes", "ome.io/clusterservingruntimes",
	"ome.io/basemodels", "ome.io/clusterbasemodels", "ome.io/acceleratorclasses",
	"ome.io/clusterengineruntimeprofiles", "/nodes", "/pods",
	"/persistentvolumeclaims",                         // metadata only: does a model's claim exist
	"policy.berth.dev/servingpolicies", "/namespaces", // the policies in force and the labels they select
}

// wantGets are read by name only, never listed or watched: the Secret a
// downloaded model's storage.key names, as metadata.
var wantGets = []string{"/secrets get"}

// grant is one verb on one resource (optionally one name, one namespace).
type grant struct {
	resource, name, namespace, verb string
}

func (g grant) String() string {
	return fmt.Sprintf("%s %s name=%q namespace=%q", g.verb, g.resource, g.name, g.namespace)
}

// selfManagedWrites are the only non-read grants, all by name.
var selfManagedWrites = []grant{
	{"admissionregistration.k8s.io/mutatingwebhookconfigurations", mutatingName, "", "get"},
	{"admissionregistration.k8s.io/mutatingwebhookconfigurations", mutatingName, "", "patch"},
	{"admissionregistration.k8s.io/validatingwebhookconfigurations", validatingName, "", "get"},
	{"admissionregistration.k8s.io/validatingwebhookconfigurations", validatingName, "", "patch"},
	{"/secrets", secretName, namespace, "get"},
	{"/secrets", secretName, namespace, "update"},
}

func TestWebhookConfigurations(t *testing.T) {
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, overlay)
			var mwc admissionregistrationv1.MutatingWebhookConfiguration
			var vwc admissionregistrationv1.ValidatingWebhookConfiguration
			objs.decode(t, "MutatingWebhookConfiguration", "", mutatingName, &mwc)
			objs.decode(t, "ValidatingWebhookConfiguration", "", validatingName, &vwc)
			assert.Len(t, objs.ofKind("MutatingWebhookConfiguration"), 1)
			assert.Len(t, objs.ofKind("ValidatingWebhookConfiguration"), 1)

			seen := map[string]bool{}
			for _, w := range mwc.Webhooks {
				seen[w.Name] = true
				want, ok := wantWebhooks[w.Name]
				if !assert.True(t, ok, "unexpected mutating webhook %s", w.Name) {
					continue
				}
				assert.True(t, want.mutating, "%s belongs in %s", w.Name, validatingName)
				checkCommon(t, w.Name, w.ClientConfig, w.Rules, w.AdmissionReviewVersions, w.SideEffects, w.TimeoutSeconds,
					w.MatchPolicy, w.FailurePolicy, w.NamespaceSelector)
				if w.Name == server.WebhookMutatePods {
					require.NotNil(t, w.ObjectSelector, w.Name)
					assert.Equal(t, []metav1.LabelSelectorRequirement{{Key: "ome.io/inferenceservice", Operator: metav1.LabelSelectorOpExists}},
						w.ObjectSelector.MatchExpressions, "only labelled pods reach the pod webhook")
					assert.Empty(t, w.ObjectSelector.MatchLabels)
					require.NotNil(t, w.ReinvocationPolicy, w.Name)
					assert.Equal(t, admissionregistrationv1.IfNeededReinvocationPolicy, *w.ReinvocationPolicy)
				}
			}
			for _, w := range vwc.Webhooks {
				seen[w.Name] = true
				want, ok := wantWebhooks[w.Name]
				if !assert.True(t, ok, "unexpected validating webhook %s", w.Name) {
					continue
				}
				assert.False(t, want.mutating, "%s belongs in %s", w.Name, mutatingName)
				checkCommon(t, w.Name, w.ClientConfig, w.Rules, w.AdmissionReviewVersions, w.SideEffects, w.TimeoutSeconds,
					w.MatchPolicy, w.FailurePolicy, w.NamespaceSelector)
				assert.Nil(t, w.ObjectSelector, "%s: validation sees every object of its kind", w.Name)
			}
			for name := range wantWebhooks {
				assert.True(t, seen[name], "webhook %s missing", name)
			}
		})
	}
}

func checkCommon(t *testing.T, name string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations,
	versions []string, sideEffects *admissionregistrationv1.SideEffectClass, timeout *int32, match *admissionregistrationv1.MatchPolicyType,
	failure *admissionregistrationv1.FailurePolicyType, nsSel *metav1.LabelSelector,
) {
	t.Helper()
	want := wantWebhooks[name]
	assert.Nil(t, cc.URL, "%s: reach the webhook through its Service", name)
	if assert.NotNil(t, cc.Service, name) {
		assert.Equal(t, namespace, cc.Service.Namespace, name)
		assert.Equal(t, webhookName, cc.Service.Name, name)
		if assert.NotNil(t, cc.Service.Path, name) {
			assert.Equal(t, want.path, *cc.Service.Path, name)
		}
		if cc.Service.Port != nil {
			assert.Equal(t, int32(443), *cc.Service.Port, name)
		}
	}
	if assert.Len(t, rules, 1, name) {
		r := rules[0]
		assert.Equal(t, []string{want.group}, r.APIGroups, name)
		assert.Equal(t, []string{want.version}, r.APIVersions, name)
		assert.Equal(t, []string{want.resource}, r.Resources, "%s: no subresources, no wildcards", name)
		assert.Equal(t, want.ops, r.Operations, name)
		if assert.NotNil(t, r.Scope, name) {
			assert.Equal(t, want.scope, *r.Scope, name)
		}
	}
	assert.Equal(t, []string{"v1"}, versions, name)
	if assert.NotNil(t, sideEffects, name) {
		assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *sideEffects, "%s: dry-run requests must reach the webhook", name)
	}
	if assert.NotNil(t, timeout, name) {
		assert.Equal(t, int32(5), *timeout, name)
	}
	if assert.NotNil(t, match, name) {
		assert.Equal(t, admissionregistrationv1.Equivalent, *match, name)
	}
	if assert.NotNil(t, failure, name) {
		assert.Equal(t, admissionregistrationv1.Fail, *failure, name)
	}
	if assert.NotNil(t, nsSel, name) {
		sel, err := metav1.LabelSelectorAsSelector(nsSel)
		require.NoError(t, err, name)
		for ns, wantMatch := range map[string]bool{"kube-system": false, namespace: false, "default": true, "team-a": true} {
			got := sel.Matches(labels.Set{"kubernetes.io/metadata.name": ns})
			assert.Equal(t, wantMatch, got, "%s: namespace %s selected=%v", name, ns, got)
		}
	}
}

func TestDeployment(t *testing.T) {
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, overlay)
			var d appsv1.Deployment
			objs.decode(t, "Deployment", namespace, webhookName, &d)
			objs.decode(t, "Namespace", "", namespace, &corev1.Namespace{})
			objs.decode(t, "ServiceAccount", namespace, webhookName, &corev1.ServiceAccount{})

			require.NotNil(t, d.Spec.Replicas)
			assert.Equal(t, int32(2), *d.Spec.Replicas)
			if ru := d.Spec.Strategy.RollingUpdate; assert.NotNil(t, ru) {
				assert.Equal(t, intstr.FromInt32(0), *ru.MaxUnavailable, "rollouts keep both replicas ready")
			}
			pod := d.Spec.Template.Spec
			podLabels := labels.Set(d.Spec.Template.Labels)
			selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
			require.NoError(t, err)
			assert.True(t, selector.Matches(podLabels))
			assert.Equal(t, webhookName, pod.ServiceAccountName)

			// Hardening (Pod Security "restricted").
			require.NotNil(t, pod.SecurityContext)
			assert.Equal(t, ptrTrue(), pod.SecurityContext.RunAsNonRoot)
			if assert.NotNil(t, pod.SecurityContext.SeccompProfile) {
				assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
			}
			if assert.Len(t, pod.TopologySpreadConstraints, 1) {
				tsc := pod.TopologySpreadConstraints[0]
				assert.Equal(t, "kubernetes.io/hostname", tsc.TopologyKey)
				tscSel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
				require.NoError(t, err)
				assert.True(t, tscSel.Matches(podLabels), "the spread constraint counts the webhook's own pods")
			}
			require.Len(t, pod.Containers, 1)
			c := pod.Containers[0]
			assert.Equal(t, version.Image("berth-webhook"), c.Image)
			for _, arg := range []string{"--cert-dir=/certs", "--listen=:9443", "--probe-listen=:8081"} {
				assert.Contains(t, c.Args, arg)
			}
			assert.Equal(t, []string{"--model-downloader-image", version.Image("berth-downloader")}, flagAndNext(c.Args, "--model-downloader-image"),
				"models are downloaded by berth's own image, at the webhook's registry and tag")
			sc := c.SecurityContext
			require.NotNil(t, sc)
			assert.Equal(t, ptrTrue(), sc.ReadOnlyRootFilesystem)
			assert.Equal(t, ptrFalse(), sc.AllowPrivilegeEscalation)
			assert.NotEqual(t, ptrTrue(), sc.Privileged)
			if assert.NotNil(t, sc.Capabilities) {
				assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
				assert.Empty(t, sc.Capabilities.Add)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				assert.Contains(t, c.Resources.Requests, r, "request %s", r)
				assert.Contains(t, c.Resources.Limits, r, "limit %s", r)
			}

			// Ports and probes.
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			assert.Equal(t, map[string]int32{"webhook": 9443, "probes": 8081}, ports)
			for probe, path := range map[*corev1.Probe]string{c.ReadinessProbe: "/readyz", c.LivenessProbe: "/healthz"} {
				if assert.NotNil(t, probe, path) && assert.NotNil(t, probe.HTTPGet, path) {
					assert.Equal(t, path, probe.HTTPGet.Path)
					assert.Equal(t, int32(8081), resolvePort(t, probe.HTTPGet.Port, ports), path)
					assert.Empty(t, probe.HTTPGet.Scheme, "%s: probes are plain HTTP", path)
				}
			}

			// The certificate directory.
			var mount *corev1.VolumeMount
			for i := range c.VolumeMounts {
				if c.VolumeMounts[i].MountPath == "/certs" {
					mount = &c.VolumeMounts[i]
				}
			}
			require.NotNil(t, mount, "/certs must be mounted")
			var vol *corev1.Volume
			for i := range pod.Volumes {
				if pod.Volumes[i].Name == mount.Name {
					vol = &pod.Volumes[i]
				}
			}
			require.NotNil(t, vol, "volume %s", mount.Name)
			switch overlay {
			case "cert-manager":
				if assert.NotNil(t, vol.Secret, "cert-manager writes the Secret; the kubelet keeps /certs current") {
					assert.Equal(t, secretName, vol.Secret.SecretName)
				}
				assert.True(t, mount.ReadOnly)
			case "self-managed":
				assert.Nil(t, vol.Secret, "the webhook writes its own files")
				if assert.NotNil(t, vol.EmptyDir) {
					assert.Equal(t, corev1.StorageMediumMemory, vol.EmptyDir.Medium, "keys never touch the node's disk")
				}
				assert.False(t, mount.ReadOnly)
				for _, arg := range []string{"--self-signed", "--cert-secret=" + secretName,
					"--dns-names=" + serviceDNSName + "," + serviceDNSName + ".cluster.local",
					"--mutating-config=" + mutatingName, "--validating-config=" + validatingName} {
					assert.Contains(t, c.Args, arg)
				}
			}

			// Service and PDB select the pods.
			var svc corev1.Service
			objs.decode(t, "Service", namespace, webhookName, &svc)
			assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels))
			var https *corev1.ServicePort
			for i := range svc.Spec.Ports {
				if svc.Spec.Ports[i].Port == 443 {
					https = &svc.Spec.Ports[i]
				}
			}
			if assert.NotNil(t, https, "the apiserver calls port 443 by default") {
				assert.Equal(t, int32(9443), resolvePort(t, https.TargetPort, ports))
			}
			var pdb policyv1.PodDisruptionBudget
			objs.decode(t, "PodDisruptionBudget", namespace, webhookName, &pdb)
			if assert.NotNil(t, pdb.Spec.MinAvailable) {
				assert.Equal(t, intstr.FromInt32(1), *pdb.Spec.MinAvailable)
			}
			pdbSel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			require.NoError(t, err)
			assert.True(t, pdbSel.Matches(podLabels))
		})
	}
}

// TestRBAC collects every grant bound to the webhook's ServiceAccount: reads
// of exactly what the caches need, and writes only in the self-managed
// overlay, only the listed ones, each restricted to one object by name.
func TestRBAC(t *testing.T) {
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, overlay)
			grants := boundGrants(t, objs)
			var reads, writes []grant
			for _, g := range grants {
				assert.NotContains(t, g.resource, "*", "no wildcard: %s", g)
				assert.NotEqual(t, "*", g.verb, "no wildcard: %s", g)
				if slices.Contains(readVerbs, g.verb) && g.name == "" && g.namespace == "" {
					reads = append(reads, g)
				} else {
					writes = append(writes, g)
				}
			}
			var readable []string
			for _, g := range reads {
				readable = append(readable, g.resource+" "+g.verb)
			}
			var want []string
			for _, r := range wantReads {
				for _, v := range readVerbs {
					want = append(want, r+" "+v)
				}
			}
			want = append(want, wantGets...)
			sort.Strings(want)
			assert.Equal(t, want, uniqueSorted(readable), "cluster-wide access is read-only and limited to the cached kinds and Secrets by name")

			switch overlay {
			case "self-managed":
				assert.ElementsMatch(t, selfManagedWrites, writes)
			default:
				assert.Empty(t, writes, "with cert-manager the webhook writes nothing")
			}
		})
	}
}

// TestWebhookClusterRoleRules pins the webhook's ClusterRole, rule by
// rule: reads of what its caches list and watch, and Secrets by name only
// (get: the webhook asks for one Secret's metadata when a service's pods
// will download a model with it; it never lists or watches Secrets).
func TestWebhookClusterRoleRules(t *testing.T) {
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, overlay)
			var role rbacv1.ClusterRole
			objs.decode(t, "ClusterRole", "", webhookName, &role)
			read := []string{"get", "list", "watch"}
			assert.Equal(t, []rbacv1.PolicyRule{
				{APIGroups: []string{"ome.io"}, Resources: []string{"inferenceservices", "servingruntimes", "clusterservingruntimes",
					"basemodels", "clusterbasemodels", "acceleratorclasses", "clusterengineruntimeprofiles"}, Verbs: read},
				{APIGroups: []string{"policy.berth.dev"}, Resources: []string{"servingpolicies"}, Verbs: read},
				{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: read},
				{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: read},
				{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: read},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
			}, role.Rules)
		})
	}
}

// TestReconcilerRBAC pins the reconciler's least privilege: it reads the
// decision's inputs and models, writes InferenceService and model status,
// patches services only for the model metadata nudge, gets (never lists)
// Secrets, runs inspector Jobs, creates and deletes pods (patching only
// their labels), manages Services, HPAs and the routers' ServiceAccounts,
// Roles and RoleBindings, records events, and touches Leases only in
// berth's namespace.
func TestReconcilerRBAC(t *testing.T) {
	objs := render(t, "self-managed")
	var got []string
	for _, g := range boundGrantsOf(t, objs, "berth-reconciler") {
		got = append(got, g.String())
	}
	var want []string
	add := func(ns string, resources, verbs []string) {
		for _, r := range resources {
			for _, v := range verbs {
				want = append(want, grant{resource: r, namespace: ns, verb: v}.String())
			}
		}
	}
	add("", []string{"ome.io/inferenceservices", "ome.io/servingruntimes", "ome.io/clusterservingruntimes",
		"ome.io/acceleratorclasses", "ome.io/clusterengineruntimeprofiles", "ome.io/basemodels", "ome.io/clusterbasemodels"}, readVerbs)
	add("", []string{"ome.io/inferenceservices/status"}, []string{"get", "update", "patch"})
	add("", []string{"ome.io/inferenceservices"}, []string{"patch"}) // the model metadata nudge
	add("", []string{"ome.io/basemodels/status", "ome.io/clusterbasemodels/status"}, []string{"get", "update"})
	add("", []string{"/secrets"}, []string{"get"}) // storage.key, one GET: never list or watch
	add("", []string{"batch/jobs"}, []string{"get", "create", "delete"})
	add("", []string{"ome.io/servingruntimes/status", "ome.io/clusterservingruntimes/status"}, []string{"get", "update"})
	// Pods: patched only for the labels OME's runtimes select on.
	add("", []string{"/pods"}, []string{"get", "list", "watch", "create", "delete", "patch"})
	// The router's ServiceAccount, Role and RoleBinding. The Role grants
	// pods get/list/watch, which the reconciler may grant only because it
	// holds them itself (the pods line above; RBAC's escalation rule), so
	// it needs neither escalate nor bind.
	add("", []string{"/serviceaccounts"}, []string{"get", "list", "watch", "create", "update"})
	add("", []string{"rbac.authorization.k8s.io/roles", "rbac.authorization.k8s.io/rolebindings"}, []string{"get", "list", "watch", "create", "update", "delete"})
	add("", []string{"/services", "autoscaling/horizontalpodautoscalers"}, []string{"get", "list", "watch", "create", "update", "delete"})
	// Partitions hold: the ControllerRevisions recording each revision.
	add("", []string{"apps/controllerrevisions"}, []string{"get", "list", "watch", "create", "update", "delete"})
	add("", []string{"/events", "events.k8s.io/events"}, []string{"create", "patch"})
	add(namespace, []string{"coordination.k8s.io/leases"}, []string{"get", "create", "update"})
	// Gang scheduling: PodGroups of both backends, and their two CRDs by name.
	add("", []string{"scheduling.volcano.sh/podgroups", "scheduling.x-k8s.io/podgroups"}, []string{"get", "list", "watch", "create", "update", "delete"})
	for _, crd := range []string{"podgroups.scheduling.volcano.sh", "podgroups.scheduling.x-k8s.io"} {
		for _, v := range readVerbs {
			want = append(want, grant{resource: "apiextensions.k8s.io/customresourcedefinitions", name: crd, verb: v}.String())
		}
	}
	// ServingPolicy: policies read and their status written, namespaces
	// read for their selectors, the ResourceQuotas of namespace budgets.
	add("", []string{"policy.berth.dev/servingpolicies", "/namespaces"}, readVerbs)
	add("", []string{"policy.berth.dev/servingpolicies/status"}, []string{"get", "update"})
	add("", []string{"/resourcequotas"}, []string{"get", "list", "watch", "create", "update", "delete"})
	// AcceleratorClass discovery and the Kueue sync: classes created and
	// updated (never deleted), the Stale condition applied, nodes read,
	// ResourceFlavors made from classes created and updated.
	add("", []string{"ome.io/acceleratorclasses"}, []string{"create", "update"})
	add("", []string{"ome.io/acceleratorclasses/status"}, []string{"patch"})
	add("", []string{"/nodes"}, readVerbs)
	add("", []string{"kueue.x-k8s.io/resourceflavors"}, []string{"get", "list", "watch", "create", "update"})
	// AcceleratorClass status: nodes, totals and availability written.
	add("", []string{"ome.io/acceleratorclasses/status"}, []string{"get", "update"})
	assert.ElementsMatch(t, want, got)

	var d appsv1.Deployment
	objs.decode(t, "Deployment", namespace, "berth-reconciler", &d)
	c := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "berth-reconciler", d.Spec.Template.Spec.ServiceAccountName)
	assert.Contains(t, c.Args, "--leader-elect=true")
	assert.Equal(t, []string{"--model-inspector-image", version.Image("berth")}, flagAndNext(c.Args, "--model-inspector-image"), "pvc:// models are inspected, from the registry and tag of berth's images")
	require.NotNil(t, c.ReadinessProbe)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.NotNil(t, c.LivenessProbe)
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
}

// TestRBACCoversEveryCRD keeps RBAC in step with the API: every ome.io kind
// the CRDs define must be readable, or the webhook's informer for it fails.
func TestRBACCoversEveryCRD(t *testing.T) {
	crds := render(t, "..") // the default install: shared with TestDefaultInstall
	var plurals []string
	for _, o := range crds.ofKind("CustomResourceDefinition") {
		var crd struct {
			Spec struct {
				Group string `json:"group"`
				Names struct {
					Plural string `json:"plural"`
				} `json:"names"`
			} `json:"spec"`
		}
		require.NoError(t, yaml.Unmarshal(o.raw, &crd))
		plurals = append(plurals, crd.Spec.Group+"/"+crd.Spec.Names.Plural)
	}
	require.NotEmpty(t, plurals)
	for _, p := range plurals {
		assert.Contains(t, wantReads, p, "RBAC must let the webhook read %s", p)
	}
}

func TestSelfManagedCertificates(t *testing.T) {
	objs := render(t, "self-managed")
	var secret corev1.Secret
	objs.decode(t, "Secret", namespace, secretName, &secret)
	// A server-side re-apply must own nothing the webhook writes.
	assert.Empty(t, secret.Data, "shipped empty: the webhook fills it")
	assert.Empty(t, secret.StringData)
	assert.Empty(t, secret.Type, "a typed Secret would require data keys the webhook owns")
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, o := range objs.ofKind(kind) {
			assert.NotContains(t, string(o.raw), "cert-manager.io", "%s: the webhook injects caBundle itself", o)
		}
	}
	assert.Empty(t, objs.ofKind("Certificate"))
	assert.Empty(t, objs.ofKind("Issuer"))
}

func TestCertManagerCertificates(t *testing.T) {
	objs := render(t, "cert-manager")
	type issuerRef struct{ Group, Kind, Name string }
	type certificate struct {
		Spec struct {
			IsCA       bool      `json:"isCA"`
			SecretName string    `json:"secretName"`
			DNSNames   []string  `json:"dnsNames"`
			IssuerRef  issuerRef `json:"issuerRef"`
		} `json:"spec"`
	}
	type issuer struct {
		Spec struct {
			SelfSigned *struct{} `json:"selfSigned"`
			CA         *struct {
				SecretName string `json:"secretName"`
			} `json:"ca"`
		} `json:"spec"`
	}
	issuers := map[string]issuer{}
	for _, o := range objs.ofKind("Issuer") {
		assert.Equal(t, namespace, o.namespace)
		var i issuer
		require.NoError(t, yaml.Unmarshal(o.raw, &i))
		issuers[o.name] = i
	}
	certs := map[string]certificate{}
	var serving string
	for _, o := range objs.ofKind("Certificate") {
		assert.Equal(t, namespace, o.namespace)
		var c certificate
		require.NoError(t, yaml.Unmarshal(o.raw, &c))
		certs[o.name] = c
		if c.Spec.SecretName == secretName {
			serving = o.name
		}
	}
	require.NotEmpty(t, serving, "a Certificate must write Secret %s", secretName)
	sc := certs[serving].Spec
	assert.False(t, sc.IsCA)
	assert.Contains(t, sc.DNSNames, serviceDNSName, "the apiserver dials <service>.<namespace>.svc")

	// serving cert ← CA Issuer ← CA Certificate ← self-signed Issuer.
	require.Equal(t, "Issuer", sc.IssuerRef.Kind)
	caIssuer, ok := issuers[sc.IssuerRef.Name]
	require.True(t, ok, "issuer %s of the serving certificate", sc.IssuerRef.Name)
	require.NotNil(t, caIssuer.Spec.CA, "the serving certificate comes from a CA Issuer, so renewing it keeps caBundle")
	var caCert *certificate
	for name, c := range certs {
		if c.Spec.SecretName == caIssuer.Spec.CA.SecretName {
			c := certs[name]
			caCert = &c
		}
	}
	require.NotNil(t, caCert, "a Certificate must write the CA Secret %s", caIssuer.Spec.CA.SecretName)
	assert.True(t, caCert.Spec.IsCA)
	root, ok := issuers[caCert.Spec.IssuerRef.Name]
	require.True(t, ok)
	assert.NotNil(t, root.Spec.SelfSigned)

	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		for _, o := range objs.ofKind(kind) {
			var meta struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			require.NoError(t, yaml.Unmarshal(o.raw, &meta))
			assert.Equal(t, namespace+"/"+serving, meta.Metadata.Annotations["cert-manager.io/inject-ca-from"], o.String())
		}
	}
	assert.Empty(t, objs.ofKind("Secret"), "cert-manager creates the Secrets")
}

// TestDefaultInstall renders deploy/ itself: CRDs, the self-managed webhook,
// the out-of-box runtimes and AcceleratorClasses in one `kubectl apply -k`.
func TestDefaultInstall(t *testing.T) {
	objs := render(t, "..")
	self := render(t, "self-managed")
	for _, o := range self.all {
		assert.True(t, objs.has(o.kind, o.namespace, o.name), "default install lacks %s", o)
	}
	assert.NotEmpty(t, objs.ofKind("CustomResourceDefinition"))
	assert.NotEmpty(t, objs.ofKind("ClusterServingRuntime"))
	assert.NotEmpty(t, objs.ofKind("AcceleratorClass"))
	assert.Empty(t, objs.ofKind("Certificate"), "the default install does not need cert-manager")
}

// --- rendering ---

type object struct {
	kind, namespace, name string
	raw                   []byte // one YAML document
}

func (o object) String() string { return fmt.Sprintf("%s %s/%s", o.kind, o.namespace, o.name) }

type rendered struct {
	dir string
	all []object
}

// render runs `kubectl kustomize dir` (dir relative to deploy/overlays) and
// splits the output. kubectl ships kustomize, so the test renders exactly
// what `kubectl apply -k` would apply.
func render(t *testing.T, dir string) rendered {
	t.Helper()
	renderMu.Lock()
	defer renderMu.Unlock()
	if r, ok := renderCache[dir]; ok {
		return r
	}
	r := renderUncached(t, dir)
	renderCache[dir] = r
	return r
}

// renderCache: several tests look at the same overlay; render each once.
var (
	renderMu    sync.Mutex
	renderCache = map[string]rendered{}
)

func renderUncached(t *testing.T, dir string) rendered {
	t.Helper()
	// Prefer the kubectl `make deps` builds (v1.34.4, what CI has on a fresh
	// machine); fall back to one on PATH.
	kubectl, err := filepath.Abs(filepath.Join("..", "..", "bin", "k8s-v1.34.4", "kubectl"))
	if _, statErr := os.Stat(kubectl); err != nil || statErr != nil {
		kubectl, err = exec.LookPath("kubectl")
	}
	require.NoError(t, err, "these tests render the manifests with `kubectl kustomize`; run `make deps` or install kubectl (>= 1.27)")
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubectl kustomize %s: %s", dir, stderr.String())

	r := rendered{dir: dir}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal(doc, &head))
		r.all = append(r.all, object{kind: head.Kind, namespace: head.Metadata.Namespace, name: head.Metadata.Name, raw: doc})
	}
	require.NotEmpty(t, r.all, "kubectl kustomize %s rendered nothing", dir)
	return r
}

func (r rendered) ofKind(kind string) []object {
	var out []object
	for _, o := range r.all {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (r rendered) has(kind, namespace, name string) bool {
	return slices.ContainsFunc(r.all, func(o object) bool {
		return o.kind == kind && o.namespace == namespace && o.name == name
	})
}

// decode strictly decodes one object into a typed struct the way the
// apiserver does (case-sensitive, unknown and duplicate fields are errors),
// so a misspelled field like readOnlyRootFileSystem fails the test instead
// of being silently dropped by kubectl apply.
func (r rendered) decode(t *testing.T, kind, namespace, name string, into any) {
	t.Helper()
	for _, o := range r.all {
		if o.kind == kind && o.namespace == namespace && o.name == name {
			js, err := yaml.YAMLToJSON(o.raw)
			require.NoError(t, err, "%s in %s", o, r.dir)
			strictErrs, err := sigsjson.UnmarshalStrict(js, into)
			require.NoError(t, err, "%s in %s", o, r.dir)
			require.NoError(t, errors.Join(strictErrs...), "%s in %s", o, r.dir)
			return
		}
	}
	require.Failf(t, "object missing", "%s %s/%s not rendered by %s", kind, namespace, name, r.dir)
}

// boundGrants expands the Roles and ClusterRoles bound to the webhook's
// ServiceAccount into single grants.
func boundGrants(t *testing.T, objs rendered) []grant {
	t.Helper()
	return boundGrantsOf(t, objs, webhookName)
}

// boundGrantsOf lists the grants bound to the ServiceAccount sa.
func boundGrantsOf(t *testing.T, objs rendered, sa string) []grant {
	t.Helper()
	subject := rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: namespace}
	var out []grant
	expand := func(rules []rbacv1.PolicyRule, ns string) {
		for _, rule := range rules {
			assert.Empty(t, rule.NonResourceURLs)
			names := rule.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, group := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, verb := range rule.Verbs {
						for _, n := range names {
							out = append(out, grant{resource: group + "/" + res, name: n, namespace: ns, verb: verb})
						}
					}
				}
			}
		}
	}
	for _, o := range objs.ofKind("ClusterRoleBinding") {
		var b rbacv1.ClusterRoleBinding
		objs.decode(t, o.kind, o.namespace, o.name, &b)
		if !slices.Contains(b.Subjects, subject) {
			continue
		}
		require.Equal(t, "ClusterRole", b.RoleRef.Kind, o.String())
		var role rbacv1.ClusterRole
		objs.decode(t, "ClusterRole", "", b.RoleRef.Name, &role)
		expand(role.Rules, "")
	}
	for _, o := range objs.ofKind("RoleBinding") {
		var b rbacv1.RoleBinding
		objs.decode(t, o.kind, o.namespace, o.name, &b)
		if !slices.Contains(b.Subjects, subject) {
			continue
		}
		var rules []rbacv1.PolicyRule
		switch b.RoleRef.Kind {
		case "Role":
			var role rbacv1.Role
			objs.decode(t, "Role", o.namespace, b.RoleRef.Name, &role)
			rules = role.Rules
		case "ClusterRole":
			var role rbacv1.ClusterRole
			objs.decode(t, "ClusterRole", "", b.RoleRef.Name, &role)
			rules = role.Rules
		}
		expand(rules, o.namespace)
	}
	require.NotEmpty(t, out, "nothing is bound to ServiceAccount %s/%s", namespace, webhookName)
	return out
}

func resolvePort(t *testing.T, p intstr.IntOrString, named map[string]int32) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	port, ok := named[p.StrVal]
	assert.True(t, ok, "port name %q is not a container port", p.StrVal)
	return port
}

func uniqueSorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}

func ptrTrue() *bool  { b := true; return &b }
func ptrFalse() *bool { b := false; return &b }

// flagAndNext is the flag in args and the arg after it (the image the
// manifests give as a separate arg, so kustomize's replacements can set it).
func flagAndNext(args []string, flag string) []string {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return nil
	}
	return args[i : i+2]
}

// TestImagesRetagInOnePlace: changing newName and newTag of the images block
// in base/kustomization.yaml moves every berth image of the install: the
// Deployments' and the images their flags name (replacements), in every
// overlay.
func TestImagesRetagInOnePlace(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"base", "overlays/self-managed", "overlays/cert-manager"} {
		require.NoError(t, os.CopyFS(filepath.Join(root, dir), os.DirFS(filepath.Join("..", dir))))
	}
	kust := filepath.Join(root, "base", "kustomization.yaml")
	data, err := os.ReadFile(kust)
	require.NoError(t, err)
	text := string(data)
	for _, name := range []string{"berth-webhook", "berth-reconciler"} {
		old := "newName: " + version.Registry + "/" + name + "\n  newTag: " + version.Version + "\n"
		require.Contains(t, text, old, "base/kustomization.yaml sets %s's registry and tag in its images block", name)
		text = strings.Replace(text, old, "newName: localhost:5000/mirror/"+name+"\n  newTag: 9.8.7\n", 1)
	}
	require.NoError(t, os.WriteFile(kust, []byte(text), 0o644))

	for _, overlay := range []string{"overlays/self-managed", "overlays/cert-manager"} {
		t.Run(overlay, func(t *testing.T) {
			objs := renderUncached(t, filepath.Join(root, overlay))
			var wh, rec appsv1.Deployment
			objs.decode(t, "Deployment", namespace, "berth-webhook", &wh)
			objs.decode(t, "Deployment", namespace, "berth-reconciler", &rec)
			w, r := wh.Spec.Template.Spec.Containers[0], rec.Spec.Template.Spec.Containers[0]
			assert.Equal(t, "localhost:5000/mirror/berth-webhook:9.8.7", w.Image)
			assert.Equal(t, []string{"--model-downloader-image", "localhost:5000/mirror/berth-downloader:9.8.7"}, flagAndNext(w.Args, "--model-downloader-image"))
			assert.Equal(t, "localhost:5000/mirror/berth-reconciler:9.8.7", r.Image)
			assert.Equal(t, []string{"--model-inspector-image", "localhost:5000/mirror/berth:9.8.7"}, flagAndNext(r.Args, "--model-inspector-image"))
		})
	}
}
