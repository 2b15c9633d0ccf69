package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/devenv/install"
)

// The apiserver itself (OpenAPI schema and CEL rules of deploy/crds)
// rejects malformed objects: each bad object is denied (422 Invalid) with the
// message its marker defines, naming the field. Each kind also has a valid
// control row, so a rejection cannot come from something else.
//
// Namespaced rows use kube-system, which berth's webhooks exclude by design:
// a mutating webhook runs before schema validation and could deny first.
// A control row may still be denied by a validating webhook (they run after
// the schema, with berth's own rules, e.g. a priority clash): what it proves
// is that the schema and CEL accepted it.
func TestServerSideValidation(t *testing.T) {
	// The runtime control row names an out-of-box class, which berth's
	// webhook requires to exist; apply the classes (idempotent) so the test
	// does not depend on running after TestDeployManifestsAccepted.
	classes, err := install.ReadObjects(env.Path("deploy", "accelerators"))
	require.NoError(t, err)
	applyCtx, cancelApply := context.WithTimeout(context.Background(), time.Minute)
	defer cancelApply()
	require.NoError(t, env.Applier.ApplyAll(applyCtx, classes))
	const csr = "apiVersion: ome.io/v1beta1\nkind: ClusterServingRuntime\nmetadata: {name: e2e-validation}\n"
	const isvc = "apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata: {name: e2e-validation, namespace: kube-system}\n"
	const ac = "apiVersion: ome.io/v1beta1\nkind: AcceleratorClass\nmetadata: {name: e2e-validation}\n"
	tests := []struct {
		name string
		yaml string
		// want are substrings of the apiserver's message, field path
		// included; none means the object is accepted.
		want []string
	}{
		{"runtime: valid control", csr + `spec:
  supportedModelFormats:
  - modelFormat: {name: e2e-validation-format, version: "1.0.0", operator: GreaterThanOrEqual}
    autoSelect: true
    priority: 1
  protocolVersions: [openAI]
  modelSizeRange: {min: 1B, max: 7.6B}
  engineConfig: {minReplicas: 1, maxReplicas: 3}
  acceleratorRequirements:
    preferenceOrder: [{class: nvidia-h100-80gb, score: 100}]
`, nil},
		{"runtime: priority 0", csr + `spec:
  supportedModelFormats: [{modelFormat: {name: safetensors}, autoSelect: true, priority: 0}]
`, []string{"spec.supportedModelFormats[0].priority", "should be greater than or equal to 1"}},
		{"runtime: engine minReplicas > maxReplicas (CEL)", csr + `spec:
  engineConfig: {minReplicas: 3, maxReplicas: 1}
`, []string{"spec.engineConfig", "minReplicas must not be greater than maxReplicas"}},
		{"runtime: router minReplicas > maxReplicas (CEL)", csr + `spec:
  routerConfig: {minReplicas: 2, maxReplicas: 1}
`, []string{"spec.routerConfig", "minReplicas must not be greater than maxReplicas"}},
		{"runtime: unknown protocol", csr + `spec:
  protocolVersions: [openai-v9]
`, []string{"spec.protocolVersions[0]", `Unsupported value: "openai-v9"`}},
		{"runtime: bad version operator", csr + `spec:
  supportedModelFormats: [{modelFormat: {name: safetensors, version: "1", operator: Newer}}]
`, []string{"spec.supportedModelFormats[0].modelFormat.operator", `Unsupported value: "Newer"`}},
		{"runtime: version pattern", csr + `spec:
  supportedModelFormats: [{modelFormat: {name: safetensors, version: "1.x"}}]
`, []string{"spec.supportedModelFormats[0].modelFormat.version", "should match"}},
		{"runtime: size pattern", csr + `spec:
  modelSizeRange: {min: 7 billion}
`, []string{"spec.modelSizeRange.min", "should match"}},
		{"runtime: preference score above 100", csr + `spec:
  acceleratorRequirements:
    preferenceOrder: [{class: nvidia-h100-80gb, score: 101}]
`, []string{"spec.acceleratorRequirements.preferenceOrder[0].score", "should be less than or equal to 100"}},
		{"runtime: format without a name (CEL)", csr + `spec:
  supportedModelFormats: [{autoSelect: true}]
`, []string{"spec.supportedModelFormats[0]", "set modelFormat.name (or the deprecated name)"}},
		{"runtime: negative minReplicas", csr + `spec:
  engineConfig: {minReplicas: -1}
`, []string{"spec.engineConfig.minReplicas", "should be greater than or equal to 0"}},

		{"inferenceservice: valid control", isvc + `spec:
  model: {name: llama-3-1-8b, kind: ClusterBaseModel}
  runtime: {name: srt-llama, kind: ClusterServingRuntime}
  engine: {minReplicas: 1, maxReplicas: 2, scaleMetric: concurrency}
  decoder: {minReplicas: 1}
  acceleratorSelector: {strategy: cost}
`, nil},
		{"inferenceservice: decoder without engine (CEL)", isvc + `spec:
  model: {name: llama-3-1-8b}
  decoder: {minReplicas: 1}
`, []string{"spec", "decoder needs engine"}},
		{"inferenceservice: bad strategy", isvc + `spec:
  model: {name: llama-3-1-8b}
  acceleratorSelector: {strategy: fastest}
`, []string{"spec.acceleratorSelector.strategy", `Unsupported value: "fastest"`}},
		{"inferenceservice: bad model kind", isvc + `spec:
  model: {name: llama-3-1-8b, kind: Model}
`, []string{"spec.model.kind", `Unsupported value: "Model"`}},
		{"inferenceservice: bad runtime kind", isvc + `spec:
  runtime: {name: srt-llama, kind: Runtime}
`, []string{"spec.runtime.kind", `Unsupported value: "Runtime"`}},
		{"inferenceservice: bad scale metric", isvc + `spec:
  engine: {scaleMetric: latency}
`, []string{"spec.engine.scaleMetric", `Unsupported value: "latency"`}},
		{"inferenceservice: engine minReplicas > maxReplicas (CEL)", isvc + `spec:
  engine: {minReplicas: 4, maxReplicas: 2}
`, []string{"spec.engine", "minReplicas must not be greater than maxReplicas"}},

		{"acceleratorclass: valid control", ac + `spec:
  vendor: nvidia
  discovery:
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    nodeSelectorTerms:
    - matchExpressions: [{key: nvidia.com/gpu.memory, operator: Gt, values: ["40000"]}]
  capabilities: {computeCapability: "9.0"}
  cost: {tier: high}
`, nil},
		{"acceleratorclass: no discovery (CEL)", ac + `spec:
  vendor: nvidia
`, []string{"spec", "set discovery.nodeSelector or discovery.nodeSelectorTerms"}},
		{"acceleratorclass: Gte operator (webhook, with the exact path)", ac + `spec:
  discovery:
    nodeSelectorTerms:
    - matchExpressions: [{key: nvidia.com/gpu.memory, operator: Gte, values: ["24576"]}]
`, []string{"spec.discovery.nodeSelectorTerms[0].matchExpressions[0].operator", `node affinity has no Gte`, `write operator Gt with value "24575"`}},
		{"acceleratorclass: bad cost tier", ac + `spec:
  discovery: {nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}}
  cost: {tier: cheap}
`, []string{"spec.cost.tier", `Unsupported value: "cheap"`}},
		{"acceleratorclass: compute capability pattern", ac + `spec:
  discovery: {nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}}
  capabilities: {computeCapability: sm_90}
`, []string{"spec.capabilities.computeCapability", "should match"}},

		{"basemodel: maxTokens 0", `apiVersion: ome.io/v1beta1
kind: BaseModel
metadata: {name: e2e-validation, namespace: kube-system}
spec:
  modelFormat: {name: safetensors}
  maxTokens: 0
`, []string{"spec.maxTokens", "should be greater than or equal to 1"}},
		{"clusterbasemodel: size pattern", `apiVersion: ome.io/v1beta1
kind: ClusterBaseModel
metadata: {name: e2e-validation}
spec:
  modelFormat: {name: safetensors}
  modelParameterSize: huge
`, []string{"spec.modelParameterSize", "should match"}},
		{"profile: bad update strategy", `apiVersion: ome.io/v1beta1
kind: ClusterEngineRuntimeProfile
metadata: {name: e2e-validation}
spec:
  updateStrategy: Always
`, []string{"spec.updateStrategy", `Unsupported value: "Always"`}},
	}
	rejections := 0
	for _, tc := range tests {
		if len(tc.want) > 0 {
			rejections++
		}
		t.Run(tc.name, func(t *testing.T) {
			objs, err := install.DecodeObjects([]byte(tc.yaml), tc.name)
			require.NoError(t, err)
			require.Len(t, objs, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := env.Applier.Resource(objs[0].Unstructured)
			require.NoError(t, err)
			// Dry run: the object goes through every server-side check and is not stored.
			_, err = res.Create(ctx, objs[0].Unstructured, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if len(tc.want) == 0 {
				if err != nil {
					assert.False(t, apierrors.IsInvalid(err), "the schema or CEL refused a valid object: %v", err)
					assert.Contains(t, err.Error(), "admission webhook", "only a webhook may refuse a valid object")
				}
				return
			}
			require.Error(t, err, "the apiserver accepted a bad object")
			assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	assert.GreaterOrEqual(t, rejections, 10, "the issue asks for at least ten rejected objects")
}
