package deploy

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/webhook/handlers"
)

// The validating webhook's checks that need no cluster state, run over the
// out-of-box objects and the seed examples: what the CRD cannot check (Gt/Lt
// integers, label syntax, version and size parsing, templates) must accept
// ours and reject the seed examples Kubernetes would silently never match.

// webhookRejectedSeeds are seed examples the webhook denies, with the text.
var webhookRejectedSeeds = map[string]string{
	"002-base-set-small-gpu.yaml":  `Lt compares integers, so "24Gi" never matches a node; nvidia.com/gpu.memory counts MiB: write operator Lt with value "24576"`,
	"002-base-set-medium-gpu.yaml": `node affinity has no Gte, so pods could not be placed by it; nvidia.com/gpu.memory counts MiB: write operator Gt with value "32767"`,
	"002-base-set-large-gpu.yaml":  `node affinity has no Gte, so pods could not be placed by it; nvidia.com/gpu.memory counts MiB: write operator Gt with value "81919"`,
	"004-sglang-pd-runtime.yaml":   `spec.containers[0].image: Invalid value: "<IMG>": image reference has an invalid path component "<IMG>"; the container runtime could not pull it`,
}

// TestObjectsPassTheWebhookChecks runs the webhook's stateless checks
// (handlers.AcceleratorClassErrors, handlers.ProfileErrors,
// merge.ValidateRuntimeTemplates; selection.ValidateRuntimeSpec is in
// selection_test.go) over every object of their kind.
func TestObjectsPassTheWebhookChecks(t *testing.T) {
	var all []manifest
	for _, dir := range []string{runtimesDir, sidecarRuntimesDir, profilesDir, acceleratorsDir, seedsDir} {
		all = append(all, readManifests(t, dir)...)
	}
	seen := map[string]bool{}
	for _, m := range all {
		var errs []string
		switch m.kind() {
		case "AcceleratorClass":
			var o v1beta1.AcceleratorClass
			require.NoError(t, yaml.UnmarshalStrict(m.raw, &o), m.file)
			errs = handlers.AcceleratorClassErrors(&o.Spec)
		case "ClusterEngineRuntimeProfile":
			var o v1beta1.ClusterEngineRuntimeProfile
			require.NoError(t, yaml.UnmarshalStrict(m.raw, &o), m.file)
			errs = handlers.ProfileErrors(&o.Spec)
		case "ClusterServingRuntime", "ServingRuntime":
			var o v1beta1.ClusterServingRuntime // same spec for both kinds
			require.NoError(t, yaml.UnmarshalStrict(m.raw, &o), m.file)
			for _, e := range merge.ValidateRuntimeTemplates(&o.Spec, field.NewPath("spec")) {
				errs = append(errs, e.Error())
			}
		default:
			continue
		}
		t.Run(m.String(), func(t *testing.T) {
			text := strings.Join(errs, "\n")
			if want, bad := webhookRejectedSeeds[filepath.Base(m.file)]; bad && strings.HasPrefix(m.file, seedsDir) {
				seen[filepath.Base(m.file)] = true
				assert.Contains(t, text, want)
				return
			}
			assert.Empty(t, text)
		})
	}
	for f := range webhookRejectedSeeds {
		assert.True(t, seen[f], "%s is not in %s", f, seedsDir)
	}
}
