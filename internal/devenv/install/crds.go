package install

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs applies every CustomResourceDefinition of objs (say
// ReadObjectsFS(deploy.FS, "crds", "deploy")) and waits until
// each accepted one is Established, so objects of those kinds can be applied
// next. It returns the accepted CRD names, sorted, and an error listing every
// CRD the apiserver rejected (each is a separate API bug, and one of them
// should not hide the others or the kinds that do work).
func (a *Applier) InstallCRDs(ctx context.Context, objs []Object, timeout time.Duration) ([]string, error) {
	var names []string
	var errs []error
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if _, err := a.Apply(ctx, o); err != nil {
			errs = append(errs, err)
			continue
		}
		names = append(names, o.GetName())
	}
	if len(names) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition among %d objects; run `make generate`", len(objs))
	}
	slices.Sort(names)
	if err := a.WaitEstablished(ctx, names, timeout); err != nil {
		errs = append(errs, err)
	}
	a.mapper.Reset() // the new kinds are served now
	return names, errors.Join(errs...)
}

// WaitEstablished waits until every named CRD has Established=True. On
// timeout it names the ones that are not and what their conditions say
// (NamesAccepted=False explains a clash).
func (a *Applier) WaitEstablished(ctx context.Context, names []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var pending []string
		for _, n := range names {
			crd, err := a.Dynamic.Resource(crdResource).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				pending = append(pending, fmt.Sprintf("%s (%v)", n, err))
				continue
			}
			if ok, why := established(crd); !ok {
				pending = append(pending, fmt.Sprintf("%s (%s)", n, why))
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRDs not Established after %s: %s", timeout, strings.Join(pending, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// established reads status.conditions of an unstructured CRD.
func established(crd *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	var seen []string
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		if typ == "Established" && status == "True" {
			return true, ""
		}
		msg, _ := m["message"].(string)
		seen = append(seen, fmt.Sprintf("%s=%s %s", typ, status, msg))
	}
	if len(seen) == 0 {
		return false, "no conditions yet"
	}
	return false, strings.Join(seen, ", ")
}
