// Package gang is the gang scheduling step of the serving groups
// controller (reconcile/servinggroups): the PodGroups of Volcano and of
// scheduler-plugins' coscheduling that hold a service's serving groups,
// the marks that put its pods in them, and the GangScheduling condition.
//
// It is a sub-package of that controller, not a controller of its own: it
// has no queue, no Run and no status write. Its PodGroup writes are ordered
// around the pod writes of the same sync step (lowered before the step's
// deletes, raised after its creates), and a PodGroup is computed from the
// pods that step leaves, so it can only be a step of the group sync. The
// controller calls it: New, Wire (Config: its coscheduling scheduler, the
// requeue and write-count hooks; returns the CRD informers' readiness) and
// Start with its informers; then per sync Plan, Plan.MarkFor on each pod
// it creates, Write(BeforePods), the step, Write(AfterPods), DeleteStale,
// and SetCondition into the status it writes. A nil *Gangs (no dynamic
// client) is gang scheduling off.
//
// # PodGroups per service
//
// Kthena's ModelServing gives each ServingGroup one Volcano PodGroup.
// berth's serving groups are per component, so the mapping is:
//
//   - A service without a decoder: one PodGroup per engine serving group,
//     named as the group, <isvc>-engine-<g>; minMember = 1 + workers.
//   - A prefill/decode service: one PodGroup <isvc>, the service's whole
//     "ServingGroup", with roles engine and decoder: minMember =
//     Σ_roles min(minRoleReplicas[role] (default: its replicas), replicas)
//     × (1 + workers); Volcano's minTaskMember <role>-<g> = 1 + workers for
//     g below that count; subGroupPolicy, one entry per role selecting
//     ome.io/inferenceservice and ome.io/component and grouped by
//     ome.io/group-index, only when the installed Volcano CRD's schema has
//     spec.subGroupPolicy.
//   - The router is never in a gang.
//
// # When it is on (plan.ChooseGang)
//
// It is on when the engine's (and decoder's) pods, composed as the pod
// webhook composes them (merge.ComposePod of the pinned decision, which
// the controller does for Plan: Input.Compose), use schedulerName volcano
// (Volcano) or Config.CoschedulingScheduler
// (--coscheduling-scheduler-name, default scheduler-plugins-scheduler), or
// when spec.gangPolicy is set (its scheduler, else the pods', else
// Volcano; pods without a schedulerName then get the backend's).
// minResources sums the same composed pods' container requests; queue is
// the service's annotation scheduling.volcano.sh/queue-name, else
// "default" (Volcano's CRD default).
//
// # Membership
//
// The skeletons the controller creates carry the membership (Plan.MarkFor,
// written by merge.MarkPod): annotations scheduling.k8s.io/group-name=
// <podgroup> and volcano.sh/task-spec=<component>-<g> (Volcano), or label
// scheduling.x-k8s.io/pod-group=<podgroup> (coscheduling). The pod webhook
// keeps them. Pods made before gang scheduling was on are not members and
// are never counted.
//
// # Writes around the step (Plan, Write, DeleteStale)
//
// A sync plans every component first, then Plan computes each PodGroup
// from the marked pods that will exist after the step (plan.GangFor: the
// formula, lowered to what exists) and orders the writes
// (plan.GangWrites): what asks less is written before the step's pod
// deletes, what asks more after its creates. So a rollout, scale-down or
// recovery (ServingGroupRecreate rebuilds a group whole; its PodGroup
// stays) never leaves a PodGroup asking for more members than exist, and
// minMember follows role scaling. A PodGroup is created before the pods
// of its group, written only when minMember, minTaskMember, minResources,
// queue or subGroupPolicy differ, recreated when someone deletes it (its
// informer queues the service), and deleted (UID precondition) when its
// group has no pod left or gang scheduling is off. A create refused as
// AlreadyExists is success (the cache lagged); an update refused as not
// found creates it. The writes after the step wait for a step that wrote
// every pod.
//
// # Upstream types
//
// PodGroups are built and read as their projects' Go types —
// volcano.sh/apis v1.14.0 (scheduling/v1beta1; the first release with
// subGroupPolicy) and sigs.k8s.io/scheduler-plugins v0.32.7
// (apis/scheduling/v1alpha1) — converted to and from unstructured objects
// for the dynamic client (runtime.DefaultUnstructuredConverter). An update
// starts from the PodGroup read and sets only the fields above, so fields
// of a person or the scheduler (priorityClassName, status) are kept; a
// field unknown to those types (a newer release's) would be dropped. Only
// a PodGroup the service controls (controller owner reference) is read,
// written or deleted.
//
// # CRDs and the condition
//
// The two CRDs are watched by name (a dynamic informer each, RBAC by
// resourceNames); the informer on a kind's PodGroups (those labelled
// ome.io/inferenceservice) starts when its CRD appears, and any change of
// a CRD requeues every service; the controller is ready once the step
// has seen both CRD watches' first list. Without the CRD nothing is created or
// marked and the service says so. Condition GangScheduling (only while
// gang scheduling is on or cannot be): True PodGroupsSynced (the
// PodGroups and their minMember); False Unschedulable (a Volcano
// PodGroup's Unschedulable condition, else the scheduler's message for a
// gang pod, with the PodGroups' phase); False PodGroupCRDMissing (naming
// the CRD); False SchedulerMismatch (the gang's pods name different
// schedulers). PodGroup writes count in
// berth_reconciler_api_writes_total{resource="podgroups"}.
package gang
