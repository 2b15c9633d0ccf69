package strip

import (
	"k8s.io/apimachinery/pkg/api/meta"
)

// ManagedFields is an informer transform that drops metadata.managedFields
// and keeps everything else. No controller of berth-reconciler reads
// managedFields (the server-side applies of reconcile/classsync send
// bodies built from scratch), and an update that sends no managedFields
// leaves the stored ones as they are. On a pod
// the webhook composed they are the largest part of the metadata (one
// entry per writer: the reconciler's create, the kubelet's or kwok's
// status). Objects without metadata (tombstones) pass through.
func ManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
