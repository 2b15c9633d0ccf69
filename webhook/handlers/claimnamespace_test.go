package handlers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// OME's pvc://{namespace}:{claim}/{sub-path}: the claim of that namespace,
// looked up there when it is the service's; a service of another namespace
// is denied naming both, since its pods cannot mount the claim.
func TestClaimOfANamespaceIsCheckedAtAdmission(t *testing.T) {
	const ns = "mistral-7b-instruct"
	const deny = "InferenceService mistral-7b-instruct/mistral-7b-instruct is invalid:\n- spec.model.name: " + mistralRef + ": spec.storage."
	for _, tc := range []struct {
		name       string
		uri        string
		claims     Lookup
		wantDenial string
	}{
		{name: "the service's namespace, claim exists", uri: "pvc://" + ns + ":models/mistral", claims: present(ns + "/models")},
		{name: "the service's namespace, claim missing", uri: "pvc://" + ns + ":models/mistral", claims: present("ai-models/models"),
			wantDenial: deny + `storageUri: PersistentVolumeClaim "models" does not exist in namespace mistral-7b-instruct; the pods mount the model from it: create it there, or use a model whose claim is in this namespace`},
		{name: "another namespace", uri: "pvc://ai-models:models/mistral", claims: present("ai-models/models"),
			wantDenial: deny + `storageUri: PersistentVolumeClaim "models" is in namespace ai-models; pods of namespace mistral-7b-instruct cannot mount it: create the service in namespace ai-models, or use a model whose claim is in this namespace`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := pendingWorld(t, known, withStorage(v1beta1.StorageSpec{StorageURI: ptrTo(tc.uri)}))
			w.claims = tc.claims
			isvc := seedService(t, "api/v1beta1/testdata/seeds/000-isvc-auto-select.yaml")
			req := request(t, admissionv1.Create, "InferenceService", isvc, nil, isvc.Namespace, isvc.Name)
			req.Object.Raw = applyPatch(t, req.Object.Raw, w.isvcs().Mutate(ctx, req))
			resp := w.isvcs().Validate(ctx, req)
			if tc.wantDenial != "" {
				require.False(t, resp.Allowed)
				assert.Equal(t, tc.wantDenial, resp.Result.Message)
				require.Len(t, resp.Result.Details.Causes, 1)
				assert.Equal(t, "spec.model.name", resp.Result.Details.Causes[0].Field)
				return
			}
			require.True(t, resp.Allowed, "%+v", resp.Result)
		})
	}
}
