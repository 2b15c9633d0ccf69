package handlers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestMigratePreviousSchema(t *testing.T) {
	isvc := seedService(t, "api/v1beta1/testdata/seeds/001-previous-schema-isvc-sklearn.yaml")
	notes, err := MigratePredictor(isvc)
	require.NoError(t, err)
	require.NotEmpty(t, notes)
	p := isvc.Spec.Predictor
	assert.Nil(t, p.SKLearn)
	require.NotNil(t, p.Model)
	assert.Equal(t, "sklearn", p.Model.ModelFormat.Name)
	assert.Equal(t, "kserve-sklearnserver", isvc.Spec.Runtime.Name)
	require.NotNil(t, isvc.Spec.Engine.Runner)
	assert.Equal(t, "s3://bucket/sklearn/mnist.joblib", isvc.Spec.Engine.Runner.Env[0].Value)
	assert.Equal(t, "STORAGE_URI", isvc.Spec.Engine.Runner.Env[0].Name)

	// The seed's "migrated" form and a second pass change nothing more.
	before := isvc.DeepCopy()
	notes, err = MigratePredictor(isvc)
	require.NoError(t, err)
	assert.Empty(t, notes)
	assert.Equal(t, before, isvc)
}

func TestMigrateProtocolDefaults(t *testing.T) {
	uri := "gs://m"
	isvc := &v1beta1.InferenceService{Spec: v1beta1.InferenceServiceSpec{Predictor: &v1beta1.PredictorSpec{
		Triton: &v1beta1.PredictorExtensionSpec{StorageURI: &uri},
	}}}
	_, err := MigratePredictor(isvc)
	require.NoError(t, err)
	assert.Equal(t, v1beta1.ProtocolKServeV2, *isvc.Spec.ProtocolVersion)
	assert.Equal(t, "kserve-tritonserver", isvc.Spec.Runtime.Name)
}

func TestMigrateNewSchemaKeepsExplicitRuntime(t *testing.T) {
	isvc := seedService(t, "api/v1beta1/testdata/seeds/001-explicit-isvc-sklearn.yaml")
	_, err := MigratePredictor(isvc)
	require.NoError(t, err)
	assert.Equal(t, "kserve-mlserver", isvc.Spec.Runtime.Name)
	assert.Nil(t, isvc.Spec.Predictor.Model.Runtime)
}

func TestMigrateRejectsPredictorAndEngineContainers(t *testing.T) {
	isvc := seedService(t, "api/v1beta1/testdata/seeds/001-previous-schema-isvc-sklearn.yaml")
	isvc.Spec.Predictor.SKLearn.Image = "custom"
	isvc.Spec.Engine = &v1beta1.EngineSpec{}
	_, err := MigratePredictor(isvc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "move the predictor's into spec.engine")
}
