package pin_test

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/selection"
)

func ptr[T any](v T) *T { return &v }

// The pod webhook feeds the model as selection holds it (the effective
// spec and status.discovered), the reconciler as its cache holds it (the
// spec as written and the whole status): InputFor builds the same input
// from both, so the revisions cannot differ.
func TestInputForFeedsTheModelOneWay(t *testing.T) {
	spec := v1beta1.BaseModelSpec{
		ModelFormat: v1beta1.ModelFormat{Version: ptr("2")},
		Storage:     &v1beta1.StorageSpec{StorageURI: ptr("hf://org/model")},
	}
	status := v1beta1.ModelStatus{
		Discovered: &v1beta1.ModelMetadata{ModelFormat: &v1beta1.ModelFormat{Name: "safetensors"}, ModelArchitecture: ptr("LlamaForCausalLM"), ModelParameterSize: ptr("8B")},
		Conditions: []metav1.Condition{{Type: v1beta1.ConditionMetadataResolved, Status: metav1.ConditionTrue, Reason: "Read"}},
	}
	isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	p := pin.Pin{RuntimeKind: pin.KindClusterServingRuntime, RuntimeName: "rt", AcceleratorClass: "e", DecoderAcceleratorClass: "d"}
	rt := &v1beta1.ServingRuntimeSpec{}
	class := &v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: "d"}}

	reconciler := pin.InputFor(isvc, v1beta1.ComponentDecoder, p, pin.Objects{Runtime: rt, Class: class,
		Model: pin.ModelOf("ClusterBaseModel", "", "m", spec, status)})
	webhook := pin.InputFor(isvc, v1beta1.ComponentDecoder, p, pin.Objects{Runtime: rt, Class: class,
		Model: &pin.Model{Kind: "ClusterBaseModel", Name: "m", Spec: v1beta1.EffectiveModelSpec(spec, status), Discovered: status.Discovered}})
	if !reflect.DeepEqual(reconciler, webhook) {
		t.Fatalf("inputs differ:\nreconciler %+v\nwebhook    %+v", reconciler.Model, webhook.Model)
	}
	want := merge.NewModelMount("ClusterBaseModel", "", "m", spec, status)
	if !reflect.DeepEqual(webhook.Model, want) {
		t.Fatalf("model %+v, want %+v", webhook.Model, want)
	}
	if webhook.RuntimeKind != pin.KindClusterServingRuntime || webhook.RuntimeName != "rt" || webhook.Component != v1beta1.ComponentDecoder {
		t.Fatalf("runtime %s/%s component %s", webhook.RuntimeKind, webhook.RuntimeName, webhook.Component)
	}
}

func TestInputForWithoutAModel(t *testing.T) {
	isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	for _, m := range []*pin.Model{nil, {Kind: "", Name: "inline"}} {
		if in := pin.InputFor(isvc, v1beta1.ComponentEngine, pin.Pin{}, pin.Objects{Model: m}); in.Model != nil {
			t.Errorf("model %+v mounts %+v", m, in.Model)
		}
	}
}

func TestKindsAreSelections(t *testing.T) {
	if pin.KindServingRuntime != selection.KindServingRuntime || pin.KindClusterServingRuntime != selection.KindClusterServingRuntime {
		t.Fatal("pin's runtime kinds differ from selection's")
	}
}
