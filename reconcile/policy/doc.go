// Package policy is the ServingPolicy controller: the reconciler's half of
// ServingPolicy. The webhook enforces policies at admission (package
// policy at the top level, imported here as policyset); this controller
// keeps what admission cannot: a hard backstop for namespace budgets, and
// the audit of what exists. The manager (reconcile/manager) runs it as
// --controllers entry "policy" (left out, or --serving-policies=false:
// not run); it never imports the serving groups controller (package
// reconcile) nor that one it: the manager wires Options.Services (queue a
// service) one way and reconcile.Verdicts (Compliance, QuotaPolicy) the
// other.
//
// # ResourceQuota backstop (quota.go)
//
// For every ServingPolicy with rules.maxAcceleratorsPerNamespace and
// every namespace its namespaceSelector selects (never kube-system, never
// the reconciler's own namespace, --namespace; not one that is
// terminating), a ResourceQuota berth-policy-<policy> (a hash past 253
// characters) with hard requests.<resource> = the budget for
// nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915 and every resource an
// AcceleratorClass's spec.resources names. It is labelled
// app.kubernetes.io/managed-by=berth-reconciler and
// policy.berth.dev/servingpolicy=<policy>, and its controller owner is the
// ServingPolicy (garbage collection removes it with the policy). It is
// created when missing, updated only when its hard limits, labels or owner
// differ, and deleted (UID precondition) when the policy no longer selects
// the namespace, loses its budget or is deleted. The quota covers every
// pod of the namespace, as admission's namespace count covers every pinned
// service of it (a serviceSelector does not narrow a namespace budget).
// Like admission it counts each resource on its own: a namespace may use
// the budget of each vendor's resource.
//
// The window. Admission checks a new service against the services pinned
// in the namespace that the webhook's cache holds; two creates admitted at
// the same moment both see the old sum and can both pass. The quota closes
// it where it matters: the apiserver admits pods against the quota
// atomically, so the pods of the services past the budget are refused
// (403 "exceeded quota: berth-policy-<policy>, requested: ..., used: ...,
// limited: ..."), and Running pods never request more than the budget.
// The first seconds after a quota is created the apiserver refuses pods
// with "status unknown for quota" until the controller-manager computes its
// usage; that is handled the same way. A service whose pods a quota
// refuses is the serving groups controller's: condition QuotaExceeded and
// its retry backoff are in package reconcile/servinggroups' rules ("ServingPolicy: the
// service's side"); QuotaPolicy names the policy whose budget a quota
// keeps, for that condition's message.
//
// # Policy status (controller.go, evaluate.go, resolve.go, status.go)
//
// A workqueue keyed by policy name; a change of a service (spec, labels,
// annotations, or its QuotaExceeded condition), namespace labels, runtime,
// class or profile queues the policies it concerns after 500ms, so a burst
// costs one evaluation, and the informers' resync queues them all again; a
// change of a berth quota other than its usage, or its deletion, queues its
// policy. One evaluation reads every service of the namespaces the policy
// selects: the pinned decision read back from the caches (pin.Read and
// what the pin names, resolve.go) exactly where the serving groups
// controller reads it back, composed with merge.ComposeService, and
// checked with policy.Set.CheckService, the webhook's selection and
// wording, with the policy compiled alone (a policy's rules never depend
// on another's). Unpinned or unresolvable services (the pinned runtime,
// class or named model gone, a malformed pin) are neither checked nor
// counted; a disabled pinned runtime still counts. NamespaceInUse is the
// accelerators (policy.Accelerators) of the services before it in the
// namespace: those a quota refuses last, then by creation time, then
// name, so the services past a budget are its violations (after a burst,
// the ones the quota refused). The status (observedGeneration,
// violations, violatingServices: the first 20 by namespace and name with
// the first violation, and Ready: True InForce, False InvalidSelector or
// QuotaSyncFailed) is written only when it changed.
//
// # Service condition PolicyCompliant (controller.go: Compliance)
//
// On every service at least one policy selects: True Compliant naming the
// policies, False ViolatesServingPolicy naming the violated ones and
// quoting the first violation. A service no policy selects has none
// (deleting the last policy removes it). This controller keeps the
// verdicts in memory and queues (Services.Enqueue) a service whose verdict
// changed; the serving groups controller's own sync writes the condition
// (in its one status write path). Until every policy was evaluated once
// after a start, Compliance is not known and the condition is left as it
// was; then services whose condition differs are queued once. The
// condition therefore needs both controllers in one process: without this
// one the serving groups controller writes no PolicyCompliant (it removes
// a stale one), and without that one the verdicts reach no service, while
// quotas and policy status are kept.
package policy
