package main

import "testing"

// The webhook composes a pod from a cached plan keyed by its inputs'
// versions (UID and resourceVersion), and composes from scratch only what
// has no version, which nothing from the API server lacks. The synthetic
// world must carry them, or the load measures a path no cluster takes.
func TestWorldLooksStored(t *testing.T) {
	w, err := buildWorld(100, 8, 16)
	if err != nil {
		t.Fatal(err)
	}
	if w.isvc.UID == "" || w.isvc.ResourceVersion == "" {
		t.Errorf("service %s has UID %q, resourceVersion %q; want both set", w.isvc.Name, w.isvc.UID, w.isvc.ResourceVersion)
	}
	m, err := w.index.Model(w.isvc)
	if err != nil {
		t.Fatal(err)
	}
	if m.ResourceVersion == "" {
		t.Errorf("model %s has no resourceVersion", m.Name)
	}
}
