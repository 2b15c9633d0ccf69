package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// docCommand is one shell command the documentation shows: a line of a
// ```sh/bash/shell block (continuations joined, the trailing comment
// apart), a "$ " line of a ```console block, or a "#   kubectl ..." line
// of a manifest's header.
type docCommand struct {
	Cmd     string
	Comment string // the trailing "# ..." of the line, if any
	Where   string // file:line
}

// docSources are the files whose commands TestDocumentedCommands runs:
// every Markdown file a user reads and the manifests' headers.
func docSources(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "e2e/README.md"}
	for _, dir := range []string{"docs", "deploy"} {
		err := filepath.WalkDir(env.Path(dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(env.Root, path)
			if strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".yaml") && !strings.Contains(rel, "/chart/") {
				files = append(files, rel)
			}
			return nil
		})
		require.NoError(t, err)
	}
	return files
}

var (
	fenceRE       = regexp.MustCompile("^```\\s*([a-z]*)")
	yamlCommandRE = regexp.MustCompile(`^#\s+((kubectl|helm|berth|make) .*)$`)
	topKindRE     = regexp.MustCompile(`(?m)^kind: (\S+)$`)
)

// extractCommands reads the shell commands of one documentation file.
func extractCommands(name string, text []byte) []docCommand {
	var out []docCommand
	lang, inFence, pending, pendingAt := "", false, "", 0
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasSuffix(name, ".yaml") {
			if m := yamlCommandRE.FindStringSubmatch(line); m != nil {
				out = append(out, splitComment(m[1], fmt.Sprintf("%s:%d", name, n)))
			}
			continue
		}
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			inFence, lang = !inFence, m[1]
			continue
		}
		if !inFence {
			continue
		}
		switch lang {
		case "console":
			if cmd, ok := strings.CutPrefix(line, "$ "); ok {
				out = append(out, splitComment(cmd, fmt.Sprintf("%s:%d", name, n)))
			}
		case "sh", "bash", "shell":
			trimmed := strings.TrimSpace(line)
			if pending == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
				continue
			}
			if pending == "" {
				pendingAt = n
			}
			if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
				pending += strings.TrimSpace(cont) + " "
				continue
			}
			out = append(out, splitComment(pending+trimmed, fmt.Sprintf("%s:%d", name, pendingAt)))
			pending = ""
		}
	}
	return out
}

// splitComment parts a command from its trailing comment: a " #" outside
// quotes.
func splitComment(line, where string) docCommand {
	quote := rune(0)
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && i > 0 && line[i-1] == ' ':
			return docCommand{Cmd: strings.TrimSpace(line[:i]), Comment: strings.TrimSpace(line[i+1:]), Where: where}
		}
	}
	return docCommand{Cmd: strings.TrimSpace(line), Where: where}
}

// docRun says what the suite does with one documented command.
type docRun struct {
	// cmd is the command as the documentation writes it.
	cmd string
	// run: the command runs against the suite's cluster from the checkout,
	// after subst (placeholders to values of this run); dryRun appends
	// --dry-run=server, for commands that would change what the other
	// tests share. expectComment: the command's output is its trailing
	// comment (kubectl auth can-i's yes / no).
	run, dryRun, expectComment bool
	subst                      map[string]string
	// why: not run by this test, and the reason (another test runs it, it
	// runs until Ctrl-C, it needs what this cluster does not have).
	why string
}

// documentedCommands is every command the documentation shows, in the
// order this test runs them. A command added to the documentation fails
// the test until it is listed here, run or with the reason it is not.
func documentedCommands(docsDir, node, ns string) []docRun {
	notHere := func(cmd, why string) docRun { return docRun{cmd: cmd, why: why} }
	run := func(cmd string) docRun { return docRun{cmd: cmd, run: true} }
	makeTarget := func(cmd string) docRun {
		return notHere(cmd, "a make target: CI runs make verify, test and fuzz; make up and make demo run until Ctrl-C (internal/devenv's tests and berth demo's cover them)")
	}
	myIsvc := map[string]string{"my-isvc.yaml": filepath.Join(docsDir, "my-isvc.yaml")}
	return []docRun{
		// The first service, then what the README does with it.
		run("kubectl apply --server-side -k deploy/samples"),
		{cmd: "berth explain -f my-isvc.yaml --from deploy/runtimes --from deploy/accelerators --fleet default", run: true, subst: myIsvc},
		run("berth explain isvc/llama-3-2-1b-instruct -n default"),
		{cmd: "berth render -f my-isvc.yaml --from deploy/", run: true, subst: myIsvc},
		run("berth render isvc/llama-3-2-1b-instruct --diff"),
		run("berth lint deploy/"),
		run("kubectl explain isvc.spec.acceleratorSelector.strategy"),
		run("kubectl explain servingpolicy.spec.validationActions"),
		run("kubectl get acceleratorclasses"),
		{cmd: "kubectl get controllerrevisions -l ome.io/inferenceservice=<isvc>", run: true, subst: map[string]string{"<isvc>": "llama-3-2-1b-instruct"}},
		{cmd: "export KUBECONFIG=/tmp/berth-cluster-123456/kubeconfig", run: true, subst: map[string]string{"/tmp/berth-cluster-123456/kubeconfig": env.Cluster.KubeconfigPath}},
		run("bin/k8s-v1.34.4/kubectl get nodes -L nvidia.com/gpu.product,amd.com/gpu.product"),
		run("kubectl get acceleratorclasses,clusterservingruntimes,inferenceservices"),
		{cmd: "kubectl label node <gpu-node> models.ome.io/clusterbasemodel.llama-3-1-8b-instruct=Ready", run: true, subst: map[string]string{"<gpu-node>": node}},
		{cmd: "kubectl auth can-i list pods -n <ns> --as=system:serviceaccount:<ns>:<isvc>-router", run: true, expectComment: true, subst: map[string]string{"<ns>": ns, "<isvc>": "pd"}},
		{cmd: "kubectl auth can-i list pods -n <ns> --as=system:serviceaccount:<ns>:default", run: true, expectComment: true, subst: map[string]string{"<ns>": ns}},

		// Installs: run as server-side dry runs here, where the suite's own
		// webhook is installed; e2e/realnode installs them for real.
		notHere("kubectl apply --server-side -k deploy",
			"needs a cluster without berth (the suite's webhook holds berth-mutating and berth-validating): e2e/realnode's TestMain runs it for real, through an overlay that adds only placement on the real node and the test Hub's endpoints"),
		notHere("kubectl apply --server-side -k deploy/overlays/ome-catalogue",
			"needs a cluster without berth; this test builds the overlay (kubectl kustomize) and checks it is the default install without berth's runtimes"),
		{cmd: "kubectl apply --server-side -f deploy/chart/berth/crds/", dryRun: true},
		{cmd: "kubectl delete mutatingwebhookconfiguration berth-mutating", dryRun: true},
		{cmd: "kubectl delete validatingwebhookconfiguration berth-validating", dryRun: true},
		notHere("kubectl apply -f e2e/testdata/ome/apply-together/",
			"TestOMEManifestsAppliedTogether runs it and checks the output the page shows; run here as well, its ClusterServingRuntime would stay behind for the tests after it"),
		notHere("kubectl apply --server-side -k deploy/runtimes-sidecar",
			"TestInstallSidecarRuntimesInOneApply runs it on this cluster without the profiles and checks every object is applied, then deletes them; run here, they would stay behind"),
		notHere("kubectl apply --server-side -k <ome>/config/runtimes", "OME's repository is not in the checkout (no network at test time)"),
		notHere("helm install berth deploy/chart/berth --namespace default",
			"needs a cluster without berth: e2e/realnode's TestHelmInstallServes runs it (plus a values file putting berth on the real node) and TestHelmInstallGivesAWorkingWebhook on a control plane of its own"),
		notHere("helm install berth deploy/chart/berth --namespace default --set certificates.mode=cert-manager",
			"needs a cluster without berth and with cert-manager; the chart's cert-manager mode is rendered by the Helm tests, and the cert-manager overlay is installed for real by TestCertManagerOverlayServes (e2e/realnode)"),
		notHere("helm install berth deploy/chart/berth --namespace default --set runtimes.enabled=false",
			"needs a cluster without berth: TestHelmInstallGivesAWorkingWebhook installs the chart with runtimes.enabled=false"),
		notHere(`kubectl -n berth-system patch secret berth-webhook-tls --type=json -p='[{"op":"remove","path":"/data"}]'`,
			"needs berth installed in-cluster (namespace berth-system): e2e/realnode installs it; the rotation itself is tested by webhook/cabundle's tests"),
		notHere("kubectl -n berth-system rollout restart deployment/berth-webhook",
			"needs berth installed in-cluster: TestWebhookRolloutRestartFailsNoAdmission (e2e/realnode) runs it under a stream of pod creates"),
		notHere("kubectl get mutatingwebhookconfiguration berth-mutating -o jsonpath='{.webhooks[0].clientConfig.caBundle}' | base64 -d | openssl x509 -noout -subject -enddate",
			"needs berth installed in-cluster, whose self-managed CA fills the bundle; the suite's webhook runs as a process with a CA of the suite's"),
		notHere(`kubectl -n berth-system get secret berth-webhook-tls -o jsonpath='{.data.tls\.crt}' | base64 -d | openssl x509 -noout -issuer -enddate -ext subjectAltName`,
			"needs berth installed in-cluster (namespace berth-system)"),
		notHere("go test -run '^$' -bench 'BenchmarkInferenceServicePolicies/interleaved' -count 6 ./webhook/handlers/",
			"a measurement (minutes), not a check; go vet compiles the benchmark"),
		notHere("make build && bin/berth-accelerator-load -nodes 2000 -pods 5000 -churn 20 -window 60s",
			"a load measurement of minutes against a control plane of its own"),
		notHere("make deps build && cp -r bin /opt/berth", "installs into /opt: what it builds, make test builds"),
		notHere("cd /anywhere && /opt/berth/berth demo", "berth demo runs until Ctrl-C"),
		makeTarget("make demo"), makeTarget("make test"), makeTarget("make images"), makeTarget("make push REGISTRY=registry.example.com/team"),
		makeTarget("make generate"), makeTarget("make chart"), makeTarget("make verify"), makeTarget("make test-unit"), makeTarget("make fuzz"),
		makeTarget("make up"), makeTarget("make deps"), makeTarget("make e2e"),
	}
}

// TestDocumentedCommands: every shell command of README.md, docs/,
// e2e/README.md and the manifests' headers is listed in
// documentedCommands, and those that can run against this cluster run from
// the checkout as written (placeholders filled in) and succeed.
func TestDocumentedCommands(t *testing.T) {
	ensureOutOfBox(t)
	dir := t.TempDir()
	node := docsNode(t)
	ns := lifecycleNamespace(t, "e2e-docs")
	table := documentedCommands(dir, node, ns)

	var found []docCommand
	for _, f := range docSources(t) {
		b, err := os.ReadFile(env.Path(f))
		require.NoError(t, err)
		found = append(found, extractCommands(f, b)...)
	}
	listed := map[string]bool{}
	for _, r := range table {
		listed[r.cmd] = true
	}
	shown := map[string]docCommand{}
	for _, c := range found {
		shown[c.Cmd] = c
		assert.True(t, listed[c.Cmd], "%s shows a command this test does not know; add it to documentedCommands (run it, or say why not):\n%s", c.Where, c.Cmd)
	}
	for _, r := range table {
		assert.Contains(t, shown, r.cmd, "documentedCommands lists a command no document shows any more")
	}
	require.False(t, t.Failed())

	// The fixtures the runnable commands name: the README's my-isvc.yaml (the
	// sample service), and a prefill/decode service whose router account
	// operations.md checks with kubectl auth can-i.
	sample, err := os.ReadFile(env.Path("deploy", "samples", "llama-3-2-1b-instruct.yaml"))
	require.NoError(t, err)
	writeFile(t, filepath.Join(dir, "my-isvc.yaml"), string(sample))
	rt := createRuntime(t, MakeRuntime(uniqueName("e2e-docs")).PD().Obj())
	createService(t, MakeService(ns, "pd").Runtime(rt.Name).Replicas(1).Obj())
	waitFor(t, ns, "RoleBinding pd-router", func() bool {
		_, err := env.Kube.RbacV1().RoleBindings(ns).Get(ctxT(t, apiTimeout), "pd-router", metav1.GetOptions{})
		return err == nil
	})

	for _, r := range table {
		if !r.run && !r.dryRun {
			t.Logf("not run: %s\n    %s", r.cmd, r.why)
			continue
		}
		cmd := r.cmd
		for k, v := range r.subst {
			cmd = strings.ReplaceAll(cmd, k, v)
		}
		if r.dryRun {
			cmd += " --dry-run=server"
		}
		out, err := runDocCommand(t, cmd)
		if r.expectComment {
			// kubectl auth can-i exits 1 when the answer is no.
			assert.Equal(t, shown[r.cmd].Comment, strings.TrimSpace(out), "%s (%s): %v", cmd, shown[r.cmd].Where, err)
			continue
		}
		assert.NoError(t, err, "%s (%s):\n%s", cmd, shown[r.cmd].Where, out)
	}

	// The ome-catalogue overlay is the default install without berth's
	// runtimes (OME's take their place).
	def, err := runDocCommand(t, "kubectl kustomize deploy")
	require.NoError(t, err, def)
	ome, err := runDocCommand(t, "kubectl kustomize deploy/overlays/ome-catalogue")
	require.NoError(t, err, ome)
	kinds := func(yaml string) map[string]int {
		n := map[string]int{}
		for _, m := range topKindRE.FindAllStringSubmatch(yaml, -1) {
			n[m[1]]++
		}
		return n
	}
	d, o := kinds(def), kinds(ome)
	assert.NotZero(t, d["ClusterServingRuntime"], "the default install has berth's runtimes")
	assert.Zero(t, o["ClusterServingRuntime"], "the ome-catalogue overlay installs berth's runtimes")
	delete(d, "ClusterServingRuntime")
	assert.Equal(t, d, o, "the ome-catalogue overlay differs from the default install in more than the runtimes")
}

// runDocCommand runs one command with bash from the checkout, as a user
// would after make build: kubectl, helm and berth on PATH, KUBECONFIG the
// suite's cluster.
func runDocCommand(t *testing.T, cmd string) (string, error) {
	t.Helper()
	c := exec.CommandContext(ctxT(t, 3*time.Minute), "bash", "-euo", "pipefail", "-c", cmd)
	c.Dir = env.Root
	path := strings.Join([]string{componentBin, filepath.Dir(env.Binaries.Kubectl), env.Path("bin", "helm-v3.22.0"), os.Getenv("PATH")}, string(os.PathListSeparator))
	c.Env = append(os.Environ(), "PATH="+path, "KUBECONFIG="+env.Cluster.KubeconfigPath)
	out, err := c.CombinedOutput()
	return string(out), err
}

// docsNode is a Node object of this test's own (no kubelet or kwok behind
// it, so nothing is scheduled there) for the node-labelling command.
func docsNode(t *testing.T) string {
	t.Helper()
	name := uniqueName("e2e-docs-node")
	_, err := env.Kube.CoreV1().Nodes().Create(ctxT(t, apiTimeout), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{
			Key: "node.berth.dev/docs-test", Effect: corev1.TaintEffectNoSchedule,
		}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Nodes().Delete(ctxT(t, apiTimeout), name, metav1.DeleteOptions{})
	})
	return name
}

func TestExtractCommands(t *testing.T) {
	md := "intro\n```sh\nmake demo   # builds\n            # more comment\n\nkubectl get x \\\n  -o yaml | grep '#x'\n```\n" +
		"```console\n$ kubectl apply -f a/\nnamespace/a created\n```\n```yaml\nkind: X\n```\n"
	got := extractCommands("a.md", []byte(md))
	want := []docCommand{
		{Cmd: "make demo", Comment: "builds", Where: "a.md:3"},
		{Cmd: "kubectl get x -o yaml | grep '#x'", Where: "a.md:6"},
		{Cmd: "kubectl apply -f a/", Where: "a.md:10"},
	}
	assert.Equal(t, want, got)
	y := "# Apply with:\n#   kubectl apply --server-side -k deploy/samples\n# (not: kubectl)\nkind: X\n"
	assert.Equal(t, []docCommand{{Cmd: "kubectl apply --server-side -k deploy/samples", Where: "s.yaml:2"}},
		extractCommands("s.yaml", []byte(y)))
}
