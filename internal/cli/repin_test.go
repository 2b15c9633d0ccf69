package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func TestRepinPatch(t *testing.T) {
	p, err := repinPatch(time.Date(2026, 11, 27, 1, 2, 3, 4, time.FixedZone("x", 3600)))
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"annotations":{"ome.io/repin":"2026-11-27T00:02:03.000000004Z"}}}`, string(p))
}

func TestPinText(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        string
	}{
		{nil, "not pinned (it waits; see its status)"},
		{map[string]string{v1beta1.AnnotationResolvedRuntime: "ServingRuntime/first"}, "ServingRuntime/first"},
		{map[string]string{v1beta1.AnnotationResolvedRuntime: "ClusterServingRuntime/vllm", v1beta1.AnnotationResolvedAcceleratorClass: "nvidia-h100-80gb"},
			"ClusterServingRuntime/vllm on AcceleratorClass nvidia-h100-80gb"},
	} {
		assert.Equal(t, tc.want, pinText(&v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}))
	}
}
