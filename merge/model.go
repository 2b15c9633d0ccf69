package merge

import (
	"fmt"
	"path"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/berthdev/berth/api/v1beta1"
)

// Where and how the model reaches engine and decoder pods (see the package
// documentation, "The model").
const (
	// ModelMountPath is where the runner finds the model's weights.
	ModelMountPath = "/mnt/models"
	// ModelVolumeName names the pod volume holding the weights.
	ModelVolumeName = "model"
	// ModelDownloaderName names the init container that downloads them.
	ModelDownloaderName = "model-downloader"
	// EnvModelPath tells the runner where the weights are (OME's runtimes
	// pass --model-path $(MODEL_PATH)).
	EnvModelPath = "MODEL_PATH"
	// EnvModelDir is KServe's name for it, which KServe's controller sets
	// on the head of a multi-node runtime (workerSpec) when it mounts the
	// model; berth sets it on the runner of such a runtime's leader pods.
	EnvModelDir = "MODEL_DIR"
)

// ModelMount is the model an InferenceService serves, as engine and
// decoder pods mount it. Build it with NewModelMount, so that the pod
// webhook and the reconciler pass the same one (the revision depends on it).
type ModelMount struct {
	Kind      string // KindBaseModel | KindClusterBaseModel
	Namespace string // the BaseModel's namespace; "" for a ClusterBaseModel
	Name      string
	// Spec is the effective spec: what the admin wrote, the rest filled
	// from status.discovered (v1beta1.EffectiveModelSpec).
	Spec v1beta1.BaseModelSpec
	// Discovered is the model's status.discovered; it only sizes the
	// download volume (DownloadSizeLimit).
	Discovered *v1beta1.ModelMetadata
}

// NewModelMount is the ModelMount of a BaseModel (namespace set) or a
// ClusterBaseModel (namespace "") from its spec and status.
func NewModelMount(kind, namespace, name string, spec v1beta1.BaseModelSpec, status v1beta1.ModelStatus) *ModelMount {
	m := &ModelMount{Kind: kind, Namespace: namespace, Name: name, Spec: v1beta1.EffectiveModelSpec(spec, status)}
	if status.Discovered != nil {
		m.Discovered = status.Discovered.DeepCopy()
	}
	return m
}

// ref names the model in error messages: "ClusterBaseModel llama" or
// "BaseModel team/llama".
func (m *ModelMount) ref() string {
	if m.Namespace == "" {
		return m.Kind + " " + m.Name
	}
	return m.Kind + " " + m.Namespace + "/" + m.Name
}

// modelPlan is what the model adds to an engine or decoder pod: the
// volume, the runner's mount, the downloader and the node affinity, each
// built fresh from the inputs (no aliasing).
type modelPlan struct {
	Volume     corev1.Volume
	Mount      corev1.VolumeMount
	Downloader *corev1.Container
	Affinity   *corev1.Affinity
	// Env names variables besides MODEL_PATH that the runner gets, set to
	// ModelMountPath, where it sets none: MODEL_DIR on the head of a
	// KServe multi-node runtime.
	Env []string
}

// Ways a model's weights reach engine and decoder pods (ModelDelivery.How).
const (
	DeliveryNone      = ""          // no storage: the runtime brings the weights
	DeliveryClaim     = "Claim"     // pvc://: the claim, read-only
	DeliveryHostPath  = "HostPath"  // a local path: already on the nodes
	DeliveryNodeCache = "NodeCache" // OME's node cache at storage.path, Ready nodes only
	DeliveryDownload  = "Download"  // the model-downloader init container
)

// ModelDelivery is how a model reaches its pods and what those pods
// reference in the service's namespace, for the webhook to check: the
// claim (DeliveryClaim) and the Secret (DeliveryDownload with
// spec.storage.key). A downloaded model needs the service annotation
// ome.io/model-downloader-image.
type ModelDelivery struct {
	How      string
	Location v1beta1.StorageLocation // the parsed storageUri (or storage.path)
	Claim    string
	Secret   string
}

// Delivery says how the model reaches engine and decoder pods; errors name
// the model's field.
func (m *ModelMount) Delivery() (ModelDelivery, error) {
	if m.Kind != KindBaseModel && m.Kind != KindClusterBaseModel {
		return ModelDelivery{}, fmt.Errorf("model %s/%s: kind %q is not %s or %s", m.Kind, m.Name, m.Kind, KindBaseModel, KindClusterBaseModel)
	}
	st := m.Spec.Storage
	if st == nil || (deref(st.StorageURI) == "" && deref(st.Path) == "") {
		return ModelDelivery{}, nil
	}
	uri, field := deref(st.StorageURI), "storageUri"
	if uri == "" {
		uri, field = deref(st.Path), "path" // weights placed on the nodes beforehand
		if err := absolutePath(m, uri); err != nil {
			return ModelDelivery{}, err
		}
	}
	loc, err := v1beta1.ParseStorageURI(uri)
	if err != nil {
		return ModelDelivery{}, fmt.Errorf("%s spec.storage.%s: %w", m.ref(), field, err)
	}
	d := ModelDelivery{Location: loc}
	switch {
	case loc.Scheme == v1beta1.SchemePVC:
		d.How, d.Claim = DeliveryClaim, loc.ClaimName
	case loc.Scheme == v1beta1.SchemeLocal:
		d.How = DeliveryHostPath
	case deref(st.Path) != "" && (st.DownloadPolicy == nil || *st.DownloadPolicy != v1beta1.AlwaysDownload):
		if err := absolutePath(m, *st.Path); err != nil {
			return ModelDelivery{}, err
		}
		d.How = DeliveryNodeCache
	default:
		d.How, d.Secret = DeliveryDownload, deref(st.Key)
		if key := deref(st.StorageKey); key != "" && d.Secret == "" {
			return ModelDelivery{}, fmt.Errorf("%s spec.storage.storageKey %q names a key of a Secret, but spec.storage.key (the Secret's name) is not set", m.ref(), key)
		}
	}
	return d, nil
}

// buildModelPlan decides how in.Model reaches the pod; nil when there is
// no model, no storage, or the component is the router.
func buildModelPlan(in Input) (*modelPlan, error) {
	m := in.Model
	if m == nil || in.Component == v1beta1.ComponentRouter {
		return nil, nil
	}
	d, err := m.Delivery()
	if err != nil {
		return nil, fmt.Errorf("InferenceService %s: %w", objectName(in.Service), err)
	}
	st := m.Spec.Storage
	mp := &modelPlan{
		Volume: corev1.Volume{Name: ModelVolumeName},
		Mount:  corev1.VolumeMount{Name: ModelVolumeName, MountPath: ModelMountPath, ReadOnly: true},
	}
	switch d.How {
	case DeliveryNone:
		return nil, nil
	case DeliveryClaim:
		if ns := d.Location.ClaimNamespace; ns != "" && ns != in.Service.Namespace {
			return nil, fmt.Errorf("InferenceService %s: %s spec.storage.storageUri: PersistentVolumeClaim %q is in namespace %s; pods of namespace %s cannot mount it",
				objectName(in.Service), m.ref(), d.Claim, ns, in.Service.Namespace)
		}
		mp.Volume.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.Claim, ReadOnly: true}
		mp.Mount.SubPath = d.Location.SubPath
	case DeliveryHostPath:
		mp.Volume.HostPath = hostPathDir(d.Location.Path)
		mp.Affinity = storageAffinity(st, nil)
	case DeliveryNodeCache:
		// The model agent keeps the weights at storage.path on the nodes
		// it labels Ready.
		label, err := ModelReadyLabel(m.Kind, m.Namespace, m.Name)
		if err != nil {
			return nil, err
		}
		mp.Volume.HostPath = hostPathDir(path.Clean(*st.Path))
		mp.Affinity = storageAffinity(st, &corev1.NodeSelectorRequirement{Key: label, Operator: corev1.NodeSelectorOpIn, Values: []string{ModelReadyValue}})
	default:
		mp.Volume.EmptyDir = &corev1.EmptyDirVolumeSource{SizeLimit: DownloadSizeLimit(m.Spec, m.Discovered)}
		if mp.Downloader, err = modelDownloader(in, m, d.Location, downloaderURI(*st.StorageURI, d.Location)); err != nil {
			return nil, err
		}
	}
	return mp, nil
}

// modelDownloader is the init container that fetches the weights into the
// model volume: KServe's storage-initializer contract, <uri> <dest>, with
// the credentials and endpoint of downloaderEnv.
func modelDownloader(in Input, m *ModelMount, loc v1beta1.StorageLocation, uri string) (*corev1.Container, error) {
	image := in.Service.Annotations[v1beta1.AnnotationModelDownloaderImage]
	if image == "" {
		return nil, fmt.Errorf("InferenceService %s: %s is downloaded from %s, but annotation %s naming the downloader image is not set; the InferenceService webhook pins it for downloaded models: re-apply the InferenceService, or set the annotation",
			objectName(in.Service), m.ref(), uri, v1beta1.AnnotationModelDownloaderImage)
	}
	c := &corev1.Container{
		Name:         ModelDownloaderName,
		Image:        image,
		Args:         []string{uri, ModelMountPath},
		VolumeMounts: []corev1.VolumeMount{{Name: ModelVolumeName, MountPath: ModelMountPath}},
	}
	var err error
	switch loc.Scheme {
	case v1beta1.SchemeHF:
		c.Env, c.EnvFrom, err = hfDownloaderEnv(m)
	case v1beta1.SchemeS3:
		c.Env, err = s3DownloaderEnv(m)
	default:
		c.Env, c.EnvFrom, err = storageConfigEnv(m)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// downloaderURI is the URI the downloader is given: the storage URI, with
// an hf:// revision written as KServe's storage initializer reads it
// (hf://org/repo:revision, where berth writes hf://org/repo@revision).
func downloaderURI(uri string, src v1beta1.StorageLocation) string {
	if src.Scheme == v1beta1.SchemeHF && src.Revision != "" {
		return "hf://" + src.Repo + ":" + src.Revision
	}
	return uri
}

// absolutePath checks storage.path where it is a hostPath.
func absolutePath(m *ModelMount, p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("%s spec.storage.path %q is not an absolute path on the node", m.ref(), p)
	}
	return nil
}

func hostPathDir(p string) *corev1.HostPathVolumeSource {
	return &corev1.HostPathVolumeSource{Path: p, Type: new(corev1.HostPathDirectory)}
}

// storageAffinity is the required node affinity of a model on the nodes:
// ready (OME's model-ready label, when given), storage.nodeSelector (In
// requirements, sorted by key) and storage.nodeAffinity's required terms,
// ANDed. Nil when there is none.
func storageAffinity(st *v1beta1.StorageSpec, ready *corev1.NodeSelectorRequirement) *corev1.Affinity {
	var reqs []corev1.NodeSelectorRequirement
	if ready != nil {
		reqs = append(reqs, *ready)
	}
	keys := make([]string, 0, len(st.NodeSelector))
	for k := range st.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{st.NodeSelector[k]}})
	}
	var sel *corev1.NodeSelector
	if len(reqs) > 0 {
		sel = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}}}
	}
	if na := st.NodeAffinity; na != nil {
		sel = AndNodeSelectors(sel, na.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	if sel == nil || len(sel.NodeSelectorTerms) == 0 {
		return nil
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel.DeepCopy()}}
}

// apply lays the model over a composed pod whose runner is
// spec.Containers[main]. A volume named ModelVolumeName or a runner mount
// at ModelMountPath that is not the model's own means a layer (or the
// incoming pod) provides the weights itself: then only MODEL_PATH is
// added. Everything is added only when absent, so applying twice changes
// nothing.
func (mp *modelPlan) apply(spec *corev1.PodSpec, main int) {
	runner := &spec.Containers[main]
	if !mp.provided(spec, runner) {
		if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == ModelVolumeName }) {
			spec.Volumes = append(spec.Volumes, *mp.Volume.DeepCopy())
		}
		if !slices.ContainsFunc(runner.VolumeMounts, isModelMount) {
			runner.VolumeMounts = append(runner.VolumeMounts, mp.Mount)
		}
		if mp.Downloader != nil && !slices.ContainsFunc(spec.InitContainers, func(c corev1.Container) bool { return c.Name == ModelDownloaderName }) {
			spec.InitContainers = append(spec.InitContainers, *mp.Downloader.DeepCopy())
		}
		spec.Affinity = MergeAffinity(spec.Affinity, mp.Affinity)
	}
	for _, name := range append([]string{EnvModelPath}, mp.Env...) {
		if !slices.ContainsFunc(runner.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
			runner.Env = append(runner.Env, corev1.EnvVar{Name: name, Value: ModelMountPath})
		}
	}
}

// provided reports whether the pod already has a model volume or mount
// that differs from the model's own.
func (mp *modelPlan) provided(spec *corev1.PodSpec, runner *corev1.Container) bool {
	for _, v := range spec.Volumes {
		if v.Name == ModelVolumeName && !equality.Semantic.DeepEqual(v, mp.Volume) {
			return true
		}
	}
	for _, vm := range runner.VolumeMounts {
		if isModelMount(vm) && !equality.Semantic.DeepEqual(vm, mp.Mount) {
			return true
		}
	}
	return false
}

func isModelMount(vm corev1.VolumeMount) bool { return path.Clean(vm.MountPath) == ModelMountPath }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
