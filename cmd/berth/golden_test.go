package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// Golden tests of berth explain, render and lint over the seeds' examples.
// `go test ./cmd/berth/ -run Golden -update` rewrites testdata/golden/.

var update = flag.Bool("update", false, "rewrite the golden files of cmd/berth/testdata/golden")

const seeds = "../../api/v1beta1/testdata/seeds/"

// berth runs the CLI as a user would and returns stdout, stderr and the
// exit code.
func berth(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run `go test ./cmd/berth/ -run Golden -update` to create it")
	assert.Equal(t, string(want), got, "golden file %s differs; rerun with -update if the change is intended", path)
}

// seed000 are the arguments of berth explain for seed 000's priority
// example: the auto-selecting service, both runtimes verbatim, and the
// model they name (which the seed does not define).
func seed000(extra ...string) []string {
	args := []string{"explain", "-f", seeds + "000-isvc-auto-select.yaml",
		"--from", seeds + "000-priority-srt-mistral-7b-instruct.yaml",
		"--from", seeds + "000-priority-srt-mistral-7b-instruct-2.yaml",
		"--from", "testdata/seed000/mistral-model.yaml"}
	return append(args, extra...)
}

// TestGoldenExplainSeed000Priority: offline, explain names the priority-2
// runtime and says the priority-1 one lost on priority.
func TestGoldenExplainSeed000Priority(t *testing.T) {
	out, stderr, code := berth(t, seed000()...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "Decision: runtime ClusterServingRuntime/srt-mistral-7b-instruct-2 (auto-selected)")
	assert.Contains(t, out, "1. ClusterServingRuntime/srt-mistral-7b-instruct-2  [chosen]")
	assert.Contains(t, out, "2. ClusterServingRuntime/srt-mistral-7b-instruct  [ranked lower] matches, but priority 1 is below ClusterServingRuntime/srt-mistral-7b-instruct-2's 2")
	golden(t, "explain-seed000-priority.txt", out)

	js, stderr, code := berth(t, seed000("-o", "json")...)
	require.Equal(t, 0, code, stderr)
	var r struct {
		Allowed  bool
		Decision struct {
			Runtime  string
			Runtimes []struct {
				Rank                int
				Name, Verdict, Rule string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(js), &r))
	assert.True(t, r.Allowed)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", r.Decision.Runtime)
	require.Len(t, r.Decision.Runtimes, 2)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct", r.Decision.Runtimes[1].Name)
	assert.Equal(t, "ranked lower", r.Decision.Runtimes[1].Verdict)
	golden(t, "explain-seed000-priority.json", js)
}

// TestGoldenExplainPinnedSeed000: a stored service pinned to the
// priority-1 runtime before the priority-2 one existed keeps its pin, and
// explain says a decision made today would choose the other, and why.
func TestGoldenExplainPinnedSeed000(t *testing.T) {
	args := seed000()
	args[2] = "testdata/seed000/pinned-isvc.yaml"
	out, stderr, code := berth(t, args...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "Pinned: runtime ClusterServingRuntime/srt-mistral-7b-instruct, AcceleratorClass (none)")
	assert.Contains(t, out, "a decision made today would choose runtime ClusterServingRuntime/srt-mistral-7b-instruct-2; "+
		"ClusterServingRuntime/srt-mistral-7b-instruct: matches, but priority 1 is below ClusterServingRuntime/srt-mistral-7b-instruct-2's 2; the pin keeps ClusterServingRuntime/srt-mistral-7b-instruct")
	golden(t, "explain-seed000-pinned.txt", out)
}

// TestGoldenRenderStory8EnvMerge: seed 002's Story 8 scenario 3 on its
// Story 7 runtime and the seed's H100 class: the user's
// TENSOR_PARALLEL_SIZE=4 wins, and the H100 configuration's env, args and
// node selector are merged in. The Story 7 runtime, verbatim, has no
// image: its service is refused naming the field, as admission refuses it;
// rendered with the image the seed leaves out, it composes.
func TestGoldenRenderStory8EnvMerge(t *testing.T) {
	_, stderr, code := berth(t, "render", "-f", "testdata/story8/env-merge-deployment.yaml",
		"--from", seeds+"002-story7-sglang-performance-optimized.yaml",
		"--from", seeds+"002-examples-nvidia-h100-80gb.yaml",
		"--from", "testdata/story8/model.yaml")
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, `spec.containers[0].image: Required value: container "ome-container" has no image`)

	out, stderr, code := berth(t, "render", "-f", "testdata/story8/env-merge-deployment.yaml",
		"--from", "testdata/story8/sglang-performance-optimized.yaml",
		"--from", seeds+"002-examples-nvidia-h100-80gb.yaml",
		"--from", "testdata/story8/model.yaml")
	require.Equal(t, 0, code, stderr)
	for _, want := range []string{
		"- name: TENSOR_PARALLEL_SIZE\n      value: \"4\"",
		"- name: CUSTOM_SETTING\n      value: user-value",
		"- name: QUANTIZATION_METHOD\n      value: fp8",
		"- name: ENABLE_SPECULATIVE_DECODING\n      value: \"true\"",
		"- --num-speculative-tokens=5",
		"nodeSelector:\n    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "value: awq", "the A100 configuration is not applied")
	golden(t, "render-story8-env-merge.yaml", out)
}

// TestStory8SeedIsVerbatim: the Story 8 service of testdata is the seed's,
// plus spec.model and nothing else.
func TestStory8SeedIsVerbatim(t *testing.T) {
	seed := readYAMLMap(t, seeds+"002-story8-env-merge-deployment.yaml")
	ours := readYAMLMap(t, "testdata/story8/env-merge-deployment.yaml")
	spec := ours["spec"].(map[string]any)
	assert.Equal(t, map[string]any{"name": "llama-3-1-8b-instruct"}, spec["model"])
	delete(spec, "model")
	assert.Equal(t, seed, ours)
}

func readYAMLMap(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(data, &m))
	return m
}

// TestHelpTeaches: each command's -h says what it does, with examples a
// newcomer can copy, and exits 0.
func TestHelpTeaches(t *testing.T) {
	for _, c := range []struct{ cmd, example string }{
		{"explain", "berth explain -f my-isvc.yaml --from deploy/runtimes --from deploy/accelerators"},
		{"render", "berth render isvc/llama-3-2-1b-instruct -n default --diff"},
		{"lint", "berth lint deploy/"},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			_, stderr, code := berth(t, c.cmd, "-h")
			assert.Equal(t, 0, code)
			assert.Contains(t, stderr, "Usage:\n  berth "+c.cmd)
			assert.Contains(t, stderr, "Examples:")
			assert.Contains(t, stderr, c.example)
			assert.Contains(t, stderr, "Flags:")
			assert.True(t, strings.Count(stderr, "\n") > 20, "help is more than a flag list")
		})
	}
}

// TestREADMEShowsRealExplainOutput: the README's example of berth explain
// is the seed 000 golden output, so it cannot go stale.
func TestREADMEShowsRealExplainOutput(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/golden/explain-seed000-priority.txt")
	require.NoError(t, err)
	assert.Contains(t, string(readme), "```text\n"+string(want)+"```")
}

// TestExplainServingPolicy: a ServingPolicy among the --from files
// gates selection as it does in the webhook: the class it denies loses,
// naming the policy, and the next class wins.
func TestExplainServingPolicy(t *testing.T) {
	args := []string{"explain", "-f", "../../deploy/samples/llama-3-2-1b-instruct.yaml",
		"--from", "../../deploy/runtimes", "--from", "../../deploy/accelerators", "--fleet", "default"}
	out, stderr, code := berth(t, args...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "AcceleratorClass nvidia-b200-180gb (has room now)", "without the policy, the B200 wins")

	out, stderr, code = berth(t, append(args, "--from", "testdata/policy")...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "AcceleratorClass nvidia-h100-80gb (has room now)")
	assert.Contains(t, out, "AcceleratorClass/nvidia-b200-180gb  [excluded] forbidden by ServingPolicy/no-b200: ")
}

// TestRenderShowsWhatTheReconcilerAdds: berth render composes the pods the
// reconciler creates (merge.GroupPod), so a gang-scheduled prefill/decode
// service's engine and decoder show their PodGroup (one gang: the
// service's name) and the gang scheduler, and its router the account berth
// makes for it.
func TestRenderShowsWhatTheReconcilerAdds(t *testing.T) {
	out, stderr, code := berth(t, "render", "-f", "testdata/gang/pd-gang.yaml", "--from", "../../deploy/test-engine")
	require.Equal(t, 0, code, stderr)
	docs := strings.Split(out, "\n---\n")
	require.Len(t, docs, 3, out)
	for _, d := range docs {
		switch {
		case strings.Contains(d, "component engine"), strings.Contains(d, "component decoder"):
			assert.Contains(t, d, "scheduling.x-k8s.io/pod-group: pd\n", "the gang's PodGroup label")
			assert.Contains(t, d, "schedulerName: scheduler-plugins-scheduler\n")
		case strings.Contains(d, "component router"):
			assert.Contains(t, d, "serviceAccountName: pd-router\n")
			assert.NotContains(t, d, "pod-group", "the router is never ganged")
		default:
			t.Errorf("a pod of no component:\n%s", d)
		}
	}
}
