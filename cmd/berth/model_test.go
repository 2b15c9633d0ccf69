package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/hubtest"
	"github.com/berthdev/berth/modelmeta"
)

// writeModelDir writes repo's files into dir: the real leading bytes, then a
// hole up to the real size (a sparse file), so a 4 GB shard costs a few KB.
func writeModelDir(t *testing.T, dir string, repo *hubtest.Repo) {
	t.Helper()
	for _, f := range repo.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, f.Head, 0o644))
		require.NoError(t, os.Truncate(p, f.Size))
	}
}

func ptr[T any](v T) *T { return &v }

// Qwen2.5-7B-Instruct's published figures (model card, the Hub's safetensors
// parameter count).
func qwenWant(source string) *v1beta1.ModelMetadata {
	return &v1beta1.ModelMetadata{
		ModelFormat:        &v1beta1.ModelFormat{Name: "safetensors", Version: ptr("1.0.0")},
		ModelFramework:     &v1beta1.ModelFrameworkSpec{Name: "transformers", Version: ptr("4.43.1")},
		ModelType:          ptr("qwen2"),
		ModelArchitecture:  ptr("Qwen2ForCausalLM"),
		ModelParameterSize: ptr("7.62B"),
		ParameterCount:     ptr(int64(7_615_616_512)),
		MaxTokens:          ptr(int32(32768)),
		DType:              "bfloat16",
		Source:             source,
	}
}

// runInspect runs `berth model inspect args...` through the dispatcher.
func runInspect(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"model", "inspect"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func decodeResult(t *testing.T, s string) modelmeta.InspectResult {
	t.Helper()
	r, err := modelmeta.ParseInspectResult([]byte(s))
	require.NoError(t, err, s)
	return r
}

func TestModelInspectDirectory(t *testing.T) {
	dir := t.TempDir()
	writeModelDir(t, dir, hubtest.Qwen())
	term := filepath.Join(t.TempDir(), "termination-log")

	code, stdout, stderr := runInspect(t, dir, "--termination-message-path", term)
	require.Equal(t, 0, code, stderr)
	got := decodeResult(t, stdout)
	require.NotNil(t, got.Metadata)
	assert.Greater(t, *got.Metadata.WeightsBytes, int64(2*7_615_616_512))
	assert.Greater(t, *got.Metadata.DownloadBytes, *got.Metadata.WeightsBytes, "every file is downloaded")
	got.Metadata.WeightsBytes, got.Metadata.DownloadBytes = nil, nil
	assert.Equal(t, qwenWant(dir), got.Metadata)

	msg, err := os.ReadFile(term)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(msg), modelmeta.MaxTerminationMessageBytes)
	assert.NotContains(t, string(msg), "\n", "compact JSON")
	fromJob := decodeResult(t, string(msg))
	fromJob.Metadata.WeightsBytes, fromJob.Metadata.DownloadBytes = nil, nil
	assert.Equal(t, got, fromJob, "the termination message is the same result")
}

func TestModelInspectYAMLAndFlagsAfterTheModel(t *testing.T) {
	dir := t.TempDir()
	writeModelDir(t, dir, hubtest.Qwen())
	code, stdout, stderr := runInspect(t, dir, "-o", "yaml")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "metadata:\n")
	assert.Contains(t, stdout, "  modelArchitecture: Qwen2ForCausalLM\n")
	assert.Contains(t, stdout, "  parameterCount: 7615616512\n")
}

func TestModelInspectPVC(t *testing.T) {
	mount := t.TempDir()
	writeModelDir(t, filepath.Join(mount, "models/qwen"), hubtest.Qwen())
	term := filepath.Join(t.TempDir(), "termination-log")

	code, stdout, stderr := runInspect(t, "pvc://model-store/models/qwen", "--root", mount, "--termination-message-path", term)
	require.Equal(t, 0, code, stderr)
	got := decodeResult(t, stdout)
	got.Metadata.WeightsBytes, got.Metadata.DownloadBytes = nil, nil
	assert.Equal(t, qwenWant("pvc://model-store/models/qwen"), got.Metadata)

	// What the reconciler's Job runs.
	var out, errOut bytes.Buffer
	jobTerm := filepath.Join(t.TempDir(), "termination-log")
	code = run(context.Background(), modelmeta.InspectJobArgs("pvc://model-store/models/qwen", mount, jobTerm), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	msg, err := os.ReadFile(jobTerm)
	require.NoError(t, err)
	fromJob := decodeResult(t, string(msg))
	fromJob.Metadata.WeightsBytes, fromJob.Metadata.DownloadBytes = nil, nil
	assert.Equal(t, got, fromJob)

	code, _, stderr = runInspect(t, "pvc://model-store/models/qwen")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `give --root, the directory where claim "model-store" is mounted`)
}

func TestModelInspectHub(t *testing.T) {
	hub := hubtest.NewServer()
	defer hub.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(hubtest.Token+"\n"), 0o600))
	t.Setenv("HF_TOKEN", "")

	code, stdout, stderr := runInspect(t, "hf://meta-llama/Llama-3.1-8B-Instruct", "--hf-endpoint", hub.URL, "--token-file", tokenFile)
	require.Equal(t, 0, code, stderr)
	got := decodeResult(t, stdout)
	assert.Equal(t, "LlamaForCausalLM", *got.Metadata.ModelArchitecture)
	assert.Equal(t, int64(8_030_261_248), *got.Metadata.ParameterCount)
	assert.Equal(t, "8.03B", *got.Metadata.ModelParameterSize)

	// The same private model without a token: the reason, in stderr and in
	// the termination message; nothing on stdout.
	term := filepath.Join(t.TempDir(), "termination-log")
	code, stdout, stderr = runInspect(t, "hf://meta-llama/Llama-3.1-8B-Instruct", "--hf-endpoint", hub.URL, "--termination-message-path", term)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "berth model: Unauthorized: ")
	assert.NotContains(t, stderr, hubtest.Token)
	msg, err := os.ReadFile(term)
	require.NoError(t, err)
	failed := decodeResult(t, string(msg))
	require.NotNil(t, failed.Error)
	assert.Equal(t, modelmeta.ReasonUnauthorized, failed.Error.Reason)
}

func TestModelInspectS3(t *testing.T) {
	backend := s3mem.New()
	require.NoError(t, backend.CreateBucket("models"))
	put := func(key string, body []byte) {
		_, err := backend.PutObject("models", key, nil, bytes.NewReader(body), int64(len(body)), nil)
		require.NoError(t, err)
	}
	put("tiny/config.json", []byte(`{"architectures":["MistralForCausalLM"],"model_type":"mistral","torch_dtype":"float16","max_position_embeddings":4096}`))
	header := `{"w":{"dtype":"F16","shape":[4,8],"data_offsets":[0,64]},"b":{"dtype":"F16","shape":[8],"data_offsets":[64,80]}}`
	var st bytes.Buffer
	require.NoError(t, binary.Write(&st, binary.LittleEndian, uint64(len(header))))
	st.WriteString(header)
	st.Write(make([]byte, 80))
	put("tiny/model.safetensors", st.Bytes())
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")

	code, stdout, stderr := runInspect(t, "s3://models/tiny", "--s3-endpoint", srv.URL, "--s3-path-style")
	require.Equal(t, 0, code, stderr)
	got := decodeResult(t, stdout)
	assert.Equal(t, "MistralForCausalLM", *got.Metadata.ModelArchitecture)
	assert.Equal(t, int64(40), *got.Metadata.ParameterCount, "4x8 + 8")
	assert.Equal(t, "s3://models/tiny", got.Metadata.Source)
}

func TestModelInspectFailures(t *testing.T) {
	noConfig := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(noConfig, "model.safetensors"), []byte("x"), 0o644))
	root := t.TempDir()
	emptyToken := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(emptyToken, []byte("\n"), 0o600))

	tests := []struct {
		name       string
		args       []string
		wantStderr string
		wantReason modelmeta.Reason // in the termination message; "" = none written
	}{
		{"no config.json", []string{noConfig}, "berth model: ConfigMissing: ", modelmeta.ReasonConfigMissing},
		{"missing directory", []string{filepath.Join(root, "nope")}, "berth model: NotFound: ", modelmeta.ReasonNotFound},
		{"a directory outside --root", []string{noConfig, "--root", root}, "is not inside --root", modelmeta.ReasonUnavailable},
		{"gs:// is not inspected", []string{"gs://bucket/m"}, "berth cannot read gs:// models' files", modelmeta.ReasonUnavailable},
		{"unknown scheme", []string{"ftp://x/m"}, `unsupported scheme "ftp"`, modelmeta.ReasonUnavailable},
		{"empty token file", []string{"hf://org/m", "--token-file", emptyToken}, "is empty", modelmeta.ReasonUnavailable},
		{"bad output format", []string{noConfig, "-o", "xml"}, `-o "xml": want json or yaml`, ""},
		{"two models", []string{noConfig, noConfig}, "want one model (a URI or a directory), got 2", ""},
		{"no model", nil, "want one model (a URI or a directory), got 0", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			term := filepath.Join(t.TempDir(), "termination-log")
			code, stdout, stderr := runInspect(t, append(tc.args, "--termination-message-path", term)...)
			assert.Equal(t, 1, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tc.wantStderr)
			msg, err := os.ReadFile(term)
			if tc.wantReason == "" {
				assert.True(t, os.IsNotExist(err), "no termination message for a usage error")
				return
			}
			require.NoError(t, err)
			r := decodeResult(t, string(msg))
			require.NotNil(t, r.Error)
			assert.Equal(t, tc.wantReason, r.Error.Reason)
		})
	}
}

func TestModelSubcommands(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"model", "-h"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "usage: berth model inspect <uri-or-dir>")
	assert.Contains(t, errOut.String(), "-termination-message-path")

	errOut.Reset()
	assert.Equal(t, 1, run(context.Background(), []string{"model", "list"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `unknown subcommand "list"`)

	errOut.Reset()
	assert.Equal(t, 2, run(context.Background(), nil, &out, &errOut))
	assert.True(t, strings.Contains(errOut.String(), "  model "), "the command list names model")
	var js json.RawMessage
	assert.Error(t, json.Unmarshal(out.Bytes(), &js), "nothing on stdout")
}
