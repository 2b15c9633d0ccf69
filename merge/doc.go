// Package merge composes the final pod of an engine, decoder or router from
// a placement decision: the runtime, the AcceleratorClass, the
// InferenceService, engine runtime profiles and the pod's group identity.
// It is pure: no client-go, no network, no clock. The reconciler creates
// SkeletonPod for each member of each group Topology lists; the pod webhook
// patches pods with ComposePod's output and stamps Revision; the reconciler
// compares revisions to roll groups; the CLI prints the same output offline.
//
// # Layers, lowest first
//
//  1. The incoming pod (the reconciler's skeleton, or a user's pod).
//  2. Engine and decoder only: the AcceleratorClass's discovery
//     (ClassPlacement): its nodeSelector pattern (discovery.nodeSelector and
//     spec.nodeSelector) and its discovery.nodeSelectorTerms are
//     alternatives, as selection matches nodes; without terms the pattern is
//     a nodeSelector, with terms all of it is required node affinity.
//  3. The runtime's top-level pod settings: imagePullSecrets, labels and
//     annotations for every component; nodeSelector, affinity, tolerations
//     and volumes for engine and decoder only; for the engine also the
//     KServe-shaped containers (the one named kserve-container, else the
//     first, is the runner; the others are sidecars).
//  4. The runtime's engineConfig / decoderConfig / routerConfig, then its
//     leader (leader pods) or worker (worker pods).
//  5. Engine and decoder only, when a class was chosen: the
//     acceleratorConfigurations selecting it, from the runtime's top level,
//     the runtime's component, then the InferenceService's component.
//  6. The InferenceService's component, then its leader or worker; then its
//     acceleratorSelector.nodeSelector (engine and decoder only).
//  7. Engine runtime profiles: containers, init containers and volumes not
//     yet present by name.
//  8. Group and prefill/decode env (below), on every container.
//
// # Rules
//
// nodeSelector keys: later layers win. Required node affinity terms are
// ANDed (cross product; redundant terms dropped); other affinity terms and
// tolerations are unioned. Containers are matched by name. A layer that sets
// a command owns the command line: its command and args replace the ones
// below, which is how "the user sets command, so accelerator args are not
// applied" falls out. Otherwise args merge by flag (MergeArgs): runtime
// flags, then new accelerator flags, then new user flags, each flag taking
// the value of its highest layer. Env merges by name in the same order,
// valueFrom included. The main container's resources: runtime values fill
// gaps, then per resource the max of the accelerator's and the user's
// (MergeResources); GPU resource names are translated to the chosen class's
// first resource (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915); requests
// never exceed limits and equal them for extended resources. Templates
// ({{.Name}}, {{.Labels.k}}, {{index .Annotations "k"}} ...) are rendered per
// string in command, args and env values of every layer except the
// incoming pod (RenderTemplate); other brace text stays literal.
//
// # Groups and prefill/decode
//
// Every container of a multi-pod group (Role set, or GroupSize > 1) gets
// BERTH_LEADER_ADDRESS, BERTH_GROUP_SIZE, BERTH_WORKER_INDEX,
// BERTH_GROUP_INDEX and the LeaderWorkerSet names LWS_LEADER_ADDRESS,
// LWS_GROUP_SIZE, LWS_WORKER_INDEX, placed before other variables so they
// can be referenced as $(VAR). When the runtime or the service has a
// decoder, the deployment is prefill/decode disaggregated: engine pods get
// BERTH_PD_ROLE=prefill and decoder pods BERTH_PD_ROLE=decode (engines map
// it to e.g. SGLang's --disaggregation-mode in their args:
// --disaggregation-mode=$(BERTH_PD_ROLE)). The router gets neither.
//
// # Topology, names and skeletons
//
// Topology lists a service's components (engine always; decoder and router
// when the runtime or the service has one) with the service's settings
// over the runtime's: multi-node (a leader or worker anywhere), workers per
// group (worker.size), and desired groups (replicas, else minReplicas,
// else 1, clamped to [minReplicas, maxReplicas]; maxReplicas 0 is
// unbounded). Pods are named <isvc>-<component>-<group> (PodName), with
// -<worker> for multi-pod groups (leader = 0); a multi-pod group has the
// headless Service <isvc>-<component>-<group> (GroupServiceName), its pods'
// subdomain, and its leader answers at LeaderAddress,
// <leader pod>.<group Service>.<namespace>. ValidateNames checks that the
// longest of these names is a DNS-1035 label. SkeletonPod is the pod the
// reconciler creates: name, identity labels, owner reference, hostname and
// subdomain, and one placeholder container (DefaultRunnerName, no image)
// carrying the group env; GroupIdentityFromPod is its inverse.
//
// # Revision
//
// Revision hashes what ComposePod writes into a component's pods and
// nothing else: for each role of the component's groups ("" for single-pod
// groups; leader, and worker when worker.size > 0, for multi-node ones) it
// composes SkeletonPod with a canonical identity (group 0, worker 1, a
// placeholder leader address, the topology's group size), and hashes with
// sha256 (20 hex digits) the envelope
//
//	{"v":"berth.revision/v1",
//	 "pods":[{"role":"leader","labels":{..},"annotations":{..},"spec":{..}}, ..],
//	 "noUpdateProfiles":[{"name":"..","overrides":[..]}]}
//
// The pod's own ome.io/revision annotation, object names, group indexes,
// metadata and status of the inputs, and error-message text never enter;
// a label or annotation of the service enters only when a template renders
// it. Profiles with updateStrategy NoUpdate (the default) are left out of
// the canonical pods, since a change to them reaches new pods only; their
// references (name and overrides) are hashed in noUpdateProfiles. Inputs
// that cannot be composed are an error. A change to the algorithm must bump
// RevisionVersion: a changed revision rolls every serving group in every
// cluster on upgrade, and the golden cases pin each revision.
//
// # Idempotency
//
// ComposePod on its own output changes nothing: every layer is re-applied
// by key, so values converge; positionals and profile containers are only
// added when absent; templates are rendered on the layers, never on the
// pod, so a label value containing braces is not rendered twice.
package merge
