package handlers

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"

	listers "github.com/berthdev/berth/api/client/listers/api/v1beta1"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/testing/wrappers"
	"github.com/berthdev/berth/selection"
)

// world is a small cluster as the webhook's cache would see it.
type world struct {
	index    *selection.Index
	services toolscache.Indexer
	profiles toolscache.Indexer
	// downloader is the --model-downloader-image the handlers run with;
	// secrets and claims answer existence checks (nil: not checked).
	downloader      string
	secrets, claims Lookup
}

func newWorld() *world {
	return &world{
		index:    selection.NewIndex(),
		services: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}),
		profiles: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{}),
	}
}

func (w *world) pods() *Pods {
	return &Pods{Index: w.index, Services: listers.NewInferenceServiceLister(w.services), Profiles: listers.NewClusterEngineRuntimeProfileLister(w.profiles)}
}

func (w *world) isvcs() *InferenceServices {
	return &InferenceServices{Index: w.index, Profiles: listers.NewClusterEngineRuntimeProfileLister(w.profiles),
		DownloaderImage: w.downloader, Secrets: w.secrets, Claims: w.claims}
}

func (w *world) runtimes() *Runtimes {
	return &Runtimes{Index: w.index, Profiles: listers.NewClusterEngineRuntimeProfileLister(w.profiles)}
}

// load reads a YAML file of the repo (relative to the repo root).
func load(t *testing.T, rel string, out any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(b, out), rel)
}

func (w *world) addCSR(t *testing.T, rel string, created time.Time) *v1beta1.ClusterServingRuntime {
	var csr v1beta1.ClusterServingRuntime
	load(t, rel, &csr)
	csr.CreationTimestamp = metav1.NewTime(created)
	w.index.UpsertClusterServingRuntime(&csr)
	return &csr
}

func (w *world) addClass(t *testing.T, rel string) {
	var ac v1beta1.AcceleratorClass
	load(t, rel, &ac)
	w.index.UpsertAcceleratorClass(&ac)
}

func (w *world) addNode(name string, labels map[string]string, gpus map[corev1.ResourceName]int64) {
	w.index.UpsertNode(selection.NodeInfo{Name: name, Labels: labels, Allocatable: gpus, Ready: true})
}

func mistralModel() *v1beta1.BaseModel {
	return wrappers.MakeBaseModel("mistral-7b-instruct", "mistral-7b-instruct").Format("safetensors", "1.0.0").
		Framework("transformers", "4.36.2").Architecture("MistralForCausalLM").Size("7B").Obj()
}

// request wraps an object in an AdmissionRequest.
func request(t *testing.T, op admissionv1.Operation, kind string, obj, old runtime.Object, namespace, name string) *admissionv1.AdmissionRequest {
	t.Helper()
	req := &admissionv1.AdmissionRequest{UID: "uid-1", Operation: op, Kind: metav1.GroupVersionKind{Kind: kind}, Namespace: namespace, Name: name}
	if obj != nil {
		raw, err := json.Marshal(obj)
		require.NoError(t, err)
		req.Object.Raw = raw
	}
	if old != nil {
		raw, err := json.Marshal(old)
		require.NoError(t, err)
		req.OldObject.Raw = raw
	}
	return req
}

// applyPatch applies a response's patch to raw and returns the result.
func applyPatch(t *testing.T, raw []byte, resp *admissionv1.AdmissionResponse) []byte {
	t.Helper()
	require.True(t, resp.Allowed, "denied: %+v", resp.Result)
	if len(resp.Patch) == 0 {
		return raw
	}
	p, err := jsonpatch.DecodePatch(resp.Patch)
	require.NoError(t, err)
	out, err := p.Apply(raw)
	require.NoError(t, err)
	return out
}

var ctx = context.Background()
