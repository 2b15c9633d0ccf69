package v1beta1

// Labels and annotations berth reads and writes. They live in the ome.io
// namespace so that OME users keep their muscle memory.
const (
	// LabelInferenceService marks a pod as belonging to an InferenceService
	// (value: its name). The pod webhook only sees pods with this label.
	LabelInferenceService = "ome.io/inferenceservice"
	// LabelComponent is engine, decoder or router.
	LabelComponent = "ome.io/component"
	// LabelRole is leader or worker within a multi-node group.
	LabelRole = "ome.io/role"
	// LabelGroupIndex is the ordinal of a pod's serving group.
	LabelGroupIndex = "ome.io/group-index"
	// LabelWorkerIndex is a pod's index inside its group (leader = 0).
	LabelWorkerIndex = "ome.io/worker-index"

	// The pin and the protocol that asks for a new one: the resolved-*
	// annotations, AnnotationRepin and the nudges (AnnotationModelMetadataRevision,
	// AnnotationRuntimeRevision) are read and written only through package
	// pin (pin.Read, pin.Write, pin.Nudge); a test there names any other
	// code that refers to them.

	// AnnotationResolvedRuntime pins the runtime: "<Kind>/<name>".
	AnnotationResolvedRuntime = "ome.io/resolved-runtime"
	// AnnotationResolvedAcceleratorClass pins the AcceleratorClass of the
	// engine, and of the decoder unless the decoder has its own pin.
	AnnotationResolvedAcceleratorClass = "ome.io/resolved-accelerator-class"
	// AnnotationResolvedDecoderAcceleratorClass pins the decoder's
	// AcceleratorClass when it has a class selection of its own (an
	// acceleratorOverride on the decoder or the engine) and it differs from
	// the engine's, or the decoder's override chose it. Absent: the decoder
	// runs on the engine's class (ome.io/resolved-accelerator-class).
	AnnotationResolvedDecoderAcceleratorClass = "ome.io/resolved-decoder-accelerator-class"
	// FieldResolvedRuntime and FieldResolvedAcceleratorClass are the field
	// paths of the two pins, for errors that name them as the field at
	// fault (selection's Resolve); naming a path reads nothing.
	FieldResolvedRuntime          = "metadata.annotations[" + AnnotationResolvedRuntime + "]"
	FieldResolvedAcceleratorClass = "metadata.annotations[" + AnnotationResolvedAcceleratorClass + "]"
	// AnnotationResolvedInputs records a digest of the inputs the pinned
	// decision was made from, so an UPDATE re-resolves only when they change.
	AnnotationResolvedInputs = "ome.io/resolved-inputs"
	// AnnotationAcceleratorClass names the class explicitly (highest precedence).
	AnnotationAcceleratorClass = "ome.io/accelerator-class"
	// AnnotationRepin asks berth for a new decision: an UPDATE that sets it
	// to a value other than the stored one (berth repin writes the time) is
	// decided again, as on CREATE. Without it berth never moves a pinned
	// service, not even while its pinned runtime or class is deleted.
	AnnotationRepin = "ome.io/repin"
	// AnnotationSelectionStrategy overrides acceleratorSelector.strategy.
	AnnotationSelectionStrategy = "ome.io/selection-strategy"
	// AnnotationRevision is stamped on pods: a hash of what composed them.
	AnnotationRevision = "ome.io/revision"
	// AnnotationRestoredFrom marks a pod the reconciler created whole from
	// a recorded revision (value: the ControllerRevision's name), already
	// composed and stamped with that revision: the pod webhook does not
	// compose it again (a partition-protected group coming back as it was).
	AnnotationRestoredFrom = "ome.io/restored-from"
	// AnnotationKueueResourceFlavor links an AcceleratorClass to a Kueue flavor.
	AnnotationKueueResourceFlavor = "ome.io/kueue-resource-flavor"
	// LabelAutoDiscovered ("true") marks an AcceleratorClass the
	// reconciler's discovery made from GPU feature discovery node labels.
	// Discovery updates only classes carrying it; remove it to take a
	// class over by hand.
	LabelAutoDiscovered = "ome.io/auto-discovered"
	// LabelSyncedFrom marks what the reconciler's Kueue sync made, with the
	// kind of its source: an AcceleratorClass made from a ResourceFlavor
	// (SyncedFromResourceFlavor), or a ResourceFlavor made from an
	// AcceleratorClass's integration.kueueResourceFlavor
	// (SyncedFromAcceleratorClass). A flavor made from a class is owned by
	// it; a class made from a flavor is never owned by it (reinstalling
	// Kueue would delete it): annotation ome.io/kueue-resource-flavor
	// names its source.
	LabelSyncedFrom = "ome.io/synced-from"
	// SyncedFromResourceFlavor and SyncedFromAcceleratorClass are the
	// values of LabelSyncedFrom.
	SyncedFromResourceFlavor   = "resourceflavor"
	SyncedFromAcceleratorClass = "acceleratorclass"

	// AnnotationDecision holds the full ranking of the pinned decision: a
	// headline (what won), then one line per candidate that lost and why.
	// The webhook writes it whenever it decides; the reconciler quotes the
	// headline in the Resolved condition.
	AnnotationDecision = "ome.io/decision"
	// AnnotationRecreateCount is stamped by the reconciler on the pods of a
	// serving group it recreated after a failure: how many times in a row.
	AnnotationRecreateCount = "ome.io/recreate-count"

	// AnnotationModelDownloaderImage is pinned on an InferenceService by
	// its webhook when the model is downloaded into the pod: the image of
	// the downloader init container, so that later pods use the same one.
	AnnotationModelDownloaderImage = "ome.io/model-downloader-image"
	// AnnotationModelMetadataRevision is the reconciler's nudge on an
	// unpinned service waiting for its model's metadata: it changes when
	// the model becomes resolved, so the webhook decides on that UPDATE.
	AnnotationModelMetadataRevision = "ome.io/model-metadata-revision"
	// AnnotationRuntimeRevision is the reconciler's nudge on an unpinned
	// service waiting for the runtime its spec.runtime.name names:
	// <Kind>/<name>@<uid> of the runtime once it exists, so the webhook
	// decides on that UPDATE. Like the model's, it is not an input of the
	// decision: the webhook ignores its value.
	AnnotationRuntimeRevision = "ome.io/runtime-revision"

	// ComponentEngine, ComponentDecoder and ComponentRouter name components.
	ComponentEngine  = "engine"
	ComponentDecoder = "decoder"
	ComponentRouter  = "router"
)

// Condition types of an InferenceService.
const (
	// ConditionResolved: a runtime (and class) is pinned and still resolves.
	ConditionResolved = "Resolved"
	// ConditionReady: every desired serving group of every component is
	// Ready at the current revision or, during a roll, within bounds.
	ConditionReady = "Ready"
	// ConditionProgressing: groups are being created, rolled or scaled.
	ConditionProgressing = "Progressing"
	// ConditionDegraded: something needs a person: a pin that no longer
	// resolves, pods that cannot schedule or keep failing.
	ConditionDegraded = "Degraded"
)

// Condition types of an AcceleratorClass written by the reconciler's
// discovery (only on classes labelled LabelAutoDiscovered).
const (
	// ConditionStale: True when no node carries the class's product any
	// more (reason NoNodes), or an admin-made class now covers the same
	// nodes (reason Superseded). Discovery never deletes a class.
	ConditionStale = "Stale"
)

// Condition types of a BaseModel or ClusterBaseModel.
const (
	// ConditionMetadataResolved: the model's format, architecture and size
	// are known, from the spec or read from its files (status.discovered).
	// Its reason says why not when False.
	ConditionMetadataResolved = "MetadataResolved"
	// ConditionModelReady: the model can be served.
	ConditionModelReady = "Ready"
)
