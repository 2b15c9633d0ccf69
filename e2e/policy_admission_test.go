package e2e

// ServingPolicies at the admission gate (issue 12), on the real apiserver
// with berth's webhook and reconciler:
//
//   - a namespace limited to nvidia-a100-* gets an A100 where it would have
//     had an H100, and the decision says why the H100 lost; with no allowed
//     class able to serve, the create is denied naming the policy, and
//     --dry-run=server says exactly the same;
//   - an image from an unlisted registry is denied in a namespaced runtime
//     and in a user override (spec.engine.runner.image); Warn prints the
//     same sentence as a warning and admits; Audit admits silently and the
//     webhook's berth_policy_violations_total counts it;
//   - an invalid policy (bad selector, unknown action, negative budget) is
//     denied with the field named;
//   - a policy cannot affect kube-system or berth's own namespace.
//
// Policies are cluster-scoped and the webhook is shared: every policy here
// selects only its test's namespaces, by a label carrying the namespace's
// own (unique) name, so tests running in parallel never see each other's.

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/promtext"
)

// ---------------------------------------------------------------------------
// Helpers of this file

// policyLabel marks the namespaces a test's policies select.
const policyLabel = "e2e.berth.dev/policy-ns"

// policyNamespace is lifecycleNamespace (the tiny model, the shipped
// classes) labelled policyLabel=<its name>; sel selects it alone.
func policyNamespace(t *testing.T, prefix string) (ns string, sel *metav1.LabelSelector) {
	t.Helper()
	ns = lifecycleNamespace(t, prefix)
	ctx := ctxT(t, apiTimeout)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := env.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if obj.Labels == nil {
			obj.Labels = map[string]string{}
		}
		obj.Labels[policyLabel] = ns
		_, err = env.Kube.CoreV1().Namespaces().Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err, "label namespace %s", ns)
	return ns, &metav1.LabelSelector{MatchLabels: map[string]string{policyLabel: ns}}
}

// createAdmissionPolicy creates a ServingPolicy and deletes it when the test ends.
func createAdmissionPolicy(t *testing.T, p *v1alpha1.ServingPolicy) {
	t.Helper()
	bc := berthClient(t)
	ctx := ctxT(t, time.Minute)
	require.NoError(t, retryWebhook(ctx, func() error {
		_, err := bc.PolicyV1alpha1().ServingPolicies().Create(ctx, p.DeepCopy(), metav1.CreateOptions{})
		return err
	}), "create ServingPolicy %s", p.Name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		_ = bc.PolicyV1alpha1().ServingPolicies().Delete(ctx, p.Name, metav1.DeleteOptions{})
	})
}

// setPolicyActions changes a policy's validationActions.
func setPolicyActions(t *testing.T, name string, actions ...v1alpha1.ValidationAction) {
	t.Helper()
	bc := berthClient(t)
	ctx := ctxT(t, time.Minute)
	require.NoError(t, retryWebhook(ctx, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := bc.PolicyV1alpha1().ServingPolicies().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Spec.ValidationActions = actions
			_, err = bc.PolicyV1alpha1().ServingPolicies().Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
	}), "update ServingPolicy %s", name)
}

// warningRecorder keeps the admission warnings the apiserver relays.
type warningRecorder struct {
	mu   sync.Mutex
	list []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// warningClient is a berth client whose requests' warnings are recorded.
func warningClient(t *testing.T) (versioned.Interface, *warningRecorder) {
	t.Helper()
	cfg := rest.CopyConfig(env.Cluster.RESTConfig())
	rec := &warningRecorder{}
	cfg.WarningHandler = rec
	c, err := versioned.NewForConfig(cfg)
	require.NoError(t, err)
	return c, rec
}

// createUntil creates the service (dry run when dryRun) until done holds
// for the answer and its warnings, for at most 30 s: the webhook's
// informers may lag behind a policy or namespace label written a moment
// ago. It returns the last answer and the warnings of that request.
func createUntil(t *testing.T, isvc *v1beta1.InferenceService, dryRun bool, done func(*v1beta1.InferenceService, error, []string) bool) (*v1beta1.InferenceService, error, []string) {
	t.Helper()
	c, rec := warningClient(t)
	opts := metav1.CreateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec.take()
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		got, err := c.OmeV1beta1().InferenceServices(isvc.Namespace).Create(ctx, isvc.DeepCopy(), opts)
		cancel()
		warnings := rec.take()
		if done(got, err, warnings) || time.Now().After(deadline) {
			return got, err, warnings
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// deniedBy: the create was denied by the validating InferenceService
// webhook with text in its message.
func deniedBy(text string) func(*v1beta1.InferenceService, error, []string) bool {
	return func(_ *v1beta1.InferenceService, err error, _ []string) bool {
		return err != nil && strings.Contains(err.Error(), text)
	}
}

// admitted: the create succeeded.
func admitted(_ *v1beta1.InferenceService, err error, _ []string) bool { return err == nil }

// policyMetric reads berth_policy_violations_total for a policy and
// action from the webhook's /metrics (0 when absent).
func policyMetric(t *testing.T, policyName, action string) float64 {
	t.Helper()
	m, err := promtext.Scrape(ctxT(t, apiTimeout), http.DefaultClient, webhook.ProbeURL+"/metrics")
	require.NoError(t, err)
	v, err := m.Value("berth_policy_violations_total", promtext.Labels{"policy": policyName, "action": action})
	require.NoError(t, err)
	return v
}

// gpuRuntime is a test-only runtime of one GPU per pod that may run only
// on the named classes.
func gpuRuntime(t *testing.T, prefix string, classes ...string) *v1beta1.ClusterServingRuntime {
	t.Helper()
	rt := MakeRuntime(uniqueName(prefix)).GPUs(1).Obj()
	rt.Spec.AcceleratorRequirements = &v1beta1.AcceleratorRequirements{SupportedClasses: classes}
	return createRuntime(t, rt)
}

func classOf(isvc *v1beta1.InferenceService) string {
	if isvc == nil {
		return ""
	}
	return isvc.Annotations[v1beta1.AnnotationResolvedAcceleratorClass]
}

// ---------------------------------------------------------------------------
// (a) Classes

// A namespace may use only nvidia-a100-* classes: a service that would
// have had an H100 gets an A100, and the decision (annotation and
// warning) says the H100 was forbidden by the policy. With no allowed
// class able to serve, the create is denied naming the policy for every
// candidate, and a server-side dry run is denied with the same text.
func TestPolicyAdmissionClasses(t *testing.T) {
	t.Parallel()
	ns, sel := policyNamespace(t, "e2e-pol-team-a")
	rt := gpuRuntime(t, "e2e-pol-gpu", "nvidia-h100-80gb", "nvidia-a100-40gb", "nvidia-a100-80gb")
	svc := MakeService(ns, "chat").Runtime(rt.Name).Obj()

	free := admittedDryRun(t, svc, func(s *v1beta1.InferenceService) bool { return classOf(s) != "" })
	require.Equal(t, "nvidia-h100-80gb", classOf(free), "without a policy berth picks the H100; decision:\n%s", free.Annotations[v1beta1.AnnotationDecision])

	name := "team-a-" + ns
	createAdmissionPolicy(t, &v1alpha1.ServingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ServingPolicySpec{
			NamespaceSelector: sel,
			ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Deny},
			Rules:             v1alpha1.ServingPolicyRules{AcceleratorClasses: &v1alpha1.ObjectRule{Allowed: []string{"nvidia-a100-*"}}},
		},
	})
	// Once the webhook has the policy (a dry run gets an A100), create it.
	admittedDryRun(t, svc, func(s *v1beta1.InferenceService) bool { return strings.HasPrefix(classOf(s), "nvidia-a100-") })
	got, err, warnings := createUntil(t, svc, false, admitted)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(classOf(got), "nvidia-a100-"), "class %q", classOf(got))
	lost := "AcceleratorClass/nvidia-h100-80gb: forbidden by ServingPolicy/" + name + ": not in nvidia-a100-*"
	assert.Contains(t, got.Annotations[v1beta1.AnnotationDecision], lost)
	assert.Contains(t, strings.Join(warnings, "\n"), "ServingPolicy excluded 1 candidate: "+lost, "warnings: %q", warnings)
	assert.Equal(t, classOf(got), classOf(getService(t, ns, "chat")), "stored with the allowed class")

	// Only H100 and H200 can serve this runtime: both are forbidden.
	hopper := gpuRuntime(t, "e2e-pol-hopper", "nvidia-h100-80gb", "nvidia-h200-141gb")
	denied := MakeService(ns, "hopper").Runtime(hopper.Name).Obj()
	_, err, _ = createUntil(t, denied, false, deniedBy("forbidden by ServingPolicy/"+name))
	require.Error(t, err, "a service only forbidden classes can serve is denied")
	msg := err.Error()
	assert.Contains(t, msg, `admission webhook "inferenceservices.validate.ome.io" denied the request`)
	for _, c := range []string{"nvidia-h100-80gb", "nvidia-h200-141gb"} {
		assert.Contains(t, msg, "AcceleratorClass/"+c+": forbidden by ServingPolicy/"+name+": not in nvidia-a100-*")
	}
	assertNotStored(t, ns, "hopper")

	_, dryErr, _ := createUntil(t, denied, true, deniedBy("forbidden by ServingPolicy/"+name))
	require.Error(t, dryErr)
	assert.Equal(t, msg, dryErr.Error(), "--dry-run=server says what the create said")

	// kubectl apply --dry-run=server prints the same denial (each candidate
	// a cause at its field).
	out, kerr := kubectl(t, isvcManifest(t, denied), "apply", "--server-side", "--dry-run=server", "-f", "-")
	require.Error(t, kerr, out)
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status))
	assert.Contains(t, out, "spec.acceleratorSelector: Invalid value: "+strings.TrimPrefix(lastLine(status.Status().Message), "- "))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// ---------------------------------------------------------------------------
// (b) Images

// evil is an image from a registry no policy lists.
const evil = "docker.io/evil/x:1"

// An image from an unlisted registry is denied in a namespaced runtime and
// in a user override; in Warn mode the same sentence is a warning and the
// service is admitted; in Audit mode it is admitted without a word and the
// webhook counts the violation.
func TestPolicyAdmissionImages(t *testing.T) {
	t.Parallel()
	ns, sel := policyNamespace(t, "e2e-pol-images")
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-pol-img")).Obj()) // runs e2eImage, which is allowed
	name := "registries-" + ns
	createAdmissionPolicy(t, &v1alpha1.ServingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ServingPolicySpec{
			NamespaceSelector: sel,
			ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Deny},
			Rules:             v1alpha1.ServingPolicyRules{Images: &v1alpha1.ImageRule{AllowedPrefixes: []string{"registry.berth.dev"}}},
		},
	})

	// A namespaced runtime with the image.
	sr := &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "evil-rt", Namespace: ns}, Spec: *MakeRuntime("evil-rt").Image(evil).Obj().Spec.DeepCopy()}
	runtimeText := "ServingPolicy/" + name + ": spec.engineConfig.runner.image: image " + evil + " is not from an allowed registry (allowed: registry.berth.dev)"
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, err = berthClient(t).OmeV1beta1().ServingRuntimes(ns).Create(ctxT(t, apiTimeout), sr, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), runtimeText) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.Error(t, err, "the runtime with %s was admitted", evil)
	assert.Contains(t, err.Error(), `admission webhook "servingruntimes.validate.ome.io" denied the request`)
	assert.Contains(t, err.Error(), runtimeText)

	// A user override of the engine's image.
	override := func(svcName string) *v1beta1.InferenceService {
		s := MakeService(ns, svcName).Runtime(rt.Name).Obj()
		s.Spec.Engine.Runner = &v1beta1.RunnerSpec{Image: evil}
		return s
	}
	text := "ServingPolicy/" + name + ": spec.engine.runner.image: image " + evil + " is not from an allowed registry (allowed: registry.berth.dev)"
	_, err, _ = createUntil(t, override("denied"), false, deniedBy(text))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `admission webhook "inferenceservices.validate.ome.io" denied the request: InferenceService `+ns+`/denied is denied by ServingPolicy:`)
	assert.Contains(t, err.Error(), text)
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status))
	require.NotNil(t, status.Status().Details)
	var fields []string
	for _, c := range status.Status().Details.Causes {
		fields = append(fields, c.Field)
	}
	assert.Contains(t, fields, "spec.engine.runner.image", "the cause names the field")
	assertNotStored(t, ns, "denied")

	// Warn: admitted, the same sentence as a warning. A dry run first
	// waits for the webhook to have the new actions.
	setPolicyActions(t, name, v1alpha1.Warn)
	warned := func(_ *v1beta1.InferenceService, err error, warnings []string) bool {
		return err == nil && slices.Contains(warnings, text)
	}
	createUntil(t, override("warned"), true, warned)
	got, err, warnings := createUntil(t, override("warned"), false, admitted)
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Contains(t, warnings, text, "warnings: %q", warnings)

	// Audit: admitted silently, counted by the webhook.
	before := policyMetric(t, name, "Audit")
	setPolicyActions(t, name, v1alpha1.Audit)
	silent := func(_ *v1beta1.InferenceService, err error, warnings []string) bool {
		return err == nil && !strings.Contains(strings.Join(warnings, "\n"), "ServingPolicy/")
	}
	createUntil(t, override("audited"), true, silent)
	got, err, audited := createUntil(t, override("audited"), false, admitted)
	require.NoError(t, err)
	require.NotNil(t, got)
	for _, w := range audited {
		assert.NotContains(t, w, "ServingPolicy/", "Audit mode says nothing to the user")
	}
	waitFor(t, ns, "the webhook counts the audited violation", func() bool { return policyMetric(t, name, "Audit") > before })
}

// ---------------------------------------------------------------------------
// (c) Invalid policies

// A policy with a selector that does not parse, an unknown action or a
// negative budget is denied, naming the field (the CRD schema refuses what
// it can express, berth's webhook the rest).
func TestPolicyAdmissionInvalidPolicies(t *testing.T) {
	t.Parallel()
	base := func() *v1alpha1.ServingPolicy {
		return &v1alpha1.ServingPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: uniqueName("e2e-pol-invalid")},
			Spec:       v1alpha1.ServingPolicySpec{ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Deny}},
		}
	}
	badSelector := base()
	badSelector.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near", Values: []string{"a"}}}}
	unknownAction := base()
	unknownAction.Spec.ValidationActions = []v1alpha1.ValidationAction{"Block"}
	negative := base()
	negative.Spec.Rules.MaxAcceleratorsPerNamespace = ptr(int64(-1))
	denyAndWarn := base()
	denyAndWarn.Spec.ValidationActions = []v1alpha1.ValidationAction{v1alpha1.Deny, v1alpha1.Warn}

	for _, c := range []struct {
		what   string
		policy *v1alpha1.ServingPolicy
		field  string
	}{
		{"bad selector", badSelector, "spec.namespaceSelector.matchExpressions[0].operator"},
		{"unknown action", unknownAction, "spec.validationActions[0]"},
		{"negative budget", negative, "spec.rules.maxAcceleratorsPerNamespace"},
		{"Deny with Warn", denyAndWarn, "spec.validationActions"},
	} {
		ctx := ctxT(t, time.Minute)
		var err error
		_ = retryWebhook(ctx, func() error {
			_, err = berthClient(t).PolicyV1alpha1().ServingPolicies().Create(ctx, c.policy, metav1.CreateOptions{})
			return err
		})
		if err == nil {
			_ = berthClient(t).PolicyV1alpha1().ServingPolicies().Delete(ctx, c.policy.Name, metav1.DeleteOptions{})
		}
		require.Error(t, err, "%s: admitted", c.what)
		assert.True(t, apierrors.IsInvalid(err), "%s: %v", c.what, err)
		assert.Contains(t, err.Error(), c.field, c.what)
		t.Logf("%s: %v", c.what, err)
	}
}

// ---------------------------------------------------------------------------
// (d) Exempt namespaces

// A policy that selects kube-system and berth's own namespace by name
// (with a test namespace as the control) does not reach them: a runtime
// with an unlisted image is admitted there and denied in the test
// namespace.
func TestPolicyAdmissionExemptNamespaces(t *testing.T) {
	t.Parallel()
	ns, _ := policyNamespace(t, "e2e-pol-exempt")
	ctx := ctxT(t, 2*time.Minute)
	if _, err := env.Kube.CoreV1().Namespaces().Get(ctx, "berth-system", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "berth-system"}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	name := uniqueName("e2e-pol-lockout")
	createAdmissionPolicy(t, &v1alpha1.ServingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ServingPolicySpec{
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"kube-system", "berth-system", ns},
			}}},
			ValidationActions: []v1alpha1.ValidationAction{v1alpha1.Deny},
			Rules:             v1alpha1.ServingPolicyRules{Images: &v1alpha1.ImageRule{AllowedPrefixes: []string{"registry.invalid"}}},
		},
	})
	runtimeIn := func(namespace string) *v1beta1.ServingRuntime {
		return &v1beta1.ServingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: *MakeRuntime(name).Image(evil).Obj().Spec.DeepCopy()}
	}
	// The control: denied once the webhook has the policy.
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, err = berthClient(t).OmeV1beta1().ServingRuntimes(ns).Create(ctx, runtimeIn(ns), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "ServingPolicy/"+name) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.Error(t, err, "the control namespace %s is subject to the policy", ns)
	assert.Contains(t, err.Error(), "ServingPolicy/"+name+": spec.engineConfig.runner.image: image "+evil)

	for _, exempt := range []string{"kube-system", "berth-system"} {
		_, err := berthClient(t).OmeV1beta1().ServingRuntimes(exempt).Create(ctx, runtimeIn(exempt), metav1.CreateOptions{})
		require.NoError(t, err, "a policy locked %s out", exempt)
		require.NoError(t, berthClient(t).OmeV1beta1().ServingRuntimes(exempt).Delete(ctx, name, metav1.DeleteOptions{}))
	}
	t.Logf("kube-system and berth-system admitted a runtime running %s under ServingPolicy/%s", evil, name)
}
