package handlers

import (
	"fmt"
	"path"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/pin"
)

// nodeCacheWarnings warns about a pinned service whose model is served
// from OME's node cache (merge's DeliveryNodeCache: a remote URI, a
// storage.path and downloadPolicy not AlwaysDownload) when no node in the
// webhook's node cache carries the model's ready label
// (merge.ModelReadyLabel = merge.ModelReadyValue): without OME's model
// agent, which fills the cache and labels the nodes, the engine and
// decoder pods would stay Pending. It is a warning, never a denial: the
// agent may label nodes later. A service left unpinned (waiting) gets
// none; the check is made on every admission that decides or holds a pin.
func (h *InferenceServices) nodeCacheWarnings(isvc *v1beta1.InferenceService) []string {
	if !pin.Pinned(isvc) {
		return nil
	}
	m, err := h.Index.Model(isvc)
	if err != nil {
		return nil
	}
	mm := modelMount(m)
	if mm == nil {
		return nil
	}
	d, err := mm.Delivery()
	if err != nil || d.How != merge.DeliveryNodeCache {
		return nil // a bad storage spec is storageErrors' to deny
	}
	key, err := merge.ModelReadyLabel(mm.Kind, mm.Namespace, mm.Name)
	if err != nil || h.Index.NodeLabelled(key, merge.ModelReadyValue) {
		return nil
	}
	return []string{fmt.Sprintf("%s is served from the node cache at %s on nodes labelled %s=%s, and no node is; "+
		"run OME's model agent to fill the cache, or set spec.storage.downloadPolicy: %s to download it into each pod",
		m.Ref(), path.Clean(*mm.Spec.Storage.Path), key, merge.ModelReadyValue, v1beta1.AlwaysDownload)}
}
