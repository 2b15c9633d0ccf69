// Package gpudiscovery reads what GPU feature discovery labels say about a
// node's accelerator and proposes one AcceleratorClass per distinct
// product. It is pure: no client-go, no I/O. The reconciler's discovery
// (reconcile/classsync) feeds it the nodes and classes it watches
// and writes what Plan returns.
//
// # Labels read (ParseNode)
//
// NVIDIA (GPU Feature Discovery): nvidia.com/gpu.product names the
// product; nvidia.com/gpu.memory (MiB per GPU), gpu.compute.major and
// gpu.compute.minor (compute capability), gpu.count, gpu.family and
// mig.capable ("true": feature "mig", resource divisible). The resource is
// nvidia.com/gpu.
//
// AMD (the ROCm device plugin's node labeller): amd.com/gpu.product, or
// amd.com/gpu.product-name; amd.com/gpu.vram ("192G": the labeller's G is
// GiB, as is a bare number; "64Gi", "65536M" are read as quantities);
// amd.com/gpu.family; amd.com/gpu.device-id (a PCI device ID). The
// resource is amd.com/gpu.
//
// Intel (the Intel GPU plugin's NFD rules): gpu.intel.com/product;
// gpu.intel.com/memory.max (bytes). The resource is gpu.intel.com/i915, or
// gpu.intel.com/xe when the node exposes that one.
//
// A value that cannot be read ("lots" in nvidia.com/gpu.memory, a compute
// capability that is not a number) is left out of the proposal and
// reported as a Problem with the label, the value and why, so the caller
// can say so in an Event. Nothing panics on any label value.
//
// # Proposals (Propose)
//
// Nodes with the same vendor and product make one proposal: name
// ClassName(vendor, product), discovery.nodeSelector {product label:
// product}, vendor, family, model (the product's name without the vendor),
// capabilities.memoryGB (the smallest memory any of its nodes reports, as
// an exact binary quantity: 81559Mi), computeCapability (the lowest),
// features (mig only when every node is MIG capable) and resources (the
// vendor's device-plugin resource, quantity 1).
//
// ClassName lowercases the product, turns every run of characters outside
// [a-z0-9] into one dash, trims dashes and prefixes the vendor when the
// product does not start with it: NVIDIA-H100-80GB-HBM3 is
// nvidia-h100-80gb-hbm3, MI250X (amd) is amd-mi250x. Names longer than 63
// characters keep 54 and end with a dash and 8 hex digits of the full
// name's FNV-1a hash, so they stay stable and distinct.
//
// # Plan
//
// Plan compares the proposals with the existing classes:
//   - a class without the ome.io/auto-discovered label is the admin's: never
//     written. It suppresses a proposal when its selector (discovery
//     .nodeSelector and spec.nodeSelector, with no nodeSelectorTerms) is the
//     proposal's, or when the nodes it matches are exactly the proposal's;
//   - a proposal not suppressed and without a class of its name is
//     created; a proposal whose name an admin class holds is skipped
//     (NameTaken);
//   - an auto-discovered class is updated when the fields discovery owns
//     (vendor, family, model, discovery.nodeSelector, memoryGB,
//     computeCapability, features, resources) differ from its proposal;
//     every other field (cost, performance, integration) is the admin's;
//   - an auto-discovered class with no proposal (its last node is gone) or
//     a suppressed proposal is Stale (reason NoNodes or Superseded); one
//     whose proposal is back is not. Discovery never deletes.
package gpudiscovery
