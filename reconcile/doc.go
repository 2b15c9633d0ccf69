// Package reconcile is berth's slim controller: it turns pinned
// InferenceServices into running serving groups and writes their status.
// It never decides placement. The mutating webhook pinned the runtime and
// AcceleratorClass at admission, and the pod webhook completes every pod
// the reconciler creates; the reconciler only decides how many groups
// exist, which to create, roll, recover or delete next, and says so.
//
// The pure half lives in reconcile/plan (no client-go): what should exist
// and the next step, as a function of (component spec, observed pods,
// clock, backoff memory). This package is the thin client-go loop around
// it. Glossary: "seed 003" is Kthena's ModelServing (serving groups,
// partitioned rolling updates, recovery policies); "LWS" is
// LeaderWorkerSet, whose group env (LWS_LEADER_ADDRESS, LWS_GROUP_SIZE,
// LWS_WORKER_INDEX) engines' multi-node launchers read.
//
// # What a service gets
//
//  1. Per component (engine, decoder, router; merge.Topology decides which
//     exist and their shape), serving groups numbered from 0. A group is
//     one pod <isvc>-<component>-<g>, or a leader <isvc>-<component>-<g>-0
//     and workers <isvc>-<component>-<g>-<w>. Pods are skeletons
//     (merge.SkeletonPod): identity labels, group env, an owner reference;
//     the webhook adds everything else and stamps ome.io/revision.
//  2. A headless Service <isvc>-<component>-<g> per multi-node group; pods
//     set hostname and subdomain, so the leader is
//     <isvc>-<component>-<g>-0.<isvc>-<component>-<g>.<namespace>.
//  3. A ClusterIP Service <isvc> on port 80 in front of the router, else
//     the engine (its leaders); its URL is status.url.
//  4. An autoscaling/v2 HorizontalPodAutoscaler <isvc> when the engine's
//     scaleMetric is cpu or memory, scaling spec.engine.replicas through
//     the scale subresource within minReplicas and maxReplicas.
//
// Everything carries the label ome.io/inferenceservice and a controller
// owner reference, so deleting the service garbage-collects it, and the
// informers watch only labelled objects.
//
// # How a sync goes (Controller.sync)
//
//  1. Load the service; forget a deleted one.
//  2. Wait while creations or deletions already sent are not yet observed
//     (expectations, as the ReplicaSet controller): a stale cache never
//     creates a pod twice or rolls one group too many.
//  3. Read the pinned decision back from the cache. If the pinned runtime
//     or class is gone, nothing is touched: running pods stay, and the
//     service is Resolved=False, Degraded=True with the reason. A disabled
//     pinned runtime keeps serving and is Degraded.
//  4. Per component: merge.Revision of the pinned inputs (the same inputs
//     the pod webhook uses), the planner's next step, applied: deletes with
//     UID preconditions, creates with deterministic names (AlreadyExists is
//     success), events.
//  5. Pods of components the service no longer has are deleted.
//  6. Services and the HPA are created or updated only when a field berth
//     owns differs.
//  7. Status is written only when it changed; a condition that changes its
//     reason becomes one event.
//
// # Runtimes that tie after the fact
//
// The validating webhook denies a runtime whose priority ties with
// another's, against a fresh read. Two runtimes created at the same moment
// can still both pass. The reconciler re-checks every runtime whenever one
// changes, with the same rule (selection.Index.PriorityConflicts: the
// reconciler imports selection for this check only), and sets the
// condition PriorityConflict on both, naming the other; the gauge
// berth_runtime_priority_conflicts counts them. Selection's tie-break
// stays deterministic meanwhile (newest, then name).
//
// A steady state therefore costs no API writes. Retries use the
// workqueue's rate limiter; timers the planner asks for (backoff, grace
// periods, a terminating pod in the way) requeue the service.
//
// # Correctness under restarts and HA
//
// State is derived from the informer cache on every sync; the only memory
// is the backoff of failed groups, which also rides on recreated pods as
// ome.io/recreate-count so a restarted reconciler picks it up. One replica
// leads through a Lease (RunManager); others stand by.
package reconcile
