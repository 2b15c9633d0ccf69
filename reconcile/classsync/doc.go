// Package classsync is the AcceleratorClass spec controller: discovery
// makes classes from the GPU feature discovery labels of nodes, and the
// Kueue sync keeps Kueue ResourceFlavors and classes in sync both ways.
// The two share the node and class watches and one queue. It has its own
// informers, queue and Run, and imports no other controller; the manager
// (reconcile/manager) starts it. The AcceleratorClass status controller
// (reconcile/accelerators) writes the classes' status and keeps the
// conditions this one writes.
//
// # Running
//
// --controllers names it accelerator-sync. It runs when
// --accelerator-discovery or --kueue-sync is on (Options.Discovery,
// Options.KueueSync; New fails with neither), only while leading: with
// --controllers empty the manager starts it exactly then, and a
// --controllers list that names it without either flag, or leaves it out
// with one of them, is refused. One worker syncs the queue's keys:
// "discovery" (a discovery pass over every node), "flavor/<name>" and
// "class/<name>" (the Kueue sync); a failed key is retried with the
// default controller backoff. The node watch, filtered by
// --accelerator-discovery-node-selector, and the class watch (the
// manager's shared factory) are its readiness; the flavors' cache is not.
//
// # AcceleratorClass discovery (discovery.go)
//
// Off unless --accelerator-discovery (Options.Discovery): it
// writes cluster objects, and a cluster whose admin wrote the classes
// needs none. It watches the nodes --accelerator-discovery-node-selector
// selects (a label selector, server-side; empty: all) and every
// AcceleratorClass, and after a burst of changes (1 s) makes one pass:
// package gpudiscovery reads the nodes' GPU feature discovery labels
// (NVIDIA GFD, the AMD node labeller, Intel's NFD rules), proposes one
// class per product and plans against the classes. Node heartbeats do not
// queue a pass; labels, taints, allocatable resource names do.
//
//   - Created classes are labelled ome.io/auto-discovered=true, named by
//     gpudiscovery.ClassName (NVIDIA-H100-80GB-HBM3: nvidia-h100-80gb-hbm3)
//     and say what the labels say: vendor, family, model, discovery
//     .nodeSelector on the product label, memoryGB, computeCapability,
//     features (mig), resources.
//   - A class without the label is never written. One whose selector is
//     the product's, or which matches exactly the product's nodes (by
//     selection.ClassNodeMatcher, the webhook's rule), suppresses the
//     discovered duplicate; one holding the product's name leaves the
//     product without a class (logged once).
//   - An auto-discovered class is updated (one Update) when the fields
//     discovery owns differ; cost, performance and integration are the
//     admin's. Remove the label to take a class over.
//   - Condition Stale True NoNodes when no selected node carries the
//     product, True Superseded when an admin class covers it, False
//     NodesPresent when nodes are back; written by server-side apply of
//     that one condition on the status subresource (field manager
//     berth-accelerator-discovery), only when it changes. Never a delete.
//   - A label value that cannot be read (nvidia.com/gpu.memory: "lots") is
//     left out and said once per node, label and value in a Warning Event
//     InvalidGPULabel on the node.
//
// # Kueue ResourceFlavor sync (kueue.go)
//
// Off unless --kueue-sync (Options.KueueSync); it needs
// Kueue's CRD and waits (logging once a minute) until ResourceFlavors can
// be listed. Discovery never waits for it: both run on one queue, and
// until the flavors' cache has synced the Kueue keys write nothing but
// the condition below. While waiting it asks the apiserver every 5 s
// whether the resource exists; when it does not, every class with
// spec.integration.kueueResourceFlavor gets condition KueueSynced=False
// reason ResourceFlavorCRDMissing (naming the CRD and the flavor) and a
// Warning Event of that reason; once the cache syncs, a class with that
// condition False gets True ResourceFlavorCRDInstalled. Server-side apply
// of that one condition (field manager berth-kueue-sync), only when it
// changes; a class that never saw the CRD missing has none. Flavors are
// read and written with the dynamic client (ResourceFlavorGVR,
// kueue.x-k8s.io/v1beta1, which Kueue v0.17 still serves next to v1beta2)
// through Kueue's own Go type (sigs.k8s.io/kueue/apis/kueue/v1beta1
// ResourceFlavor, the version go.mod pins), converted to and from the
// unstructured form with runtime.DefaultUnstructuredConverter; berth owns
// only spec.nodeLabels, spec.nodeTaints and spec.tolerations and keeps the
// others (topologyName). The e2e tests run the sync against Kueue's own
// CRDs and controller manager at that version. Each pair has one source,
// so edits never ping-pong:
//
//   - Flavor to class (OEP-0003, Story 3): a flavor named gpu-* or
//     annotated ome.io/accelerator-class=<class> makes the class (its own
//     name, or the annotation's) with spec.nodeSelector = nodeLabels,
//     annotation ome.io/kueue-resource-flavor=<flavor> and label
//     ome.io/synced-from=resourceflavor, which together name the source.
//     No owner reference: an AcceleratorClass is never owned by another
//     project's object, so deleting the flavor, or Kueue, leaves the class
//     and its status (a flavor of that name coming back takes it up
//     again); an owner reference to a flavor left by an earlier berth is
//     dropped on the next update. When the nodes those labels select carry
//     one GPU product, vendor, family, model, memory, compute capability,
//     features and resources come from their labels as in discovery. A
//     flavor edit is one Update of the class; an edit of those fields on
//     the class is undone. A class of that name berth did not make from
//     this flavor (label and annotation) is left alone.
//   - Class to flavor: a class with spec.integration.kueueResourceFlavor
//     gets that flavor with nodeLabels = discovery.nodeSelector and
//     spec.nodeSelector, nodeTaints = the taints every node of the class
//     carries, and one toleration (operator Equal) per such taint; label
//     ome.io/synced-from=acceleratorclass, annotation
//     ome.io/accelerator-class and an owner reference to the class. A
//     class edit is one Update of the flavor; a hand edit of the flavor's
//     fields is undone. A class with nodeSelectorTerms, or no selector,
//     cannot be said as nodeLabels: a Warning Event ResourceFlavorNotSynced
//     says so. A flavor of that name berth did not make from this class is
//     left alone (same Event). Flavors made from a class never make a
//     class.
//
// Writes happen only on a difference of the fields berth owns.
package classsync
