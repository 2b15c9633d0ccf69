package models

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/berthdev/berth/reconcile/plan"
)

// A BaseModel's author may not hold its namespace's Secrets: were any
// storage.parameters.endpoint honoured, the reconciler would send the
// token of the Secret the model names to a server the author runs (and
// probe the cluster's network for them). Only an admin's ClusterBaseModel,
// or an endpoint the reconciler's flag allows, moves the reads.
func TestEndpointOverride(t *testing.T) {
	allowed := []string{"https://hf-mirror.example", "http://minio.storage:9000/"}
	for _, tc := range []struct {
		name, kind, endpoint string
		wantReason           string
	}{
		{name: "no override", kind: KindBaseModel},
		{name: "cluster model: any", kind: KindClusterBaseModel, endpoint: "http://10.0.0.7:8080"},
		{name: "namespaced model, allowed", kind: KindBaseModel, endpoint: "https://hf-mirror.example/"},
		{name: "namespaced model, allowed without the slash", kind: KindBaseModel, endpoint: "http://minio.storage:9000"},
		{name: "namespaced model, not allowed", kind: KindBaseModel, endpoint: "http://attacker.example", wantReason: plan.ReasonEndpointNotAllowed},
		{name: "namespaced model, a longer URL of an allowed host", kind: KindBaseModel, endpoint: "https://hf-mirror.example.attacker.example", wantReason: plan.ReasonEndpointNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &model{kind: tc.kind, name: "llama", namespace: "team"}
			if tc.kind == KindClusterBaseModel {
				m.namespace = ""
			}
			got := endpointRefused(m, tc.endpoint, allowed)
			if tc.wantReason == "" {
				assert.Nil(t, got)
				return
			}
			if assert.NotNil(t, got) {
				assert.Equal(t, tc.wantReason, got.Reason)
				assert.Equal(t, `BaseModel team/llama: storage.parameters.endpoint "`+tc.endpoint+`" is not one the reconciler allows for namespaced models (--model-namespaced-endpoints: https://hf-mirror.example, http://minio.storage:9000/); ask an admin to allow it, or use a ClusterBaseModel`, got.Message)
			}
		})
	}
}
