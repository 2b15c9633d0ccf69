// Command crd-docs is the last step of `make generate-crds`: it reads the
// CRDs controller-gen wrote with every field description into IN, keeps the
// descriptions of berth's own fields, drops those under the Kubernetes types
// berth inlines (internal/crddocs) and writes the CRDs to OUT.
//
//	go run ./hack/crd-docs IN OUT
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/berthdev/berth/api/policy/v1alpha1"
	"github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/crddocs"
)

const module = "github.com/berthdev/berth"

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: crd-docs IN OUT")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "crd-docs:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1beta1.AddToScheme, policyv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	typeOf := func(group, version, kind string) (reflect.Type, error) {
		obj, err := scheme.New(schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
		if err != nil {
			return nil, err
		}
		return reflect.TypeOf(obj).Elem(), nil
	}
	files, err := filepath.Glob(filepath.Join(in, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", in)
	}
	for _, f := range files {
		if err := pruneFile(f, filepath.Join(out, filepath.Base(f)), typeOf); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
	}
	return nil
}

func pruneFile(in, out string, typeOf crddocs.TypeOf) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return err
	}
	if err := crddocs.PruneCRD(crd, typeOf, module); err != nil {
		return err
	}
	y, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	// controller-gen's own layout: a document separator, then the CRD.
	return os.WriteFile(out, append([]byte("---\n"), bytes.TrimLeft(y, "\n")...), 0o644)
}
