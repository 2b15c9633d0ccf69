package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLintDeployPasses: everything berth ships under deploy/ (runtimes,
// classes, samples, CRDs, the webhook's manifests; Helm chart templates
// are skipped) passes berth lint: strict decoding, CRD schemas, the
// webhook's handlers, priority ties and sample renders. CI runs it.
func TestLintDeployPasses(t *testing.T) {
	out, stderr, code := berth(t, "lint", "../../deploy")
	assert.Equal(t, 0, code, "berth lint deploy/ found problems:\n%s", out)
	assert.Empty(t, out)
	assert.Contains(t, stderr, "no problem")
}

// TestLintConflictingRuntimesNameBothFiles: two runtimes that tie in
// priority for one model fail lint, each at its priority's line, and
// each message names the other's file.
func TestLintConflictingRuntimesNameBothFiles(t *testing.T) {
	out, stderr, code := berth(t, "lint", "testdata/lint/conflict")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "2 problem(s)")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.True(t, strings.HasPrefix(lines[0], "testdata/lint/conflict/mistral-a.yaml:15: ClusterServingRuntime/mistral-a: spec.supportedModelFormats[0].priority: "), lines[0])
	assert.Contains(t, lines[0], "is also used by ClusterServingRuntime/mistral-b")
	assert.Contains(t, lines[0], "(ClusterServingRuntime/mistral-b is at testdata/lint/conflict/mistral-b.yaml:3)")
	assert.True(t, strings.HasPrefix(lines[1], "testdata/lint/conflict/mistral-b.yaml:15: ClusterServingRuntime/mistral-b: "), lines[1])
	assert.Contains(t, lines[1], "(ClusterServingRuntime/mistral-a is at testdata/lint/conflict/mistral-a.yaml:3)")
}

// TestGoldenLintProblems: strict decoding names the misspelt field's
// line; the runtime handler's missing-class check names the field's line;
// the CRD schema names the seed's float TFLOPS.
func TestGoldenLintProblems(t *testing.T) {
	out, stderr, code := berth(t, "lint", "testdata/lint/strict", seeds+"002-examples-amd-mi250x.yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "testdata/lint/strict/runtime.yaml:10: ClusterServingRuntime/typo: unknown field \"priorty\"\n")
	assert.Contains(t, out, "testdata/lint/strict/runtime.yaml:21: ClusterServingRuntime/missing-class: spec.acceleratorRequirements.supportedClasses[0]: ")
	assert.Contains(t, out, "002-examples-amd-mi250x.yaml:29: AcceleratorClass/amd-mi250x: schema: spec.capabilities.performance.fp32TFLOPS")
	assert.Contains(t, stderr, "6 problem(s)")
	golden(t, "lint-problems.txt", out)
}

// TestLintServingPolicy: a ServingPolicy is checked by its CRD schema and
// by the webhook's ServingPolicy handler, each at the field's line.
func TestLintServingPolicy(t *testing.T) {
	out, _, code := berth(t, "lint", "testdata/lint/policy", "testdata/policy")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "testdata/lint/policy/bad.yaml:7: ServingPolicy/bad: spec.validationActions[1]: Unsupported value: \"Bogus\"")
	assert.Contains(t, out, "testdata/lint/policy/bad.yaml:9: ServingPolicy/bad: spec.rules.maxAcceleratorsPerService: Invalid value: -1: must not be negative")
	assert.NotContains(t, out, "no-b200", "a valid policy has no problem")
}
