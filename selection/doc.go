// Package selection decides, for an InferenceService, which model, which
// serving runtime and which AcceleratorClass it gets, and explains why every
// other candidate lost.
//
// It is pure: no client-go, no network. The webhook feeds an Index from
// informer events, the CLI and tests feed it from files, and all of them get
// the same answer for the same objects, whatever order they arrived in.
//
// Objects handed to an Index are deep-copied; objects handed back in a
// Decision are shared with the Index and must be treated as read-only.
//
// # The model's merged view
//
// A model is read as v1beta1.EffectiveModelSpec gives it: what the admin
// wrote, with every field left unset filled from status.discovered (what
// berth read from the model's files); what the admin wrote always wins.
// The index must be fed whole objects, status included. A model that
// awaits metadata (v1beta1.ModelAwaitsMetadata: format, architecture or
// size missing from the spec and discovery not finished for its
// generation) cannot be decided for: Select fails with
// CodeModelMetadataPending, naming the model, what is missing and the
// discovery failure if any. It is not a mismatch and callers must not
// present it as a denial (the webhook admits the service unpinned).
// Resolve still reads such a model, with the view it has, so a pinned
// service keeps composing pods while its model's metadata is read again.
// Index.Model gives the merged view of the model a service names, with
// Model.Pending saying what it lacks.
//
// Only a model berth can read (StorageLocation.Discoverable: hf://, s3://,
// pvc://) awaits metadata. A model on a node-local path, gs:// or oci://
// is decided on what its spec declares; without modelFormat it is
// CodeModelInvalid, and the message says berth cannot read its files and
// asks for modelFormat, modelArchitecture and modelParameterSize.
//
// # References that do not exist yet
//
// Index.Awaited names what spec.model.name and spec.runtime.name name that
// is not in the index, in the words of Select's CodeModelNotFound and
// CodeRuntimeNotFound denials. `kubectl apply -f dir/` creates a
// directory's files in name order, so a service may arrive before its
// model or runtime; the webhook admits it unpinned while a named reference
// is missing. A service that names no model at all is not awaiting
// anything (CodeModelNotFound, "spec.model is required"), nor is one whose
// reference has an unknown kind (CodeInvalidInput).
//
// # Matching a model (where the seeds leave it open)
//
//   - Format and framework names compare case-insensitively.
//   - Versions are major[.minor[.patch]] with an optional v and PEP 440
//     pre, post, dev and local suffixes (4.45.0.dev0, 1.0rc1, 2.0.post1,
//     2.1.0+cu121), and compare as "runtime OP model" on the runtime's
//     precision: "1" matches 1.3 and 1.0.0; "4.36" GreaterThanOrEqual
//     matches 4.36.2 and 4.2, not 4.37; "4.45" matches 4.45.0.dev0. A
//     version written in full (three parts or a suffix) is that release,
//     ordered as PEP 440 orders them: 4.45.0 is greater than 4.45.0.dev0.
//     A runtime version needs a model version; a runtime without one
//     accepts any.
//   - A framework version the admin did not write but berth discovered
//     (config.json's transformers_version) is the version the checkpoint
//     was saved with: a floor, not an identity. A runtime at that version
//     or newer serves it (Equal and GreaterThanOrEqual runtimes alike,
//     compared on the runtime's precision; GreaterThan stays strict). OME's
//     catalogue pins runtimes to one transformers release while the
//     models' files name another (srt-llama-3-1-8b-instruct: 4.43.0; the
//     published Llama-3.1-8B-Instruct config.json: 4.42.3), so an Equal
//     match on discovered versions would refuse OME's own pairings.
//   - An entry without modelArchitecture or modelFramework accepts any; an
//     entry without quantization serves unquantized models only.
//   - Sizes are decimal counts (7B = 7e9), K/M/B/T in any case. Either
//     bound of a modelSizeRange may be missing. Auto-selection needs a
//     model that declares its size to use a runtime with a range; a runtime
//     named in spec.runtime serves it anyway, with a warning.
//   - Protocol: the service's, default openAI; a runtime without
//     protocolVersions serves openAI only.
//
// # Ordering runtimes
//
// Auto-select considers enabled runtimes of the service's namespace and of
// the cluster that list the model's format, have a matching entry with
// autoSelect, the size in range and the protocol. They are ordered by:
// namespaced first, then priority (set beats unset, higher first), then the
// size range closest to the model (fewer open bounds, then the smaller sum
// of distances to the bounds), then the newest creationTimestamp, then the
// name. A named runtime (spec.runtime) is checked the same way except that
// autoSelect is not required.
//
// ValidateRuntimeSpec checks what this package parses in one runtime
// (format names and priorities, versions and operators, sizes, compute
// capabilities, preference conditions); Index.PriorityConflicts finds
// auto-select entries of the same scope that tie. Both return a
// field.ErrorList (Invalid, the detail saying what is wrong), so the
// runtime webhook's denial names each field.
//
// # Choosing the AcceleratorClass
//
// Only a service that asks for an accelerator gets a class: an accelerator
// resource (nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915 or a resource a
// class names) in the runners of its engine or decoder, its runtime's, or
// an acceleratorConfigurations entry; the annotation ome.io/accelerator-class
// or ome.io/selection-strategy; an acceleratorSelector; or the runtime's
// acceleratorRequirements. Anything else (a KServe sklearn server) gets no
// class, no GPU node selector, and is never waiting for GPUs.
//
// Candidates are the runtime's supportedClasses (all classes when empty)
// that qualify:
//
//   - Capabilities: they meet the merged requiredCapabilities (runtime, then
//     the service's, the stricter value of each field).
//   - Vendor: a class of another vendor than the accelerator resource the
//     engine requests (nvidia.com/gpu: nvidia; the class's spec.vendor, else
//     its first resource's domain) qualifies only when the runtime or the
//     service opts in: supportedClasses lists it, or an
//     acceleratorConfigurations entry selects it (and may set that vendor's
//     image). Only then does merge translate resource names: a CUDA image
//     never lands on AMD or Intel nodes by default, and the loser's line says
//     "runtime requests nvidia.com/gpu and has no configuration for amd".
//   - Fit: the group holds the model: accelerators per pod on that class (an
//     acceleratorConfigurations entry for it sets them, as merge does) × pods
//     per group × capabilities.memoryGB ≥ parameters × bytes per parameter ×
//     headroom. Bytes per parameter come from the model's quantization:
//     4-bit schemes (int4, awq, gptq, fp4, nf4) 0.5, 8-bit ones (fp8, int8,
//     w8a8) 1, fp32 4, otherwise (fp16, bf16, none) 2. The headroom, for KV
//     cache and runtime buffers, is DefaultFitHeadroom (1.2) unless
//     Index.SetFitHeadroom changes it. The loser's line quotes the numbers:
//     "needs ≥ 486 GB, group has 8 × 40 GiB (343.6 GB; 405B parameters × 1
//     byte (fp8) × 1.2 headroom)". A model without spec.modelParameterSize,
//     or a class without memoryGB, skips the check, and the Decision warns.
//   - OME's constraints berth has no field for (omeconstraints.go): the
//     service's acceleratorSelector.constraints excludedClasses (the class
//     is not listed), architectureFamilies (its family, or vendor-family as
//     in nvidia-hopper, is listed, in any case; no family fails), maxMemory
//     (GB read as GiB; memoryGB rounded down to whole GiB is at most it;
//     no memoryGB passes) and preferredPrecisions, and the runtime's
//     acceleratorRequirements.preferredPrecisions (a performance figure for
//     one listed precision of fp4, fp8, fp16, bf16, fp32, fp64, int8, int4;
//     a class without figures passes; unknown names are ignored). OME's
//     other names (acceleratorClass, policy, minMemory, acceleratorClasses,
//     ...) are folded into berth's fields first: v1beta1's aliases.go has
//     the table; a runtime is folded when it is compiled, so runtimes
//     applied before the webhook work too.
//
// Among them: the annotation ome.io/accelerator-class, else the first
// qualifying acceleratorSelector.preferredClasses entry, else the best
// applicable preferenceOrder score (requestSize conditions read the
// annotation ome.io/request-size), else the strategy (annotation
// ome.io/selection-strategy, else acceleratorSelector.strategy, else
// balanced). Explicit names that do not exist, or that do not qualify,
// are errors.
//
// # Room for the whole service
//
// Among otherwise equal choices a class with room wins. A class has room
// when its Ready matching nodes can take every pod of the engine: the sum
// over nodes of free ÷ GPUs per pod covers groups × pods per group
// (1 + worker.size). The groups are EngineGroups, the count the reconciler
// creates (merge.Topology's Replicas: replicas, at least minReplicas, at
// most maxReplicas; never below 1). A class that holds one pod but not six
// loses to one that holds six: "AcceleratorClass/b200: fits, but its ready
// nodes lack 6 group(s) × 1 pod(s) × 1 nvidia.com/gpu (4 of 8
// nvidia.com/gpu free on 1 Ready node); h100-80gb has room" (one group
// reads "1 pod(s) × 4 nvidia.com/gpu"). When no candidate has room, or the
// annotation or the only qualifying class names one without, that class
// is chosen, Decision.AcceleratorAvailable is false and a warning gives the
// numbers: "AcceleratorClass b200 currently has no room: its ready nodes
// lack 6 group(s) × ... (4 of 8 nvidia.com/gpu free on 1 Ready node); the
// service will wait for capacity" ("matches no Ready node" when it has
// none). Only the engine is counted: a decoder on the same class is not
// added. Resolve (a pinned decision read back) asks for one group only: the
// service's running pods already hold theirs.
//
// # Policies: SelectWith and a Gate
//
// SelectWith(isvc, SelectOptions{Gate: g}) is Select with an admission
// policy consulted while choosing (policy.Set.Gate is the Gate berth
// uses; selection knows nothing else of policies). Select is SelectWith
// with no options.
//
//   - Runtimes: every runtime that would otherwise be an auto-selection
//     candidate is asked about (Gate.Runtime: kind, name, labels and spec,
//     so the gate can judge what the runtime would put in the pods, such
//     as its images). A
//     forbidden one loses with the line "ClusterServingRuntime/vllm:
//     forbidden by ServingPolicy/rt: not in sglang*"; the best allowed
//     one wins. When every candidate is forbidden the error is
//     CodeForbiddenByPolicy ("no runtime can serve ...: every runtime that
//     could is forbidden by ServingPolicy/rt; ..."), one line per runtime.
//     A runtime named in spec.runtime that the gate forbids is
//     CodeForbiddenByPolicy, naming the policy.
//   - Classes: every candidate class is asked about (Gate.Class), with the
//     engine's ClassUse on it: accelerators per pod on that class (its
//     acceleratorConfigurations applied), pods per group, the class's
//     resource and the chosen runtime (the gate counts the groups from it
//     with merge.Topology: selection does not import merge), so a budget
//     or a cost can make a class lose. A
//     forbidden class does not qualify; its line puts the policy first:
//     "AcceleratorClass/nvidia-h100-80gb: forbidden by
//     ServingPolicy/team-a: not in nvidia-a100-*", followed by any other
//     reason it fails ("; does not hold the model: ..."). When no class
//     qualifies and at least one would have but for a policy, the error is
//     CodeForbiddenByPolicy: "every AcceleratorClass that could serve it
//     with <runtime> is forbidden by ServingPolicy/team-a; ...", one line
//     per candidate. When no class would serve anyway it stays
//     CodeNoAcceleratorClass (the lines still name the policies). The
//     annotation ome.io/accelerator-class naming a forbidden class, and
//     preferredClasses whose only fitting entries are forbidden, are
//     CodeForbiddenByPolicy too.
//
// The gate counts only the engine (ClassUse); admission checks the whole
// composed service afterwards (policy.Set.CheckService).
//
// # Errors: the service's fields
//
// A failure is an *Error: Error() is the text (the reason, then one line
// per candidate and why it lost), Code its kind (see Metrics), and Errors()
// the same as a field.ErrorList of the InferenceService: the reason at
// Error.Field, then each candidate, its line whole, at the field that made
// it lose (Error.CandidateFields). Each is Invalid without a value. The
// fields:
//
//   - the model: spec.model.name (spec.model when none is named,
//     spec.model.kind for an unknown kind, spec.predictor.model for a
//     KServe predictor's inline format);
//   - the runtime: spec.runtime.name (spec.runtime.kind for an unknown
//     kind), also when auto-selection finds none; when no runtime lists the
//     model's format at all, the model's field;
//   - the class: annotation ome.io/accelerator-class
//     (metadata.annotations[ome.io/accelerator-class]),
//     spec.acceleratorSelector.preferredClasses, the strategy's annotation
//     or field, spec.acceleratorSelector.requiredCapabilities for invalid
//     requirements, spec.acceleratorSelector otherwise; spec.runtime.name
//     when the runtime's supportedClasses name no existing class;
//   - Resolve's pins: metadata.annotations[ome.io/resolved-runtime] and
//     [ome.io/resolved-accelerator-class].
//
// A losing runtime is at the model's field when it does not serve the
// model (format, framework, versions, architecture, quantization, size),
// at spec.protocolVersion when it does not serve the protocol, and at
// spec.runtime.name otherwise (disabled, an entry of its own that does not
// parse, no autoSelect, forbidden by a Gate, outranked): naming a runtime
// is the service's way past those. A losing class is at its
// preferredClasses entry when that entry named it; otherwise at the field
// of the first reason its line gives: spec.acceleratorSelector for a
// policy or an unmet requirement or constraint, spec.runtime.name for a
// vendor the runtime has no configuration for, the model's field for a
// group that does not hold the model.
//
// # Metrics
//
// selection keeps no counters: Select also runs for dry checks (the
// mutating and the validating webhook both decide), so only the caller
// knows which decisions to count. It gives the caller the labels instead:
//
//   - Decision.Metrics(): Runtime (RuntimeRef), Class ("" for none),
//     ChosenBy (how the class was chosen: none, noClasses, annotation,
//     preferredClasses, preferenceOrder, strategy, pin) and Strategy (the
//     strategy in force when classes were ranked), plus Unavailable: a
//     class was chosen whose Ready nodes have no room for the service.
//   - Code(err): the denial's kind (ModelNotFound, NoRuntime,
//     RuntimeIncompatible, AcceleratorClassNotFound, NoAcceleratorClass,
//     ForbiddenByPolicy, ...; the Code* constants), "" for errors that are
//     not selection's.
//     ModelMetadataPending is the one code that is not a denial.
//
// A webhook would export, e.g., berth_selection_decisions_total{runtime,
// class, chosen_by, strategy}, berth_selection_denials_total{code} and
// berth_selection_unavailable_total{class}. Runtime and class names come
// from objects admins create, so label cardinality stays bounded.
//
// # Discovery
//
// A class's nodes match its nodeSelector pattern (discovery.nodeSelector
// and the spec.nodeSelector shorthand, ANDed) or any of
// discovery.nodeSelectorTerms: the terms are OEP-0003's "alternative
// discovery patterns", ORed with the pattern and each other as Kubernetes
// ORs node selector terms. A class without any selector has no nodes.
// merge.ClassPlacement gives the class's pods the same rule, so discovery
// uses only what node affinity expresses: In, NotIn, Exists, DoesNotExist,
// and Gt/Lt with one integer. ValidateDiscovery denies anything else with
// the exact field, the value and the rewrite (OEP-0003's "Gte 32Gi" on
// nvidia.com/gpu.memory, which counts MiB, is "Gt 32767").
//
// # Counting a class's accelerators
//
// Index.ClassAvailability is the one count of a class's nodes: the Ready,
// schedulable nodes discovery matches, their allocatable of
// CountedResource (the class's first spec.resources entry, else its
// vendor's resource: nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915),
// and what is free of it once the requests of bound, non-terminated pods
// are taken away (per node, never below zero). The reconciler writes it to
// AcceleratorClass status; a decision reads the same counts, so a class
// that loses for lack of room says so in its status's numbers: "fits, but
// its ready nodes lack 1 pod(s) × 4 nvidia.com/gpu (5 of 16 nvidia.com/gpu
// free on 2 Ready nodes)", availableAccelerators of totalAccelerators on
// len(status.nodes) nodes. The parenthesis is left out when the need is not
// counted that way (a service nodeSelector narrows the nodes, or the pods
// ask for another resource than the counted one).
package selection
