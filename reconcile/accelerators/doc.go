// Package accelerators is the AcceleratorClass status controller: it
// writes each class's status from the nodes and pods it matches. It has
// its own informers, queue and Run, and imports no other controller; the
// manager (reconcile/manager) starts it. Discovery and the Kueue sync
// (reconcile/classsync) write classes' spec.
//
// # Rules
//
// On unless --accelerator-status=false (--controllers names it
// accelerator-status); the manager runs it next to the other controllers,
// only while leading. It watches AcceleratorClasses, nodes and the pods
// that are bound and not finished (a server-side field selector), both
// stripped by an informer transform to what counting reads (a node's
// labels, accelerator allocatable, Ready condition and cordon; a pod's
// node, phase and accelerator requests), and feeds a selection.Index as
// the webhook feeds its own: the counts are selection.Index
// .ClassAvailability, the very numbers a decision reads, so the status and
// selection never disagree. Per class:
//
//   - status.nodes: the Ready, schedulable nodes discovery matches (the
//     webhook's rule: the nodeSelector pattern, discovery.nodeSelector AND
//     spec.nodeSelector, or any nodeSelectorTerm), sorted;
//     availableNodes: how many;
//   - totalAccelerators: their allocatable of selection.CountedResource
//     (the first spec.resources entry, else the vendor's resource:
//     nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915);
//     availableAccelerators: that minus the requests of the bound,
//     unfinished pods on them (per node, never below zero);
//   - condition Ready: True NodesReady, else False NoReadyNodes (matches
//     nodes, none Ready and schedulable) or NoMatchingNodes;
//   - condition SelectorTooBroad: True OtherModel when a matching node's
//     product label (nvidia.com/gpu.product, amd.com/gpu.product,
//     gpu.intel.com/product) is not spec.model (the model must be a run of
//     whole words of the product: h100 in NVIDIA-H100-80GB-HBM3, not a10 in
//     NVIDIA-A100-PCIE-40GB), True MixedProducts when a class without
//     spec.model matches several products, else False OneProduct or
//     NoProductLabels. Messages name the products with their node counts;
//   - lastUpdated: when any of these last changed.
//
// Other conditions on the class (discovery's Stale) are kept. Writes are
// coalesced: a class is written at most once per
// --accelerator-status-interval (default 10s). A change within the
// interval is queued for its end, when the then current counts are
// written in one Update of the status subresource; a sync that finds
// nothing changed writes nothing and lastUpdated stays. Node heartbeats
// and pods without accelerator requests queue nothing.
// berth_acceleratorclass_status_writes_total counts the writes;
// cmd/berth-accelerator-load measures them under pod churn.
package accelerators
