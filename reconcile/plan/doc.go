// Package plan is the pure half of the reconciler. For one component
// (engine, decoder or router) of one InferenceService it decides what the
// serving groups should be and the next step toward that, from the desired
// Spec, the observed pods, the clock and the backoff memory:
//
//	step := plan.Next(spec, pods, memory, now)
//
// It imports no client-go and does no I/O. The caller turns the Step into
// API calls (creates under deterministic names, where AlreadyExists is
// success only for the service's own pod; deletes with a UID
// precondition), records its Events, writes its Status (after
// TrackProgress, rule 9), keeps Step.Backoff and the Progress memory for
// the next call and calls Next again on
// any pod change of the component, or after Step.Requeue. Conditions turns
// the Status of every component into the service's conditions.
//
// The shape follows LeaderWorkerSet's and the StatefulSet controller's
// split: small named functions, each one rule below, and Next reads as
// the list of them.
//
// # Models (model.go)
//
// PlanModel is the model metadata controller's next step for one BaseModel
// or ClusterBaseModel, from its spec, status and generation: write a
// status without I/O (Declared, NoStorage, InvalidStorageURI,
// Unsupported), Discover (hf://, s3://), Inspect (pvc://, when the
// inspector is on), or nothing. ModelStatusAfter turns an outcome into the
// status (conditions MetadataResolved and Ready, state, discovered,
// observedGeneration); the same outcome twice yields an equal status, so
// nothing is written twice. ModelResolved and ModelMetadataRevision are
// what the service side of the wait reads: whether a service's model is
// known for its generation, and the value of the nudge annotation.
//
// # Gang scheduling (gang.go)
//
// The PodGroup of a gang (see package reconcile/servinggroups/gang) as pure functions:
// GangFormula is Kthena ModelServing's (minMember, minTaskMember keyed <role>-<g>,
// minResources, one subgroup per role) for GangRoles; GangFor lowers
// each count to the live pods that will exist after a step (GangLiveAfter:
// observed, not terminating or terminal, minus deletes, plus creates), per
// role, leader or worker, and group, and keeps the formula while nothing
// of the gang is live; GangWrites splits a change into what is written
// before the step (the element-wise minimum) and after it. Invariant,
// checked after every simulated step (gang_test.go): a PodGroup never
// asks for more members, per task, than live pods exist. ChooseGang picks
// the backend from gangPolicy and the pods' schedulerName.
//
// # Glossary
//
//   - Kthena's ModelServing (docs/glossary.md): the design this package
//     follows: serving groups, rolling updates from the highest
//     ordinal down with partition and maxUnavailable, restart policies.
//   - Serving group (group): the pods that serve together, ordinal g >= 0.
//     Single-pod groups have one pod of role "". Multi-node groups have a
//     leader (role leader, worker index 0) and Spec.Workers workers (role
//     worker, indices 1..Workers). That is the group's shape; the expected
//     pods of a group are the identities (group, role, worker index) its
//     shape calls for.
//   - Slot: (group, worker index), what a pod's name is made of; two pods
//     in one slot may have the same name whatever their roles.
//   - Live pod: a pod without deletionTimestamp. Live group: a group with
//     at least one live expected pod.
//   - Ready group: every expected pod of its shape exists, is live, Ready
//     and not in a terminal phase (Failed, Succeeded).
//   - Outdated group: a live pod of the group has a revision other than
//     Spec.Revision.
//   - Unavailable: a desired group that is not Ready (missing,
//     terminating, not Ready): Replicas minus the Ready groups, at least 0.
//   - Partition: groups with an ordinal below it are protected from the
//     roll (percentages of Replicas round up).
//   - Allowance: how many Ready groups may be deleted now, so that no more
//     than MaxUnavailable desired groups are unavailable afterwards:
//     ready - (Replicas - MaxUnavailable), at least 0 (percentages of
//     Replicas round down; at least 1).
//   - Failing pod: terminal, or restarted at least once and not Ready.
//   - Recovery: deleting what a recovery policy recreates after a failure.
//
// # Rules
//
//  1. Groups from pods. Every pod is placed by its labels. A group at the
//     current revision is judged by the spec's shape; an outdated group by
//     the shape it was made with: a leader and GroupSize-1 workers as its
//     pods say (else as many workers as its highest worker index), or one
//     pod when none of its pods has a role. A change of Workers or
//     MultiNode changes the revision, so old groups stay whole and Ready
//     and roll one by one (rule 5) instead of all turning incomplete at
//     once. A pod outside its group's shape (no valid group index, an
//     unknown role, a worker beyond the shape) or a second live pod of one
//     identity (a Ready one stays, else the first by name) is extra and
//     deleted. Terminating pods are never deleted again; they hold their
//     slot and their ordinal until they are gone. So do Foreign pods: pods
//     at a name the component uses that the service does not control (an
//     orphan of kubectl delete --cascade=orphan, someone else's; the
//     caller passes them so marked): never deleted, counted, adopted or
//     created over.
//  2. Scale up. While fewer groups are live than Replicas, the lowest
//     ordinals without a live group are filled; a surviving higher
//     ordinal counts toward Replicas, so holes are allowed (Kthena). All
//     pods of a new group are created at once. An ordinal that still has
//     a pod (terminating, or an extra being deleted) is waited for, not
//     skipped: nothing is created in an occupied slot, and Next requeues
//     after WaitRequeue.
//  3. Missing pods, and partitions hold. A pod missing from a live group
//     is created again (under ServingGroupRecreate a multi-pod group is
//     recreated whole instead, rule 6), once its slot is free, at its
//     group's revision: the current one, or for a group below the
//     partition whose live pods are all at one other revision, that
//     revision when the caller recorded its templates (Spec.Recorded;
//     PodID.Revision). A group missing a pod that cannot be completed so
//     (outdated at or above the partition, pods of several revisions, a
//     revision no longer recorded) is not completed with a pod of another
//     revision but replaced whole: deleted, then created by rule 2. It is
//     not Ready, so this costs no availability. Rule 2 creates a group
//     below the partition at Spec.StableRevision, the last revision every
//     group ran (StatefulSet's currentRevision), when it differs from the
//     current one and is recorded, in that revision's shape; above the
//     partition, always at the current revision. Where a protected group
//     comes back at the current revision because its revision is not
//     recorded, a Warning event RevisionNotRecorded names both.
//  4. Scale down. While more groups are live than Replicas, whole groups
//     are deleted: partition-protected groups last, groups that are not
//     Ready first, then the highest ordinal first. Deleting a Ready group
//     uses the allowance of rule 5; when there is none left, the next
//     group that is not Ready is deleted instead.
//  5. Rolling update (ServingGroupRollingUpdate, Kthena's ModelServing). Outdated live
//     groups at or above the partition roll; groups below it never do.
//     Outdated groups that are not Ready go first, all at once: they are
//     unavailable anyway, so deleting them costs nothing (the fix for
//     Kthena #743 and #657, where unhealthy outdated groups blocked the
//     rollout). Then Ready outdated groups from the highest ordinal down,
//     one per unit of allowance, which scale-down (rule 4) draws from
//     first. A rolled group is deleted whole and recreated by rule 2:
//     delete then recreate, no surge. With MaxUnavailable 1 a rebuilt
//     group is Ready before the next is touched; a new revision that
//     never becomes Ready stops the roll after MaxUnavailable groups.
//  6. Failures. A failing expected pod is acted on once RestartGrace has
//     passed since its FailingSince (zero: at once) and the group's
//     backoff allows: ServingGroupRecreate deletes the whole group (rule 2
//     recreates it); RoleRecreate (the default) deletes the failing pods
//     (rule 3 recreates them); None deletes only terminal pods and leaves
//     restarts to the kubelet. Under ServingGroupRecreate a multi-pod group
//     is also recreated whole when a pod of it is missing (deleted,
//     evicted; while its backoff runs it stays incomplete) or restarted,
//     even if Ready again (LeaderWorkerSet's RecreateGroupOnPodRestart: a
//     restarted member broke the group's collective); a Ready group so
//     recreated uses the allowance of rule 5. A group another rule
//     deleted or changed in the same step is not also recovered. The first recovery of a group
//     is immediate; after the n-th in a row the next waits
//     Delay(n) = min(BackoffBase·2^(n-1), BackoffMax), by default 10s,
//     20s, 40s ... 5m (RBG's formula). Pods created in a group carry its
//     count as RecreateCount, so a restarted controller, whose memory is
//     empty, seeds the count from its pods (the delay then counts from
//     that moment). The count restarts from 0 once the group has been
//     Ready for BackoffMax. Each recovery emits a Warning event naming the
//     pod and a BackOff event ("group 2 failed 3 times in a row; next
//     recreate in 40s").
//  7. Determinism. Next depends on its arguments only, not on the order
//     of pods; creates and deletes are sorted by group, role and worker
//     index, events follow the rules in order, and no pod is created
//     where one exists or deleted twice.
//  8. Unschedulable. Status carries how many groups have a pod the
//     scheduler cannot place, and the message of the first (by group,
//     role and worker index), e.g. "0/19 nodes are available: 19
//     Insufficient nvidia.com/gpu", for the Ready and Degraded
//     conditions.
//  9. Progress deadline (progress.go; TrackProgress, after Next, with the
//     caller's Progress memory as for Backoff). While a component is not
//     at rest it must make progress within its deadline
//     (spec.progressDeadlineSeconds, default 600s, as a Deployment's):
//     one outdated group fewer, one more Available group (Ready, at the
//     current revision, recovery count 0: a crash-looping group Ready for
//     a moment is not progress), one excess group fewer, or a new target
//     (revision or Replicas). Marks only count when they pass the best
//     seen since the last progress, so flapping is not progress. Past the
//     deadline the Status is Stalled until progress is made; TrackProgress
//     asks to be called when the deadline would pass.
//  10. Pairings (pair.go; Spec.Pair, for the engine and decoder of a
//     prefill/decode service). Each pod carries the pairing of the pair's
//     revisions (label ome.io/pairing; the caller computes it and stamps it
//     on the pods it creates). A group whose pods are not all at
//     Pair.Pairing is outdated, as one of another revision is, and rolls
//     by rule 5: a change to either component moves both to a new
//     pairing. Step.Pairs counts the component's live and Ready groups per
//     pairing (Range); PairRanges counts them before a step.
//  11. Ratio (Pair.Ratio, spec.prefillDecodeRatio; the bounds are
//     v1beta1.PrefillDecodeRatio's: skew |P·decode − D·prefill| at most
//     maxSkew·min(prefill, decode)). The caller plans the engine first,
//     with the decoder's Ranges as Pair.Other, then the decoder with the
//     engine's Step.Pairs, so the second step is checked against the
//     first. Of one role and pairing, Range.Low counts the Ready groups
//     the step deletes as gone and Range.High the groups not yet Ready
//     (live, or created now) as Ready: the span of Ready counts the
//     writes can lead to in whatever order they land and pods turn
//     Ready. A Ready group is deleted (rules 4 and 5) and a group created
//     (rule 2) only if every corner of the two roles' spans is within the
//     bounds, or no further out than the Ready groups are now; otherwise
//     the action waits, a RatioHold event says why (once per step), and
//     the next pod change calls again. Groups that are not Ready are
//     deleted freely. So a rollout moves the old pairing down and the new
//     one up one group at a time, the role that is ahead first, and
//     scaling adds or removes (highest ordinal first) the groups of both
//     roles in the same order. With maxSkew at least
//     v1beta1.MinMaxSkew (the webhook's check) some single step is
//     always allowed. The simulation (pair_sim_test.go) checks the ratio
//     of every pairing and maxUnavailable after every delete and every
//     pod turning Ready, through a rollout, a reconciler restart between
//     the engine's and the decoder's step, and a scale during a rollout;
//     FuzzPairRatio starts it from arbitrary worlds.
//  12. Routers per pairing (routers.go; Spec.Pair from RouterPair, for
//     the router of a prefill/decode service). Each router pod carries one
//     pairing (label ome.io/pairing; the runtime's selectors render it
//     with {{.Pairing}}), so it pairs only the prefill and decode of that
//     pairing. The routers of the current pairing, and routers without a
//     pairing (made before routers had one: outdated, they roll by rule
//     5), are planned by rules 1 to 9 at Pair.Pairing: created routers
//     carry it, so a new pairing gets its routers as soon as it is
//     current, before its first group. They take the lowest ordinals no
//     router of any pairing holds (Spec.Held; names stay
//     <isvc>-router-<g>, within the lengths ValidateNames checks, as the
//     pairing is a label, not part of the name). A router of another
//     pairing is kept, untouched, while that pairing has a live engine
//     group and a live decoder group (Pair.Live, LivePairs: it serves, or
//     may again serve, that pairing), and deleted once it lacks either
//     (event PairingGone): with no prefill or no decode left it could only
//     answer errors, and deleting it takes it out of the Service at once,
//     where a readiness probe takes seconds. A pairing only ever loses
//     groups once it is not current, so it never needs its router again. The pairing is
//     outside the router's revision, so a new pairing rolls no router; a
//     new router revision rolls the current pairing's routers only. The
//     router's Status is the current pairing's, with the Ready routers of
//     kept pairings counted as Ready. The caller sets the router's
//     Replicas (per pairing) with a ratio: one router per ratio unit,
//     ceil(engine replicas / prefill), within the router's
//     minReplicas/maxReplicas, unless spec.router.replicas is set. The simulation (pair_sim_test.go)
//     checks after every observation that every router carries one
//     pairing and that every pairing with a live prefill and a live decode
//     group has a live router (or one retired by rule 13).
//  13. A router leaves before its pairing's last group (routers.go,
//     pair.go). The engine and the decoder do not delete the last live
//     group of another pairing that still has a router pod, terminating
//     or not (Pair.Routed, from RoutedPairs), and a live group of the
//     other role (Pair.Other; without one its router serves nothing and
//     goes by rule 12), while a router of the
//     current pairing is Ready and not terminating (Pair.Served, from
//     Served) or the current pairing has a live group of the same role (it
//     can then serve without this group): the step names that pairing in
//     Step.RouterFirst, with event RouterFirst. The router is planned
//     after both (Pair.Retire, the union of their RouterFirst) and, once
//     Served, deletes that pairing's routers (event RouterRetired). The
//     group goes once they are gone. So a retiring router, still in the
//     Service's endpoints until they catch up, answers what it takes with
//     its pairing's last groups, and the Service has the current
//     pairing's Ready router to move to. With neither, nothing is held: a
//     service with one group of a role has none to spare, so its old
//     pairing goes, and its router with it, by rule 12. The simulation
//     models the routers' readiness (Ready only while their pairing has a
//     Ready prefill and decode) and checks after every delete that no
//     last group of a pairing with a router pod goes while the hold applied
//     when the step was planned; FuzzPairRatio starts it, routers
//     included, from arbitrary worlds, and every run must settle.
//
// # Status and conditions
//
// Status counts live (Replicas), Ready, updated and outdated groups, the
// unavailable desired ones and the Available ones (rule 9), lists failing
// groups, and names what the component is doing in Progressing: RollingUpdate (outdated groups at or
// above the partition remain), Scaling (live groups differ from Replicas),
// Recovering (groups are failing), Starting (anything else in flight), or
// "" at rest. Conditions gives Ready True when every desired group is
// Ready, or during a roll while no more than MaxUnavailable are not and
// at least one is (Ready means serving), unless the roll is Stalled;
// otherwise False with Unschedulable, ContainersStuck, PodsFailing,
// ProgressDeadlineExceeded (a stalled roll) or GroupsNotReady; the
// service takes its worst component's. Progressing is False with
// ProgressDeadlineExceeded while any component is Stalled, naming them
// and the deadline. Degraded is True for a pin that no longer resolves,
// failing groups, unschedulable pods or stuck containers, else for a
// Stalled component (ProgressDeadlineExceeded). A container is
// stuck when the kubelet waits with a reason that waiting does not
// resolve (ErrImagePull, ImagePullBackOff, ErrImageNeverPull,
// InvalidImageName, CreateContainer(Config)Error, RunContainerError): the
// message quotes the kubelet's (it names the image); the pod is not
// recreated for it, since a new one would wait the same.
//
// # Limits
//
//   - No surge: a rolled group is deleted before it is recreated (Kthena
//     has no maxSurge either).
//   - A group below the partition that loses every pod comes back at the
//     stable revision, not at the one it ran: a group the user let roll
//     (partition lowered) and then protected again (partition raised)
//     returns to the stable revision, as a StatefulSet's pods do. A group
//     with pods left keeps their revision.
//   - A protected group comes back at its revision only while that
//     revision's templates are recorded (the caller's history limit);
//     otherwise at the current revision, with an event.
//   - RoleRecreate never escalates to recreating the whole group, and
//     recoveries have no limit, only the growing delay (LWS #877 proposes
//     maxGroupRestarts).
//   - The memory is the caller's. After a controller restart the delay
//     counts from the restart, and a group whose pods were all gone when
//     the memory was lost starts counting from 0 again.
//   - A surviving high ordinal that is rolled comes back at the lowest
//     free ordinal (rule 2), closing the hole.
//   - With a ratio, groups start one (or, with a larger maxSkew, a few)
//     at a time in ratio order: a new service or a scale-up waits for
//     each group to be Ready before the next of the other role, which is
//     slower than creating all at once. Recovering a failing group (rule
//     6) is not held by the ratio; a failure can take a pairing outside
//     its bounds, which the service's RatioWithinBounds condition says.
//   - A group below the partition recreated at a recorded revision gets
//     the current pairing label (the caller's), so it is outdated by its
//     revision and rolls once the partition is lowered.
//   - A router of a pairing that is no longer current is never recreated
//     or rolled (rule 12): if it fails while its pairing still has groups,
//     that pairing is served by no router until it is gone. Nor is one
//     retired by rule 13 brought back if the current pairing stops being
//     Served before that pairing's last group goes.
package plan
