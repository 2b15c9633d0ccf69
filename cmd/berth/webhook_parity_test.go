package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/handlers"
)

// The webhook and berth explain must never say different things. These
// tests run the webhook's InferenceService handlers as the apiserver does
// (an AdmissionRequest built here, Mutate, its JSON patch applied,
// Validate) over an index fed here from the same files, and compare what
// they answer with what `berth explain -o json` prints.

// webhookAdmit returns the validating handler's denial message ("" when
// allowed) and the ome.io/decision annotation the mutating handler wrote.
func webhookAdmit(t *testing.T, isvcFile string, from ...string) (denial, decision string) {
	t.Helper()
	x := selection.NewIndex()
	for _, f := range from {
		var probe struct{ Kind string }
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(data, &probe))
		switch probe.Kind {
		case "ClusterServingRuntime":
			var o v1beta1.ClusterServingRuntime
			require.NoError(t, yaml.Unmarshal(data, &o))
			x.UpsertClusterServingRuntime(&o)
		case "ClusterBaseModel":
			var o v1beta1.ClusterBaseModel
			require.NoError(t, yaml.Unmarshal(data, &o))
			x.UpsertClusterBaseModel(&o)
		default:
			t.Fatalf("%s: kind %s not fed by this test", f, probe.Kind)
		}
	}
	h := &handlers.InferenceServices{Index: x, DownloaderImage: handlers.DefaultModelDownloaderImage} // as webhook/app configures it by default
	data, err := os.ReadFile(isvcFile)
	require.NoError(t, err)
	raw, err := yaml.YAMLToJSON(data)
	require.NoError(t, err)
	var meta struct{ Metadata metav1.ObjectMeta }
	require.NoError(t, json.Unmarshal(raw, &meta))
	req := &admissionv1.AdmissionRequest{
		UID: "parity", Operation: admissionv1.Create,
		Kind:     metav1.GroupVersionKind{Group: "ome.io", Version: "v1beta1", Kind: "InferenceService"},
		Resource: metav1.GroupVersionResource{Group: "ome.io", Version: "v1beta1", Resource: "inferenceservices"},
		Name:     meta.Metadata.Name, Namespace: meta.Metadata.Namespace,
	}
	req.Object.Raw = raw
	resp := h.Mutate(context.Background(), req)
	require.True(t, resp.Allowed, "the mutating handler never denies these")
	if len(resp.Patch) > 0 {
		p, err := jsonpatch.DecodePatch(resp.Patch)
		require.NoError(t, err)
		req.Object.Raw, err = p.Apply(raw)
		require.NoError(t, err)
	}
	var mutated v1beta1.InferenceService
	require.NoError(t, json.Unmarshal(req.Object.Raw, &mutated))
	resp = h.Validate(context.Background(), req)
	if !resp.Allowed {
		denial = resp.Result.Message
	}
	return denial, mutated.Annotations[v1beta1.AnnotationDecision]
}

type explainJSON struct {
	Allowed  bool
	Denial   string
	Decision *struct {
		Headline    string
		Explanation []string
	}
	Candidates []struct{ Name, Verdict, Rule string }
}

func explainAsJSON(t *testing.T, args ...string) (explainJSON, string, int) {
	t.Helper()
	out, stderr, code := berth(t, append(args, "-o", "json")...)
	var r explainJSON
	require.NoError(t, json.Unmarshal([]byte(out), &r), stderr)
	text, _, _ := berth(t, args...)
	return r, text, code
}

// TestGoldenExplainDenialIsTheWebhooks: when no runtime can serve the
// model, berth explain prints the webhook's denial, word for word, and
// exits 1.
func TestGoldenExplainDenialIsTheWebhooks(t *testing.T) {
	from := []string{seeds + "000-priority-srt-mistral-7b-instruct.yaml", seeds + "000-priority-srt-mistral-7b-instruct-2.yaml", "testdata/denied/llama-model.yaml"}
	isvc := seeds + "000-isvc-auto-select.yaml"
	want, _ := webhookAdmit(t, isvc, from...)
	require.NotEmpty(t, want, "the webhook denies the service")

	args := []string{"explain", "-f", isvc}
	for _, f := range from {
		args = append(args, "--from", f)
	}
	r, text, code := explainAsJSON(t, args...)
	assert.Equal(t, 1, code)
	assert.False(t, r.Allowed)
	assert.Equal(t, want, r.Denial, "berth explain and the webhook disagree")
	assert.Contains(t, text, strings.ReplaceAll(want, "\n", "\n  "), "the text output quotes the denial")
	require.Len(t, r.Candidates, 2)
	assert.Equal(t, "ClusterServingRuntime/srt-mistral-7b-instruct-2", r.Candidates[0].Name)
	assert.Contains(t, r.Candidates[0].Rule, "architecture MistralForCausalLM is not the model's LlamaForCausalLM")
	golden(t, "explain-seed000-denied.txt", text)
}

// TestExplainDecisionIsTheWebhooks: for an admitted service, the
// decision berth explain prints is the annotation ome.io/decision the
// mutating handler writes: the same headline and the same lines.
func TestExplainDecisionIsTheWebhooks(t *testing.T) {
	from := []string{seeds + "000-priority-srt-mistral-7b-instruct.yaml", seeds + "000-priority-srt-mistral-7b-instruct-2.yaml", "testdata/seed000/mistral-model.yaml"}
	isvc := seeds + "000-isvc-auto-select.yaml"
	denial, annotation := webhookAdmit(t, isvc, from...)
	require.Empty(t, denial)
	require.NotEmpty(t, annotation)

	args := []string{"explain", "-f", isvc}
	for _, f := range from {
		args = append(args, "--from", f)
	}
	r, _, code := explainAsJSON(t, args...)
	assert.Equal(t, 0, code)
	require.NotNil(t, r.Decision)
	got := strings.Join(append([]string{r.Decision.Headline}, r.Decision.Explanation...), "\n")
	assert.Equal(t, annotation, got)
}
