// Package models is the model metadata controller: it reads BaseModels'
// and ClusterBaseModels' metadata from their files (hf://, s3://, and
// pvc:// through an inspector Job) into their status. It has its own
// informers (from the berth informer factory the manager shares), queue
// ("models") and workers (Run; --model-workers), and imports no other
// controller: the serving groups controller (package reconcile/servinggroups) reads the
// status it writes and nudges the services waiting for it. The manager
// (reconcile/manager) starts it; --controllers names it "models".
//
// # Rules
//
// OME's catalogue gives most models only storage.storageUri; berth reads
// their format, architecture, parameter count and quantization from the
// model's own files (package modelmeta) into status.discovered, and
// selection reads the merged view (v1beta1.EffectiveModelSpec: what the
// admin wrote always wins). The decision of one model is pure
// (plan.PlanModel), in this order:
//
//  1. The spec declares modelFormat.name, modelArchitecture and
//     modelParameterSize: MetadataResolved=True reason Declared. Nothing is
//     read, not even the Secret.
//  2. MetadataResolved is True at the model's generation: nothing.
//  3. hf:// and s3://: modelmeta.Discover within --model-discovery-timeout.
//  4. pvc://claim/sub: a Job in the model's namespace (a
//     ClusterBaseModel's: --model-credentials-namespace) mounts the whole
//     claim read-only at /mnt/models and runs, with
//     --model-inspector-image (its entrypoint must be berth), `berth model
//     inspect pvc://claim/sub --root /mnt/models --termination-message-path
//     /dev/termination-log` (modelmeta.InspectJobArgs; reads stay inside
//     the claim). Its pod's termination message is a
//     modelmeta.InspectResult: the metadata, or an error with its reason;
//     anything else is InspectFailed. No service-account token, non-root
//     (uid 65532: the files must be world-readable), read-only root, a
//     deadline of --model-discovery-timeout; the Job is deleted once read.
//     Without the flag, pvc:// is Unsupported.
//  5. No storage URI (NoStorage), one that does not parse
//     (InvalidStorageURI), gs://, oci:// or a node-local path
//     (Unsupported): False without I/O; declare the metadata in the spec.
//
// Status: MetadataResolved and Ready (Ready mirrors MetadataResolved: a
// model serves once its metadata is known) with the reason, observed
// generation, and OME's state: Ready when True, Creating while inspecting
// or Unavailable, else Failed. Failure reasons are modelmeta's
// (Unauthorized, NotFound, ConfigMissing, HeaderMalformed, TooLarge,
// Unavailable) and the controller's (CredentialsMissing, InvalidStorageURI,
// NoStorage, Unsupported, InspectFailed); Inspecting is Unknown. Every
// failure is retried with exponential backoff (--model-retry-base doubling
// up to --model-retry-max) and never crashes anything; the same failure
// writes nothing. Status is written only when it changed, with one event
// when MetadataResolved changes. A model is queued when added, deleted,
// its spec or metadata changes, or on a resync; not on its status alone.
// The serving side (package reconcile/servinggroups) watches the same informers and
// queues the services that name a model on any of its changes.
//
// Where it reads:
//
//   - hf://org/repo[@revision]: --hf-endpoint (default
//     https://huggingface.co), or the model's storage.parameters.endpoint
//     (a mirror).
//   - s3://bucket/prefix: storage.parameters.endpoint (default AWS),
//     region (default us-east-1), pathStyle ("true" for MinIO and OCI).
//   - Credentials: the Secret named by storage.key, in the BaseModel's
//     namespace, or for a ClusterBaseModel in --model-credentials-namespace
//     (default the reconciler's own namespace). It is read with one direct
//     GET per discovery, never listed, watched or cached. hf: the key
//     storage.storageKey names, else "token", else "HF_TOKEN". s3:
//     AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optional AWS_SESSION_TOKEN.
//     A missing Secret or key is CredentialsMissing; no Secret at all reads
//     anonymously (a private repository is then Unauthorized). Tokens never
//     appear in status or events.
//
// storage.parameters.endpoint makes the reconciler send GETs, with the
// token of the Secret the model names, to the URL the model names. A
// ClusterBaseModel (an admin's) may name any; a BaseModel only one of
// Options.NamespacedEndpoints (--model-namespaced-endpoints), since
// its author may not hold the namespace's Secrets: another is
// MetadataResolved=False reason EndpointNotAllowed, checked before the
// Secret is read (endpointRefused).
//
// # Metrics
//
// berth_model_discoveries_total{result} (Declared, Discovered or the
// failure's reason) and berth_model_discovery_duration_seconds (Metrics);
// its status and Job writes count on berth_reconciler_api_writes_total
// (Options.Writes, wired by the manager). Events: Metadata<Reason>
// (Normal) when MetadataResolved becomes True, <Reason> (Warning) when it
// becomes False; the component is berth-reconciler.
package models
