// Package merge composes the final pod of an engine, decoder or router from
// a placement decision: the runtime, the AcceleratorClass, the
// InferenceService, engine runtime profiles and the pod's group identity.
// It is pure: no client-go, no network, no clock. The reconciler creates
// SkeletonPod for each member of each group Topology lists; the pod webhook
// patches pods with ComposePod's output and stamps Revision; the reconciler
// compares revisions to roll groups; the CLI prints the same output offline.
//
// # The runtime as merge reads it
//
// ComposePod, Revision and Topology read Input.Runtime through
// v1beta1.FoldedRuntime, whatever the caller passes: OME's accelerator
// names and KServe's top-level hostIPC, hostNetwork, dnsPolicy,
// schedulerName and workerSpec count as the berth fields they fold into
// (engineConfig, engineConfig.worker with size pipelineParallelSize - 1,
// and the env and GPUs KServe's controller injects into head and workers
// in engineConfig.leader.runner and engineConfig.worker.runner; the table
// is at v1beta1.FoldRuntimeAliases).
// The reconciler passes the stored runtime and the pod webhook the one
// selection folded; folding is idempotent, so both compose the same pods
// and revisions. The caller's runtime is never modified.
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
//     first, is the runner; the others are sidecars), except on worker pods
//     of a runtime with KServe's workerSpec: those containers are the
//     head's, and workers run workerSpec's (layer 4) alone.
//  4. The runtime's engineConfig / decoderConfig / routerConfig, then its
//     leader (leader pods) or worker (worker pods).
//  5. Engine and decoder only, when a class was chosen: the
//     acceleratorConfigurations selecting it, from the runtime's top level,
//     the runtime's component, then the InferenceService's component.
//  6. The InferenceService's component, then its leader or worker; then its
//     acceleratorSelector.nodeSelector (engine and decoder only).
//  7. Engine runtime profiles: containers, init containers and volumes not
//     yet present by name.
//  8. Engine and decoder only: the model (below), under what the layers
//     put at its place.
//  9. Group and prefill/decode env (below), on every container.
//
// # Rules
//
// nodeSelector keys: later layers win. Required node affinity terms are
// ANDed (cross product; redundant terms dropped); other affinity terms and
// tolerations are unioned. Containers are matched by name. A layer that sets
// a command owns the command line: its command and args replace the ones
// below, which is how "the user sets command, so accelerator args are not
// applied" falls out. Otherwise args merge as Args (below) says: runtime
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
// {{.Pairing}} is the pod's own ome.io/pairing label (GroupIdentity.Pairing,
// "" without one), so a prefill/decode router selects the workers of its
// pairing; Revision renders it as "", so the pairing never changes a
// revision, and a plan is built for one role and one pairing.
//
// # Templates: a missing label or annotation
//
// A label or annotation a template refers to that the service does not
// have is an error naming the field and the key (never "<no value>"),
// except in the strings of a KServe-shaped runtime's spec.containers (the
// runner and its sidecars, layer 3), which render as their authors wrote
// them for KServe: KServe renders a container with html/template over the
// service's metadata, where a missing key is "". There a missing key
// renders as "", and ComposeService returns a warning naming the field and
// the key (ComposedRole.Warnings; the InferenceService webhook shows it at
// admission), so KServe's torchserve runtime's TS_SERVICE_ENVELOPE:
// "{{.Labels.serviceEnvelope}}" gives TS_SERVICE_ENVELOPE="" without the
// label. An item of command or args that the empty value would leave
// without its value is still an error: one that renders as "", or a flag
// whose value after its first '=' does (--service-envelope=), since an
// empty argument or flag value changes the command line where leaving the
// flag out would not. An item that keeps text around the empty value
// (--name=model-) renders, with the warning. Berth's own shapes
// (engineConfig, decoderConfig, routerConfig, acceleratorConfigurations,
// KServe's workerSpec once folded into engineConfig.worker), profiles and
// the service's own strings keep the strict rule. Composition stays
// deterministic: the same service and runtime give the same pods and
// revision wherever they are composed.
//
// # Templates: checked when a runtime is applied
//
// ValidateRuntimeTemplates checks the same strings of a runtime (command
// and args items and env values, wherever the spec has them; probes and
// lifecycle hooks are not rendered) for an action that reads like berth's
// ("{{." or "{{index") but that RenderTemplate would leave literal: one
// it does not support ({{.Spec.Model}}, {{.Labels.team-name}}) or one never
// closed. It returns a field.ErrorList whose paths name each string; the
// runtime webhook denies with it.
//
// # Args
//
// A layer that sets a command replaces the command line with its own (see
// Rules). The args of the layers above the last such layer (of all layers,
// the incoming pod's lowest, when none sets a command) are laid over each
// other by MergeArgs, runtime < accelerator < user, each read as
//
//	[positional ...] [flag [value ...] ...] [-- verbatim ...]
//
// by these rules:
//
//   - Flags: a token that starts with '-' is a flag, except a negative
//     number ('-' then a digit or '.': -1, -.5), a lone "-" and "--". Long
//     (--port) and short (-p) flags are read alike. A flag is named by the
//     text before its first '=', so --port=8080, --port 8080 and --port are
//     the same flag. Names are not interpreted further: -p and --port are
//     different flags, -abc is one flag, -p8080 another.
//   - Values: a flag owns every token after it up to the next flag or "--":
//     none (--trust-remote-code), one (--port 8080, --seed -1) or several
//     (--prefill-selector a=1 b=2), also after --k=v. Which flags take
//     values cannot be known in general, so none is assumed: a positional
//     written after a flag is read as that flag's value and travels with
//     it. Positionals go first.
//   - Positionals: the tokens before the first flag are the command prefix
//     (vLLM's serve, a model path). They stay first and merge by position,
//     as a program reads them: a layer's i-th positional replaces the i-th
//     below, and positionals below beyond the layer's stay, so a user's
//     [serve --port 8000] over a runtime's [serve /mnt/models --port 8080]
//     keeps /mnt/models.
//   - "--" ends the flags: it and every token after it are passed verbatim,
//     last, from the highest layer that has one.
//
// A flag of a higher layer replaces all occurrences of that flag below,
// with their values, at the place of the first; a flag repeated in one
// layer (--lora a --lora b) stays repeated, its occurrences together in
// that layer's order. Flags new to the layers below follow them in the
// layer's order: runtime flags, then new accelerator flags, then new user
// flags. Merging never drops a flag or a positional of a layer except by
// overriding it, and MergeArgs(MergeArgs(a, b), b) equals MergeArgs(a, b),
// since every token the result places after a flag already belonged to a
// flag. To remove a flag or a positional, set the command.
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
// # The model
//
// Input.Model (NewModelMount: the BaseModel's or ClusterBaseModel's
// effective spec, v1beta1.EffectiveModelSpec, and status.discovered) reaches
// engine and decoder pods, leader and worker pods alike, never the router.
// The runner (never a sidecar) mounts a volume named "model" read-only at
// ModelMountPath, /mnt/models, and gets MODEL_PATH=/mnt/models unless a
// layer set MODEL_PATH; on leader pods of a runtime with KServe's
// workerSpec also MODEL_DIR=/mnt/models unless a layer set it (KServe's
// head script reads MODEL_DIR; its controller sets it for pvc:// and
// oci:// models, berth wherever it mounts the model). OME's runtimes pass --model-path $(MODEL_PATH);
// berth's write /mnt/models literally; both work. What the volume is
// depends on spec.storage (storageUri parsed by v1beta1.ParseStorageURI):
//
//   - pvc://claim/sub/path: the claim, read-only, mounted with subPath
//     sub/path (the whole claim when there is none). storage.path does not
//     apply. OME's form pvc://namespace:claim/sub/path (written for
//     ClusterBaseModels) is the same claim of that namespace: only pods of
//     that namespace can mount it, others are an error naming both.
//   - A local path (/data/m or local:///data/m), or storage.path without a
//     storageUri: the weights are on the nodes already: hostPath (type
//     Directory) at that path, and storage.nodeSelector and
//     storage.nodeAffinity as required node affinity.
//   - hf://, s3://, gs://, oci:// with storage.path set and downloadPolicy
//     not AlwaysDownload: OME's node cache. hostPath (type Directory) at
//     storage.path, and required node affinity on the model-ready label
//     OME's model agent sets on nodes holding the weights
//     (ModelReadyLabel: models.ome.io/clusterbasemodel.<name> or
//     models.ome.io/<namespace>.basemodel.<name>, value Ready), with
//     storage.nodeSelector (In requirements, sorted by key) and
//     storage.nodeAffinity's required terms. All of it is ANDed into each
//     required term the layers set (MergeAffinity). Without OME's model
//     agent, or nodes so labelled, such pods stay Pending: set
//     downloadPolicy AlwaysDownload to download instead.
//   - Otherwise those schemes are downloaded: an emptyDir whose sizeLimit
//     is DownloadSizeLimit (below), filled by the init container
//     "model-downloader". Its image is the service's annotation
//     ome.io/model-downloader-image (pinned by the InferenceService
//     webhook; missing is an error) and it is called as KServe's storage
//     initializer: args [<storageUri>, /mnt/models], the volume mounted
//     writable, an hf:// revision written hf://org/repo:rev. Its
//     credentials and endpoint are those of "The downloader's
//     credentials" (below). KServe's image does not read oci:// (OCI
//     Object Storage): use a downloader that does. gs:// key files are
//     not mounted: use workload identity.
//   - Any other scheme is an error naming spec.storage.storageUri and the
//     supported schemes; no storage (or neither storageUri nor path) adds
//     nothing, not even MODEL_PATH: the runtime brings the weights.
//
// # The downloader's credentials
//
// The downloader gets the credentials and endpoint the model controller's
// discovery used, from the same fields, under names berth's downloader
// (berth model download) and KServe's storage initializer both read; each
// known key of the Secret named storage.key is one secretKeyRef:
//
//   - hf://: HF_TOKEN from the Secret's key storage.storageKey (optional
//     false) when set; else from its key "token" (optional), with the whole
//     Secret as envFrom (optional false), so that a Secret holding HF_TOKEN
//     (KServe's form) works too and "token" (OME's form) wins, as in
//     discovery. storage.parameters.endpoint (a mirror) as HF_ENDPOINT.
//   - s3://: the Secret's keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
//     (optional false) and AWS_SESSION_TOKEN (optional) as themselves;
//     storage.storageKey does not apply, as in discovery.
//     storage.parameters.endpoint as AWS_ENDPOINT_URL, its host[:port] as
//     S3_ENDPOINT and its scheme as S3_USE_HTTPS (1 or 0);
//     parameters.region as AWS_DEFAULT_REGION and AWS_REGION; with an
//     endpoint, parameters.pathStyle ("true": endpoint/bucket/key, as
//     MinIO needs; default false, as discovery) as
//     S3_USER_VIRTUAL_BUCKET, its negation. An endpoint that is not
//     http(s)://host[:port][/path] or a pathStyle that is not a boolean is
//     an error naming the parameter.
//   - other schemes (gs://, oci://), which berth does not discover: KServe's
//     form, the Secret's key storage.storageKey as STORAGE_CONFIG (KServe's
//     JSON storage configuration), else the whole Secret as envFrom;
//     storage.parameters as STORAGE_OVERRIDE_CONFIG (JSON).
//
// DownloadSizeLimit sizes the download volume from what is downloaded: the
// sum of every listed file's size discovery records
// (status.discovered.downloadBytes) plus 10% for the file system and files
// added to a branch since, rounded up to a whole GiB. Before discovery has
// recorded it (models discovered by an older berth, schemes berth does not
// discover), the weights' size (status.discovered.weightsBytes, else
// parameters x bits) plus 20% for tokenizer, config and other files. When
// neither is known there is no limit: the volume may use the node's disk.
//
// ModelMount.Delivery names the way (DeliveryClaim, DeliveryHostPath,
// DeliveryNodeCache, DeliveryDownload, or DeliveryNone) and what the pods
// will reference in the service's namespace: the claim, and the Secret of
// a downloaded model. The InferenceService webhook checks those exist and
// pins the downloader image for DeliveryDownload; ComposePod reports the
// same errors for the same inputs.
//
// Precedence: a volume named "model" or a runner mount at /mnt/models that
// is not the model's own, from any layer or the incoming pod, means the
// weights are provided already: then only MODEL_PATH is added (when
// unset). An init container named model-downloader from a layer is kept
// as it is. Everything is added only when absent, so composing twice, or
// composing the pod the API server sends back, changes nothing.
//
// Bits of a parameter (sizing only): a quantization scheme decides, 8-bit
// ones (fp8, fbgemm_fp8, int8, w8a8, gptq) counting 10 bits and 4-bit ones
// (int4, awq, nf4, mxfp4, w4a16) 6, since embeddings, the output head and
// scales stay wider; else the discovered dtype: 32 for float32, 8 for
// float8 and int8, else 16.
//
// OME differs: it mounts the node cache at storage.path inside the
// container too and sets MODEL_PATH to it (berth uses /mnt/models, which
// berth's runtimes name literally), and its current controller prefers,
// rather than requires, nodes labelled Ready. OME names the volume after
// the model; berth names it "model".
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
// # What the API server refuses
//
// CheckPod finds in a composed pod what the API server would refuse in its
// containers (names, images, ports, env names; its doc lists the rules),
// with the pod's field paths. The InferenceService webhook runs it on
// every pod ComposeService composes, so that a service whose pods can
// never be created is denied when it is applied; the runtime webhook runs
// it on the pods of a service that sets nothing, and warns.
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
// by key, so values converge (args by flag name and positional index, see
// Args); profile containers are only added when absent; templates are
// rendered on the layers, never on the pod, so a label value containing
// braces is not rendered twice.
package merge
