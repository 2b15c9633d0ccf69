package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestPredictorModelIsServedByItsFormat(t *testing.T) {
	x := NewIndex()
	yes := true
	one := "1"
	x.UpsertClusterServingRuntime(&v1beta1.ClusterServingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "kserve-sklearnserver"},
		Spec: v1beta1.ServingRuntimeSpec{
			SupportedModelFormats: []v1beta1.SupportedModelFormat{{Name: "sklearn", Version: &one, AutoSelect: &yes}},
			ProtocolVersions:      []v1beta1.ProtocolVersion{v1beta1.ProtocolKServeV1, v1beta1.ProtocolKServeV2},
		},
	})
	v1 := v1beta1.ProtocolKServeV1
	isvc := &v1beta1.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Name: "example-sklearn-isvc", Namespace: "default"},
		Spec: v1beta1.InferenceServiceSpec{
			ProtocolVersion: &v1,
			Predictor:       &v1beta1.PredictorSpec{Model: &v1beta1.PredictorModelSpec{ModelFormat: v1beta1.ModelFormat{Name: "sklearn"}}},
		},
	}
	d, err := x.Select(isvc)
	require.NoError(t, err)
	assert.Equal(t, "ClusterServingRuntime/kserve-sklearnserver", d.RuntimeRef())
	assert.Equal(t, KindPredictorModel, d.Model.Kind)

	// Seed 001: a model asking for sklearn version 0 does not match a runtime of version 1.
	zero := "0"
	isvc.Spec.Predictor.Model.ModelFormat.Version = &zero
	_, err = x.Select(isvc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kserve-sklearnserver")
}
