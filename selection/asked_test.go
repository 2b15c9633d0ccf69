package selection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// sklearnWorld is seed 001's KServe sklearn example in a cluster that has
// GPU classes and nodes: the runtime's container asks for CPU and memory.
func sklearnWorld(opts ...rtOpt) *Index {
	rt := csr("kserve-sklearnserver", append([]rtOpt{func(s *v1beta1.ServingRuntimeSpec, _ *metav1.ObjectMeta) {
		s.SupportedModelFormats = []v1beta1.SupportedModelFormat{{Name: "sklearn", Version: ptr("1"), AutoSelect: ptr(true)}}
		s.Containers = []corev1.Container{{Name: "kserve-container", Image: "kserve/sklearnserver:latest", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		}}}
	}}, opts...)...)
	return objects{csrs: []*v1beta1.ClusterServingRuntime{rt}, classes: fleet(), nodes: fleetNodes(8)}.load()
}

func sklearnService(opts ...isvcOpt) *v1beta1.InferenceService {
	s := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "example-sklearn-isvc", Namespace: "default"},
		Spec: v1beta1.InferenceServiceSpec{Predictor: &v1beta1.PredictorSpec{Model: &v1beta1.PredictorModelSpec{ModelFormat: v1beta1.ModelFormat{Name: "sklearn"}}}}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Item 2 of issue 10: a service whose engine and decoder request no
// accelerator, and that names no class, no selector and whose runtime has
// no acceleratorRequirements, gets no AcceleratorClass (seed 002: new
// fields "only enhance functionality when used").
func TestAcceleratorsOnlyWhereAsked(t *testing.T) {
	gpu := func(n int64) corev1.ResourceRequirements {
		q := *resource.NewQuantity(n, resource.DecimalSI)
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": q}}
	}
	tests := []struct {
		name string
		x    *Index
		svc  *v1beta1.InferenceService
		want string // "" = no class
	}{
		{name: "seed 001 sklearn: CPU only, no class", x: sklearnWorld(), svc: sklearnService()},
		{name: "the class annotation asks for one", x: sklearnWorld(),
			svc: sklearnService(withAnnotation(v1beta1.AnnotationAcceleratorClass, "h100-80gb")), want: "h100-80gb"},
		{name: "an acceleratorSelector asks for one", x: sklearnWorld(),
			svc: sklearnService(withSelector(v1beta1.AcceleratorSelector{Strategy: v1beta1.StrategyCost})), want: "a100-40gb"},
		{name: "runtime acceleratorRequirements ask for one",
			x:   sklearnWorld(accel(&v1beta1.AcceleratorRequirements{SupportedClasses: []string{"h100-80gb"}})),
			svc: sklearnService(), want: "h100-80gb"},
		{name: "the service's engine runner asks for a GPU", x: sklearnWorld(),
			svc: sklearnService(func(s *v1beta1.InferenceService) {
				s.Spec.Engine = &v1beta1.EngineSpec{Runner: &v1beta1.RunnerSpec{Resources: gpu(1)}}
			}), want: "a100-40gb"},
		{name: "the decoder asks for a GPU", x: sklearnWorld(),
			svc: sklearnService(func(s *v1beta1.InferenceService) {
				s.Spec.Decoder = &v1beta1.DecoderSpec{Runner: &v1beta1.RunnerSpec{Resources: gpu(1)}}
			}), want: "a100-40gb"},
		{name: "an accelerator configuration that adds GPUs asks for one",
			x: sklearnWorld(func(s *v1beta1.ServingRuntimeSpec, _ *metav1.ObjectMeta) {
				s.AcceleratorConfigurations = []v1beta1.AcceleratorConfiguration{{Selector: v1beta1.AcceleratorConfigSelector{AcceleratorClass: "h100-80gb"}, Resources: gpu(1)}}
			}),
			svc: sklearnService(), want: "a100-40gb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := tt.x.Select(tt.svc)
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.AcceleratorClassName())
			if tt.want == "" {
				assert.Nil(t, d.AcceleratorClass)
				assert.True(t, d.AcceleratorAvailable, "nothing to wait for")
				for _, l := range d.Explanation {
					assert.NotContains(t, l, "AcceleratorClass/", "no class was a candidate")
				}
			}
		})
	}
}
