// Package servinggroups is berth's serving groups controller: it turns
// pinned InferenceServices into running serving groups and writes their
// status. The manager (reconcile/manager) runs it next to the other
// controllers: reconcile/models (models' metadata),
// reconcile/accelerators (AcceleratorClass status), reconcile/classsync
// (AcceleratorClass discovery and the Kueue sync), reconcile/policy
// (ServingPolicy) and reconcile/adapters (LoRA adapters).
// It never decides placement. The mutating webhook pinned the runtime and
// AcceleratorClass at admission, and the pod webhook completes every pod
// the reconciler creates; the reconciler only decides how many groups
// exist, which to create, roll, recover or delete next, and says so.
//
// The pure half lives in reconcile/plan (no client-go): what should exist
// and the next step, as a function of (component spec, observed pods,
// clock, backoff memory). This package is the thin client-go loop around
// it. The serving groups follow Kthena's ModelServing (docs/glossary.md:
// serving groups, partitioned rolling updates, recovery policies); "LWS" is
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
//  5. With a router: a ServiceAccount, a Role and a RoleBinding, all
//     <isvc>-router (routerrbac.go; below).
//
// Everything carries the label ome.io/inferenceservice and a controller
// owner reference, so deleting the service garbage-collects it, and the
// informers watch only labelled objects.
//
// # The router's account (routerrbac.go)
//
// A router that discovers its workers through the Kubernetes API
// (sglang-router's --service-discovery, berth-test-engine's router) lists
// and watches pods; under the namespace's default ServiceAccount, which
// may not, it finds no workers on a real cluster. The rule is simple on
// purpose: every service with a router component gets the account, whether
// or not its args ask for discovery. Detecting --service-discovery would
// miss routers whose flags hide in a shell string (OME's multi-node PD
// runtime runs `sh -c "... --service-discovery ..."`), a config file or
// env, and a wrong guess is a router that silently serves nothing; an
// unused Role that only reads pods in the service's own namespace costs
// nothing. (OME's controller does the same for every router.)
//
//   - ServiceAccount <isvc>-router; Role <isvc>-router with one rule, pods
//     get, list and watch in the service's namespace, and nothing more;
//     RoleBinding <isvc>-router of the one to the other. Labels
//     ome.io/inferenceservice, ome.io/component=router and
//     app.kubernetes.io/managed-by=berth-reconciler; a controller owner
//     reference to the service, so the garbage collector deletes them with
//     it. They are written before the pods (a real cluster's
//     ServiceAccount admission refuses a pod naming a missing account),
//     then only when berth's fields differ: labels, the Role's rules (a
//     widened Role is narrowed back), the binding's subjects; a binding
//     whose roleRef was edited is deleted and recreated (roleRef is
//     immutable). A service that loses its router keeps them until it is
//     deleted.
//   - The reconciler may create that Role only because it holds pods get,
//     list and watch itself (RBAC's escalation rule); its ClusterRole
//     needs no escalate or bind verb.
//   - An object of that name the service does not control (no owner, or
//     another controller) is never adopted or changed: a user who may
//     create services must not be able to run a router under an account
//     someone else made. The service is then Degraded=True reason
//     RouterRBACConflict, naming the object and the fix, and its router
//     pods run under the namespace's default account. Such a service looks
//     again every 30s (the other object lacks berth's label, so no
//     informer sees it go); once it is gone berth makes its own and the
//     router is rolled onto it (below).
//   - The reconciler sets serviceAccountName on the router's skeleton
//     pods, not merge.SkeletonPod: the revision is unchanged for every
//     component, so upgrading berth rolls nothing. A runtime or service
//     that names its own serviceAccountName wins (the pod webhook lays it
//     over the skeleton). serviceAccountName is immutable, so a router pod
//     created before its account existed (by an earlier berth, or during a
//     conflict since resolved; one of the account's own second counts,
//     timestamps having whole seconds) and not running under it counts as outdated
//     for the planner (markRouterAccount): the router alone is rolled, with
//     partition and maxUnavailable, and comes back under the account. Its
//     revision is unchanged (status says so while it rolls; the event
//     names the pod's revision with the suffix +no-router-serviceaccount).
//     Pods created after the account are never marked, whatever account
//     they run under, so a webhook that rewrites it cannot cause an
//     endless roll; nor are any when the runtime or service names its own
//     account.
//
// # Labels for OME's runtimes
//
// OME's PD runtimes select workers with component=engine|decoder (its
// multi-node ones also leaderworkerset.sigs.k8s.io/worker-index=0) next to
// ome.io/inferenceservice. Every pod carries merge.OMECompatLabels next to
// berth's own: component=<component>, and on multi-node groups the
// LeaderWorkerSet worker index (never the LeaderWorkerSet set name, so
// LeaderWorkerSet's webhook and controller ignore the pods). They are set
// outside merge.SkeletonPod, so no revision changes, and a runtime or
// service label cannot override them. Pods made before berth set them get
// them by one merge patch of metadata.labels each (UID in the patch as a
// precondition; the pod webhook sees only CREATE): no pod is recreated.
// berth's selectors (informers, Services, PodGroups) and the pod webhook's
// objectSelector use only ome.io/* labels and are unaffected.
//
// # How a sync goes (Controller.sync)
//
//  1. Load the service; forget a deleted one.
//  2. Wait while creations or deletions already sent are not yet observed
//     (expectations, as the ReplicaSet controller): a stale cache never
//     creates a pod twice or rolls one group too many.
//  3. Read the pinned decision back from the cache (pin.Read, then the
//     runtime, classes and model it names). If the pinned runtime
//     or class is gone, nothing is touched: running pods stay, and the
//     service is Resolved=False, Degraded=True with the reason. A disabled
//     pinned runtime keeps serving and is Degraded.
//  4. Per component: merge.Revision of the pinned inputs (pin.InputFor,
//     as the pod webhook builds them), its record (revisions.go, below),
//     the planner's next step, applied: deletes with UID preconditions, creates
//     with deterministic names, events. A labelled pod at one of those
//     names that the service does not control (an orphan of kubectl delete
//     --cascade=orphan, someone else's) is given to the planner as
//     Foreign: never adopted, counted, deleted or created over. A create
//     refused as AlreadyExists is success only when a GET shows the pod is
//     the service's; else the pod is remembered as Foreign and looked at
//     again (one GET) every 30s until it is gone. Every component's step
//     is applied even when a write of another failed.
//  5. Pods of components the service no longer has are deleted; running
//     pods missing OME's selector labels get them (no roll).
//  6. Services and the HPA are created or updated only when a field berth
//     owns differs. (The router's account is ensured before step 4.)
//  7. Status is written only when it changed; a condition that changes its
//     reason becomes one event. What the sync met that a person must fix
//     comes first in it (problems.go): Degraded=True, and Ready (when
//     False) with the same reason, NameConflict for a pod, Service or HPA
//     of a name the service uses that it does not control (listed by
//     kind, name and controller; the service looks again every 30s),
//     FailedCreate or FailedUpdate for a write the apiserver refused with
//     a 4xx other than not found, conflict, already exists and throttling,
//     quoting it (the sync still fails and is retried with the queue's
//     backoff; a ResourceQuota's refusal is QuotaExceeded instead, with
//     a FailedCreate event per attempt on its own backoff, and a service
//     without a status yet gets its counts and conditions at once). No
//     event per attempt otherwise: one per change of reason.
//  8. The progress deadline (the planner's rule 9): the progress memory
//     is kept per service and component like the backoff; a memory lost
//     with a restart is seeded from the service's Progressing condition,
//     so a component it said was stalled stays so until it progresses.
//     The service is requeued for the moment the deadline would pass.
//
// # Runtimes that tie after the fact
//
// The validating webhook denies a runtime whose priority ties with
// another's, against a fresh read. Two runtimes created at the same moment
// can still both pass. The reconciler re-checks every runtime whenever one
// changes, with the same rule (selection.Index.PriorityConflicts; the
// reconciler imports selection for this check, AcceleratorClass status
// and discovery's node rule, never to decide placement), and sets the
// condition PriorityConflict on both, naming the other; the gauge
// berth_runtime_priority_conflicts counts them. Selection's tie-break
// stays deterministic meanwhile (newest, then name).
//
// A steady state therefore costs no API writes. Retries use the
// workqueue's rate limiter; timers the planner asks for (backoff, grace
// periods, a terminating pod in the way) requeue the service.
//
// # Model metadata (reconcile/models)
//
// The model metadata controller, which reads models' metadata from their
// files into BaseModel and ClusterBaseModel status, is package
// reconcile/models; its rules are there. The serving side below reads
// that status (modelwait.go) and never writes it.
//
// # Services waiting for their model (modelwait.go)
//
// The webhook admits a service whose model awaits metadata unpinned. While
// the model is not resolved, the service is Resolved=False and Ready=False
// reason ModelMetadataPending, quoting the model's MetadataResolved
// message; Degraded stays False (waiting is expected). Once the model is
// resolved (declared, or True at its generation) the reconciler nudges the
// service: it patches the annotation ome.io/model-metadata-revision to
// plan.ModelMetadataRevision (a short hash of the model's effective spec),
// and the webhook decides on that UPDATE. The decision stays the
// webhook's. The webhook decides from its own cache, which can lag the
// reconciler's (it waits for it briefly); if it still admitted the update
// unpinned, the annotations already equal what the reconciler would write
// and renudge asks again: 2s, then 4s later, with the attempt in the value
// ("<revision>#2"; the webhook ignores values), three nudges in all. After
// that the service is NotPinned as any other, until its model, a runtime
// or the service changes. When the webhook refuses the nudge's update (it
// cannot resolve the service: no runtime serves the model, ...), the
// service is Resolved=False, Degraded=True reason ResolveRefused with the
// webhook's answer, and the next change of the service, its model or a
// runtime nudges again. Any change of a model queues the services that
// name it (an index on spec.model.name).
//
// A model is waited for by the webhook's rule, v1beta1.ModelAwaitsMetadata:
// one berth cannot read (a node-local path, gs://, oci://, no storage) is
// nudged at once, so the webhook's answer (a denial naming what to
// declare) reaches the service as ResolveRefused instead of an endless
// wait.
//
// # Services waiting for the model or runtime they name (refwait.go)
//
// `kubectl apply -f dir/` creates files in name order, so a service may
// be created before the model (spec.model.name) or runtime
// (spec.runtime.name) it names; the webhook admits it unpinned. While a
// named object does not exist (looked up as selection does: spec.*.kind,
// else the namespaced object, else the cluster one), the service is
// Resolved=False and Ready=False reason ModelNotFound (the model is
// missing, with or without the runtime) or RuntimeNotFound, the message
// naming each missing object and the field to fix if it is a typo;
// Degraded stays False, and it is not nudged (the webhook would wait
// again). Every model event queues the services that name it, every
// runtime event all services. Once both exist (and the model does not
// await metadata) the service is nudged with one merge patch of each
// annotation that differs: ome.io/model-metadata-revision and
// ome.io/runtime-revision, the runtime's <Kind>/<name>@<uid> (a recreated
// runtime nudges again). A refusal is ResolveRefused as above. The nudge
// annotations, their attempt suffix and the patch are package pin's
// (pin.Nudge), as is every read of the pin.
//
// A pinned service's merge input carries its model as the pod webhook
// feeds it (pin.Model: the spec and status.discovered, found as
// selection finds it: spec.model.kind, else a BaseModel in the namespace,
// else a ClusterBaseModel), so the revisions agree; a model that no
// longer exists is Resolved=False reason ModelMissing, pods kept.
//
// Metrics: berth_model_metadata_nudges_total (every nudge patch, the
// runtime's too); the model controller's are in reconcile/models.
//
// # Gang scheduling (package gang)
//
// The PodGroups of Volcano and scheduler-plugins' coscheduling, the pods'
// membership marks and condition GangScheduling are a step of the sync,
// in reconcile/servinggroups/gang; its doc.go has the rules.
//
// # ServingPolicy: the service's side (verdicts.go, quotaexceeded.go)
//
// The ServingPolicy controller is package reconcile/policy; its rules
// (the ResourceQuotas of namespace budgets, policy status, the verdicts
// behind PolicyCompliant) are there. This controller reads it through
// Options.Policy.Verdicts, which the manager wires; neither imports the
// other.
//
// A service whose pods a quota refuses (berth's or anyone's) gets
// condition QuotaExceeded=True reason ExceededQuota with the apiserver's
// message (and the policy whose budget the quota keeps, from
// Verdicts.QuotaPolicy), one Warning event ExceededQuota when it starts,
// plus the
// FailedCreate events of the pods; it is retried after --quota-retry-base
// doubling up to --quota-retry-max (not the workqueue's fast per-item
// backoff), and at once when any quota of its namespace frees room (its
// usage or hard limit changes so; this controller watches every
// ResourceQuota, with or without the policy controller). The next sync
// that creates every pod removes the condition and forgets the backoff.
// The condition is written by the same putStatus as every other status of
// a service.
//
// Condition PolicyCompliant is Verdicts.Compliance, put into the status by
// the service's own sync (servingPolicyConditions, in the one status
// write path): set, removed when no policy selects the service, left as it
// is while not known (after a start, until the policy controller evaluated
// every policy once). Without the policy controller (not in --controllers,
// or --serving-policies=false) services behave as with no ServingPolicy:
// no PolicyCompliant (a stale one goes with the next status write), and
// QuotaExceeded names no policy.
//
// # AcceleratorClass status (reconcile/accelerators)
//
// The AcceleratorClass status controller is package reconcile/accelerators;
// its rules are there. Discovery and the Kueue sync (reconcile/classsync)
// write classes' spec and their own conditions; it keeps them.
//
// # AcceleratorClass discovery and the Kueue sync (reconcile/classsync)
//
// Discovery of classes from nodes' GPU labels and the Kueue ResourceFlavor
// sync are package reconcile/classsync (controller accelerator-sync); its
// rules are there.
//
// # Partitions hold (revisions.go)
//
// The pod webhook composes pods from the current inputs only, so without
// a record a group below the partition that loses a pod (a drain, a
// person, a failure recovered) would come back at the canary's revision.
// As StatefulSet and LeaderWorkerSet do, each revision a component runs
// is recorded:
//
//   - ControllerRevision <isvc>-<component>-<revision> (apps/v1), labels
//     ome.io/inferenceservice, ome.io/component, ome.io/revision and
//     app.kubernetes.io/managed-by=berth-reconciler, a controller owner
//     reference to the service (garbage-collected with it). Its data are
//     the component's pods at that revision as merge.ComposePod composes
//     group 0 (merge.CanonicalRoles: the only pod, or the leader and the
//     first worker), with the groups' shape; annotation ome.io/group-size
//     says the shape for the planner without decoding the data. Its
//     revision number grows with every revision that becomes current (a
//     rollback bumps the old record's).
//   - Written before the planner runs, when the current revision has no
//     record. Annotation ome.io/stable-revision on the current record is
//     StatefulSet's currentRevision: the revision every group ran when
//     this one became current (stableAfter), and this one once every
//     live pod runs it in at least replicas groups. Records are read
//     from an informer; only those the service controls count.
//   - The planner gets the stable revision and the recorded revisions
//     with their shapes (plan.Spec.StableRevision, Recorded) and says at
//     which revision each pod is created (plan rule 3). A pod at a
//     recorded revision is built from the record's template of its role
//     with its own identity (name, identity and OME labels, hostname and
//     subdomain, the group env by name: the pod the webhook composes for
//     that identity, TestRestoreIsWhatTheWebhookComposes), stamped
//     ome.io/revision and ome.io/restored-from=<record>; the pod webhook
//     keeps such a pod as it is, and ServingPolicies still judge it.
//   - History: the current and the stable record, and those of revisions
//     live pods run, are kept; of the others the RevisionHistoryLimit (10)
//     newest; older ones are deleted (UID precondition).
//   - A record that is gone or unreadable is a Warning event
//     RevisionNotRecorded naming the group and the revisions, and the pod
//     is created at the current revision (the behaviour without records).
//     A write that fails is a Warning event RecordRevisionFailed; the
//     next sync tries again and the planner uses what is recorded.
//
// # Correctness under restarts and HA
//
// State is derived from the informer cache on every sync; the only memory
// is the backoff of failed groups, which also rides on recreated pods as
// ome.io/recreate-count so a restarted reconciler picks it up. One replica
// leads through a Lease (reconcile/manager runs every controller only
// while leading); others stand by.
package servinggroups
