// Package install puts berth into a cluster: the CRDs of deploy/crds
// (waiting until they are Established), the runtimes, AcceleratorClasses
// and samples of deploy/, and the webhook configurations pointing at a
// process on 127.0.0.1.
//
// Objects go through server-side apply with the dynamic client: the
// InferenceService CRD is ~770 KB, and client-side `kubectl apply` would
// store it again in the last-applied annotation, over the 256 KB limit.
package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager owns what the harness applies.
const FieldManager = "berth-e2e"

// Object is one manifest and the file it came from.
type Object struct {
	Source string
	*unstructured.Unstructured
}

// String names the object as a person would: "ClusterServingRuntime/srt-vllm (deploy/runtimes/vllm.yaml)".
func (o Object) String() string {
	name := o.GetName()
	if ns := o.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s/%s (%s)", o.GetKind(), name, o.Source)
}

// ReadObjects reads every object of a YAML file, or of every *.yaml/*.yml
// file directly in a folder (sorted; kustomization.yaml skipped).
func ReadObjects(path string) ([]Object, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(abs)
	return readObjects(os.DirFS(dir), filepath.Base(abs), func(name string) string { return filepath.Join(dir, name) })
}

// ReadObjectsFS is ReadObjects on a file system (deploy.FS, compiled into
// the binary): name is a file or folder of fsys, and each object's Source
// is prefix joined with its file's name (say "deploy" for deploy.FS, so
// errors read "deploy/crds/...").
func ReadObjectsFS(fsys fs.FS, name, prefix string) ([]Object, error) {
	return readObjects(fsys, name, func(n string) string { return path.Join(prefix, n) })
}

func readObjects(fsys fs.FS, name string, source func(string) string) ([]Object, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("read manifests %s: %w", source(name), err)
	}
	files := []string{name}
	if st.IsDir() {
		entries, err := fs.ReadDir(fsys, name)
		if err != nil {
			return nil, err
		}
		files = files[:0]
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || n == "kustomization.yaml" || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
				continue
			}
			files = append(files, path.Join(name, n))
		}
		slices.Sort(files)
	}
	var objs []Object
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("read manifests %s: %w", source(f), err)
		}
		got, err := DecodeObjects(data, source(f))
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// DecodeObjects splits a multi-document YAML (or JSON) stream into objects.
// Empty documents are skipped; a document without apiVersion or kind is an error.
func DecodeObjects(data []byte, source string) ([]Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 64*1024)
	var objs []Object
	for i := 0; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: document %d: %w", source, i+1, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("%s: document %d: set apiVersion and kind", source, i+1)
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("%s: document %d (%s): set metadata.name", source, i+1, u.GetKind())
		}
		objs = append(objs, Object{Source: source, Unstructured: u})
	}
}

// Applier server-side-applies objects of any kind, CRD-defined ones included.
type Applier struct {
	Dynamic dynamic.Interface
	// DefaultNamespace for namespaced objects that name none.
	DefaultNamespace string
	mapper           *restmapper.DeferredDiscoveryRESTMapper
}

// NewApplier builds an Applier for the cluster of cfg.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{
		Dynamic:          dyn,
		DefaultNamespace: "default",
		mapper:           restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
	}, nil
}

// Resource finds the REST resource of obj, refreshing discovery once when
// the kind is unknown (a CRD that was just installed).
func (a *Applier) Resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("the cluster does not serve %s: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = a.DefaultNamespace
		}
		return a.Dynamic.Resource(m.Resource).Namespace(ns), nil
	}
	return a.Dynamic.Resource(m.Resource), nil
}

// Apply server-side-applies one object and returns what the server stored.
// A rejection names the object and its file and carries the server's
// message (schema or CEL) unchanged.
func (a *Applier) Apply(ctx context.Context, obj Object) (*unstructured.Unstructured, error) {
	res, err := a.Resource(obj.Unstructured)
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", obj, err)
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", obj, err)
	}
	force := true
	out, err := res.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", obj, err)
	}
	return out, nil
}

// ApplyAll applies objs in order and stops at the first rejection.
func (a *Applier) ApplyAll(ctx context.Context, objs []Object) error {
	for _, o := range objs {
		if _, err := a.Apply(ctx, o); err != nil {
			return err
		}
	}
	return nil
}
