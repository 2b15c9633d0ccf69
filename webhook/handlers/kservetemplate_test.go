package handlers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// KServe's torchserve runtime (vendored verbatim in merge's testdata) and
// its sample service without the label serviceEnvelope: admitted, and the
// validating handler warns naming the key and the field (the pods get
// TS_SERVICE_ENVELOPE="", as KServe renders it).
func TestKServeTorchServeSampleIsAdmittedWithAWarning(t *testing.T) {
	w := newWorld()
	w.addCSR(t, "merge/testdata/upstream/kserve-torchserve.yaml", time.Now())
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "torchserve", Namespace: "default"},
		Spec: v1beta1.InferenceServiceSpec{Predictor: &v1beta1.PredictorSpec{
			PyTorch: &v1beta1.PredictorExtensionSpec{StorageURI: ptrTo("gs://kfserving-examples/models/torchserve/image_classifier/v1")},
		}},
	}
	out, resp := admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	assert.Equal(t, "ClusterServingRuntime/kserve-torchserve", out.Annotations[v1beta1.AnnotationResolvedRuntime])
	assert.Contains(t, resp.Warnings, "engine: runtime ClusterServingRuntime/kserve-torchserve "+
		"spec.containers[0].env[0].value (TS_SERVICE_ENVELOPE): template key .Labels.serviceEnvelope not found on InferenceService default/torchserve; "+
		"rendered empty, as KServe renders it; add the label to set it")

	isvc.Labels = map[string]string{"serviceEnvelope": "kserve"}
	_, resp = admitISVC(t, w, admissionv1.Create, isvc, nil)
	require.True(t, resp.Allowed, "%+v", resp.Result)
	for _, warning := range resp.Warnings {
		assert.NotContains(t, warning, "serviceEnvelope")
	}
}
