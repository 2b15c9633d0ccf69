// Package validation holds the stateless validation of berth's kinds:
// checks that need nothing but the object (and, where named, a number the
// caller computed from the pinned decision). Each function returns a
// field.ErrorList whose paths point at the offending field, so the
// webhook's denial carries Status.Details.Causes and `kubectl apply`
// names every field at once. Tests compare the lists by value.
//
// # InferenceService lifecycle (ValidateLifecycle)
//
//  1. spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable is an
//     integer of at least 1 or a percentage "N%" with 0 < N ≤ 100: a roll
//     that may take no group down can never make progress.
//  2. ...partition is an integer of at least 0 or a percentage 0–100 %;
//     an integer partition above the most groups any component can have
//     (maxReplicas, else replicas) protects groups that cannot exist and
//     is a mistake.
//  3. spec.restartGracePeriodSeconds is not negative.
//
// # InferenceService gang policy (ValidateGangPolicy, ValidateGangPolicyUpdate)
//
//  1. spec.gangPolicy.scheduler is Volcano or Coscheduling (or empty).
//  2. Every spec.gangPolicy.minRoleReplicas key is a role the service has:
//     engine (alias prefill) and decoder (alias decode) of a prefill/decode
//     service, given as GangRoles (the webhook's come from the resolved
//     topology, so a runtime's decoderConfig counts); a service without a
//     decoder has none. One role is named once (engine and prefill both:
//     Duplicate). Each value is at least 1 and at most the role's replicas
//     (when known).
//  3. On UPDATE, a gangPolicy once set cannot be removed (the CRD's
//     transition rule says the same).
//
// # InferenceService components (ValidateComponents)
//
// A decoder needs an engine. It is checked on what the user sent, before
// the mutating webhook defaults spec.engine.
//
// # InferenceService LoRA adapters (ValidateAdapters)
//
//  1. At most MaxAdapters (64) adapters.
//  2. Each name is 1-128 letters, digits or . _ : / -, starting with a
//     letter or digit (it is the model name requests use), and appears
//     once.
//  3. Each source (the engine's lora_path) is given, at most 1024
//     characters, without spaces or control characters.
//
// # ServingRuntime and ClusterServingRuntime (ValidateServingRuntimeSpec)
//
//  1. No env name appears twice in one container or accelerator
//     configuration.
//  2. engineConfig and decoderConfig have no acceleratorOverride (a
//     service's setting).
//  3. No OME or KServe alias disagrees with the berth field it folds into
//     (v1beta1.FoldRuntimeAliases): both fields are named.
//
// The templates of the strings berth renders (command and args items, env
// values) are checked where they are rendered: merge.ValidateRuntimeTemplates.
//
// # BaseModel and ClusterBaseModel (ValidateBaseModelSpec)
//
// storage.storageUri parses (hf://org/repo[@rev], s3://bucket/prefix,
// gs://bucket/prefix, oci://n/{ns}/b/{bucket}/o/{prefix},
// pvc://{claim}/{sub-path}, OME's pvc://{namespace}:{claim}/{sub-path} or
// an absolute path); an unknown scheme names the supported ones. A pvc://
// URI names a valid claim, and a valid namespace when it names one.
// storage.downloadPolicy is AlwaysDownload or ReuseIfExists, storage.path
// absolute.
//
// # AcceleratorClass (ValidateAcceleratorClassSpec)
//
// Label keys and values of the selectors; discovery terms node affinity
// can evaluate (known operators, values as each needs, Gt and Lt on
// integers, no matchFields); some discovery at all; numeric compute
// capabilities, positive memory; unique features and extended resources,
// whole quantities unless divisible; costs not negative.
//
// # ClusterEngineRuntimeProfile (ValidateProfileSpec)
//
// Container (init included) and volume names are unique DNS labels,
// containers have an image, and the profile adds at least one container.
//
// Checks that need the cluster (priority conflicts, referenced classes and
// profiles) stay in the webhook; format, version and size checks are in
// package selection, which parses them (selection.ValidateRuntimeSpec,
// selection.ValidateDiscovery), and template checks in package merge,
// which renders them. Each returns a field.ErrorList too; the webhook
// joins the lists of a kind into one denial, one Status cause per error.
package validation
