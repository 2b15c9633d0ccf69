package merge

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// TestModelReadyLabel: OME's model agent's label keys. The long cases'
// hash prefixes are sha256 of the name (printf %s name | sha256sum).
func TestModelReadyLabel(t *testing.T) {
	tests := []struct {
		kind, ns, name string
		want, wantErr  string
	}{
		{kind: KindClusterBaseModel, name: "llama-3-1-8b-instruct", want: "models.ome.io/clusterbasemodel.llama-3-1-8b-instruct"},
		{kind: KindClusterBaseModel, ns: "ignored", name: "mixtral-8x7b", want: "models.ome.io/clusterbasemodel.mixtral-8x7b"},
		// 41 characters: hash prefix, dash, the last 23.
		{kind: KindClusterBaseModel, name: "deepseek-r1-distill-qwen-32b-instruct-awq", want: "models.ome.io/clusterbasemodel.bc3dc35f-l-qwen-32b-instruct-awq"},
		{kind: KindBaseModel, ns: "default", name: "base-model-1", want: "models.ome.io/default.basemodel.base-model-1"},
		// Namespace of 3 kept; the name gets 35: hash, dash, last 26.
		{kind: KindBaseModel, ns: "llm", name: "meta-llama-3-1-70b-instruct-fp8-dynamic", want: "models.ome.io/llm.basemodel.92af99f9-1-70b-instruct-fp8-dynamic"},
		// Namespace over 8 becomes its hash prefix; the name fits in 30.
		{kind: KindBaseModel, ns: "inference-platform-team", name: "deepseek-r1-distill-qwen-32b", want: "models.ome.io/512fddb4.basemodel.deepseek-r1-distill-qwen-32b"},
		{kind: "Model", name: "x", wantErr: `model kind "Model" is not BaseModel or ClusterBaseModel`},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			got, err := ModelReadyLabel(tc.kind, tc.ns, tc.name)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got)-len("models.ome.io/"), 49)
		})
	}
}

// TestDownloadSizeLimit: bytes (discovered, else parameters x bits) plus
// 20%, rounded up to a whole GiB. The expected values are worked out in
// the comments.
func TestDownloadSizeLimit(t *testing.T) {
	q := func(s string) *v1beta1.ModelQuantization { v := v1beta1.ModelQuantization(s); return &v }
	tests := []struct {
		name string
		spec v1beta1.BaseModelSpec
		disc *v1beta1.ModelMetadata
		want string // "" for no limit
	}{
		// 988,097,824 x 1.2 = 1,185,717,389 B = 1.10 GiB -> 2Gi.
		{name: "discovered weight bytes win", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("70B")},
			disc: &v1beta1.ModelMetadata{WeightsBytes: ptr(int64(988097824)), ParameterCount: ptr(int64(1))}, want: "2Gi"},
		// 8e9 x 16 bits = 16e9 B x 1.2 = 19.2e9 B = 17.88 GiB -> 18Gi.
		{name: "16-bit by default", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("8B")}, want: "18Gi"},
		// 8,030,261,248 x 2 B = 16,060,522,496 x 1.2 = 19,272,626,996 B = 17.95 GiB -> 18Gi.
		{name: "discovered parameter count over the human size", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("1B")},
			disc: &v1beta1.ModelMetadata{ParameterCount: ptr(int64(8030261248)), DType: "bfloat16"}, want: "18Gi"},
		// 500e6 x 4 B = 2e9 x 1.2 = 2.4e9 B = 2.24 GiB -> 3Gi.
		{name: "float32", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("500M")}, disc: &v1beta1.ModelMetadata{DType: "float32"}, want: "3Gi"},
		// 70e9 x 10 bits = 87.5e9 B x 1.2 = 105e9 B = 97.79 GiB -> 98Gi.
		{name: "fp8 counts 10 bits", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("70B"), Quantization: q("fp8")}, want: "98Gi"},
		{name: "fbgemm_fp8 too", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("70B"), Quantization: q("fbgemm_fp8")}, want: "98Gi"},
		// 7e9 x 6 bits = 5.25e9 B x 1.2 = 6.3e9 B = 5.87 GiB -> 6Gi.
		{name: "int4 counts 6 bits", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("7B"), Quantization: q("int4")}, want: "6Gi"},
		{name: "awq counts 6 bits", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr(" 7 b "), Quantization: q("AWQ")}, want: "6Gi"},
		// A scheme berth does not know: the dtype decides (16 bits).
		{name: "unknown scheme", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("8B"), Quantization: q("mystery")}, want: "18Gi"},
		{name: "no size", spec: v1beta1.BaseModelSpec{}},
		{name: "unreadable size", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("NaNB")}},
		{name: "absurd size", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("1e300T")}},
		{name: "negative discovered bytes fall back to the spec", spec: v1beta1.BaseModelSpec{ModelParameterSize: ptr("8B")},
			disc: &v1beta1.ModelMetadata{WeightsBytes: ptr(int64(-5))}, want: "18Gi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DownloadSizeLimit(tc.spec, tc.disc)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.String())
		})
	}
}

// gi is n GiB as DownloadSizeLimit writes it.
func gi(n int64) *resource.Quantity { return resource.NewQuantity(n<<30, resource.BinarySI) }

// modelInput is testdata/model-hf-download with the model replaced.
func modelInput(t *testing.T, storage *v1beta1.StorageSpec) Input {
	in, _ := loadCase(t, "testdata/model-hf-download")
	in.Model.Spec.Storage = storage
	return in
}

func composeEngine(t *testing.T, in Input) *corev1.Pod {
	t.Helper()
	pod := SkeletonPod(in.Service, in.Component, in.Group)
	require.NoError(t, ComposePod(in, pod))
	return pod
}

// TestModelErrors: inputs the model cannot reach the pod from are errors
// naming the field, for ComposePod and Revision alike.
func TestModelErrors(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(in *Input)
		wantErr string
	}{
		{name: "unknown scheme", mutate: func(in *Input) { in.Model.Spec.Storage.StorageURI = ptr("ftp://host/llama") },
			wantErr: `InferenceService llm/qwen: ClusterBaseModel qwen2-5-0-5b-instruct spec.storage.storageUri: storage URI "ftp://host/llama": unsupported scheme "ftp"; supported: hf://, s3://, gs://, oci://, pvc:// and absolute local paths`},
		{name: "no scheme", mutate: func(in *Input) { in.Model.Spec.Storage.StorageURI = ptr("Qwen/Qwen2.5") },
			wantErr: `InferenceService llm/qwen: ClusterBaseModel qwen2-5-0-5b-instruct spec.storage.storageUri: storage URI "Qwen/Qwen2.5": unsupported scheme ""; supported: hf://, s3://, gs://, oci://, pvc:// and absolute local paths`},
		{name: "pvc without a claim", mutate: func(in *Input) { in.Model.Spec.Storage.StorageURI = ptr("pvc:///models") },
			wantErr: `InferenceService llm/qwen: ClusterBaseModel qwen2-5-0-5b-instruct spec.storage.storageUri: storage URI "pvc:///models": pvc:// needs a claim name, as in pvc://{claim}/{sub-path} or pvc://{namespace}:{claim}/{sub-path}`},
		{name: "OME's pvc form with a claim of another namespace", mutate: func(in *Input) { in.Model.Spec.Storage.StorageURI = ptr("pvc://ai-models:weights/qwen") },
			wantErr: `InferenceService llm/qwen: ClusterBaseModel qwen2-5-0-5b-instruct spec.storage.storageUri: PersistentVolumeClaim "weights" is in namespace ai-models; pods of namespace llm cannot mount it`},
		{name: "BaseModel named with its namespace", mutate: func(in *Input) {
			in.Model.Kind, in.Model.Namespace = KindBaseModel, "llm"
			in.Model.Spec.Storage.StorageURI = ptr("gopher://x")
		}, wantErr: `InferenceService llm/qwen: BaseModel llm/qwen2-5-0-5b-instruct spec.storage.storageUri: storage URI "gopher://x": unsupported scheme "gopher"; supported: hf://, s3://, gs://, oci://, pvc:// and absolute local paths`},
		{name: "no downloader image", mutate: func(in *Input) { in.Service.Annotations = nil },
			wantErr: "InferenceService llm/qwen: ClusterBaseModel qwen2-5-0-5b-instruct is downloaded from hf://Qwen/Qwen2.5-0.5B-Instruct, but annotation ome.io/model-downloader-image naming the downloader image is not set; the InferenceService webhook pins it for downloaded models: re-apply the InferenceService, or set the annotation"},
		{name: "storageKey without the Secret", mutate: func(in *Input) { in.Model.Spec.Storage.StorageKey = ptr("config.json") },
			wantErr: `InferenceService llm/qwen: ClusterBaseModel qwen2-5-0-5b-instruct spec.storage.storageKey "config.json" names a key of a Secret, but spec.storage.key (the Secret's name) is not set`},
		{name: "node cache at a relative path", mutate: func(in *Input) { in.Model.Spec.Storage.Path = ptr("raid/models/qwen") },
			wantErr: `InferenceService llm/qwen: ClusterBaseModel qwen2-5-0-5b-instruct spec.storage.path "raid/models/qwen" is not an absolute path on the node`},
		{name: "path only, relative", mutate: func(in *Input) { in.Model.Spec.Storage = &v1beta1.StorageSpec{Path: ptr("models")} },
			wantErr: `InferenceService llm/qwen: ClusterBaseModel qwen2-5-0-5b-instruct spec.storage.path "models" is not an absolute path on the node`},
		{name: "unknown kind", mutate: func(in *Input) { in.Model.Kind = "Model" },
			wantErr: `InferenceService llm/qwen: model Model/qwen2-5-0-5b-instruct: kind "Model" is not BaseModel or ClusterBaseModel`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := loadCase(t, "testdata/model-hf-download")
			tc.mutate(&in)
			pod := SkeletonPod(in.Service, in.Component, in.Group)
			before := mustYAML(t, pod)
			require.EqualError(t, ComposePod(in, pod), tc.wantErr)
			assert.Equal(t, before, mustYAML(t, pod), "pod unchanged on error")
			_, err := Revision(in)
			require.EqualError(t, err, tc.wantErr)
		})
	}
}

// TestModelDelivery: how the model reaches its pods and what they
// reference, as the InferenceService webhook checks it.
func TestModelDelivery(t *testing.T) {
	tests := []struct {
		name    string
		storage *v1beta1.StorageSpec
		want    ModelDelivery
	}{
		{name: "no storage"},
		{name: "claim", storage: &v1beta1.StorageSpec{StorageURI: ptr("pvc://weights/llama"), Key: ptr("unused")},
			want: ModelDelivery{How: DeliveryClaim, Claim: "weights", Location: v1beta1.StorageLocation{Scheme: v1beta1.SchemePVC, ClaimName: "weights", SubPath: "llama"}}},
		{name: "node cache needs no Secret in the pod", storage: &v1beta1.StorageSpec{StorageURI: ptr("s3://b/llama"), Path: ptr("/raid/llama"), Key: ptr("s3")},
			want: ModelDelivery{How: DeliveryNodeCache, Location: v1beta1.StorageLocation{Scheme: v1beta1.SchemeS3, Bucket: "b", Prefix: "llama"}}},
		{name: "download with its Secret", storage: &v1beta1.StorageSpec{StorageURI: ptr("s3://b/llama"), Key: ptr("s3")},
			want: ModelDelivery{How: DeliveryDownload, Secret: "s3", Location: v1beta1.StorageLocation{Scheme: v1beta1.SchemeS3, Bucket: "b", Prefix: "llama"}}},
		{name: "path only", storage: &v1beta1.StorageSpec{Path: ptr("/opt/llama")},
			want: ModelDelivery{How: DeliveryHostPath, Location: v1beta1.StorageLocation{Scheme: v1beta1.SchemeLocal, Path: "/opt/llama"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &ModelMount{Kind: KindClusterBaseModel, Name: "llama", Spec: v1beta1.BaseModelSpec{Storage: tc.storage}}
			got, err := m.Delivery()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := (&ModelMount{Kind: KindBaseModel, Namespace: "ns", Name: "m", Spec: v1beta1.BaseModelSpec{
		Storage: &v1beta1.StorageSpec{StorageURI: ptr("webdav://x")}}}).Delivery()
	require.EqualError(t, err, `BaseModel ns/m spec.storage.storageUri: storage URI "webdav://x": unsupported scheme "webdav"; supported: hf://, s3://, gs://, oci://, pvc:// and absolute local paths`)
}

// TestModelSources: what each kind of storage adds to the runner's pod.
func TestModelSources(t *testing.T) {
	tests := []struct {
		name       string
		storage    *v1beta1.StorageSpec
		wantVolume corev1.VolumeSource
		wantMount  corev1.VolumeMount
		wantArgs   []string // downloader args; nil for none
		wantTerms  []corev1.NodeSelectorTerm
	}{
		{name: "hf revision in KServe's form", storage: &v1beta1.StorageSpec{StorageURI: ptr("hf://Qwen/Qwen2.5-0.5B-Instruct@7ae5576")},
			wantVolume: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: gi(2)}},
			wantMount:  corev1.VolumeMount{Name: "model", MountPath: "/mnt/models", ReadOnly: true},
			wantArgs:   []string{"hf://Qwen/Qwen2.5-0.5B-Instruct:7ae5576", "/mnt/models"}},
		{name: "gs download", storage: &v1beta1.StorageSpec{StorageURI: ptr("gs://bucket/qwen/")},
			wantVolume: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: gi(2)}},
			wantMount:  corev1.VolumeMount{Name: "model", MountPath: "/mnt/models", ReadOnly: true},
			wantArgs:   []string{"gs://bucket/qwen/", "/mnt/models"}},
		{name: "AlwaysDownload skips the node cache", storage: &v1beta1.StorageSpec{StorageURI: ptr("s3://b/q"), Path: ptr("/raid/q"), DownloadPolicy: ptr(v1beta1.AlwaysDownload)},
			wantVolume: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: gi(2)}},
			wantMount:  corev1.VolumeMount{Name: "model", MountPath: "/mnt/models", ReadOnly: true},
			wantArgs:   []string{"s3://b/q", "/mnt/models"}},
		{name: "ReuseIfExists uses the node cache", storage: &v1beta1.StorageSpec{StorageURI: ptr("s3://b/q"), Path: ptr("/raid/q/"), DownloadPolicy: ptr(v1beta1.ReuseIfExists)},
			wantVolume: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/raid/q", Type: ptr(corev1.HostPathDirectory)}},
			wantMount:  corev1.VolumeMount{Name: "model", MountPath: "/mnt/models", ReadOnly: true},
			wantTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "models.ome.io/clusterbasemodel.qwen2-5-0-5b-instruct", Operator: corev1.NodeSelectorOpIn, Values: []string{"Ready"}}}}}},
		{name: "pvc without a sub-path mounts the whole claim", storage: &v1beta1.StorageSpec{StorageURI: ptr("pvc://weights")},
			wantVolume: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "weights", ReadOnly: true}},
			wantMount:  corev1.VolumeMount{Name: "model", MountPath: "/mnt/models", ReadOnly: true}},
		{name: "OME's pvc form: the claim of the service's namespace", storage: &v1beta1.StorageSpec{StorageURI: ptr("pvc://llm:weights/qwen/")},
			wantVolume: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "weights", ReadOnly: true}},
			wantMount:  corev1.VolumeMount{Name: "model", MountPath: "/mnt/models", ReadOnly: true, SubPath: "qwen"}},
		{name: "local path: hostPath and the storage's nodes, no model-ready label", storage: &v1beta1.StorageSpec{
			StorageURI: ptr("local:///data/qwen"), NodeSelector: map[string]string{"b": "2", "a": "1"}},
			wantVolume: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/qwen", Type: ptr(corev1.HostPathDirectory)}},
			wantMount:  corev1.VolumeMount{Name: "model", MountPath: "/mnt/models", ReadOnly: true},
			wantTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "a", Operator: corev1.NodeSelectorOpIn, Values: []string{"1"}},
				{Key: "b", Operator: corev1.NodeSelectorOpIn, Values: []string{"2"}}}}}},
		{name: "path only: weights placed on the nodes beforehand", storage: &v1beta1.StorageSpec{Path: ptr("/opt/qwen")},
			wantVolume: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/opt/qwen", Type: ptr(corev1.HostPathDirectory)}},
			wantMount:  corev1.VolumeMount{Name: "model", MountPath: "/mnt/models", ReadOnly: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := composeEngine(t, modelInput(t, tc.storage))
			i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == ModelVolumeName })
			require.GreaterOrEqual(t, i, 0, "a model volume")
			assert.Equal(t, tc.wantVolume, pod.Spec.Volumes[i].VolumeSource)
			assert.Contains(t, pod.Spec.Containers[0].VolumeMounts, tc.wantMount)
			assert.Contains(t, pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "MODEL_PATH", Value: "/mnt/models"})
			if tc.wantArgs == nil {
				assert.Empty(t, pod.Spec.InitContainers)
			} else {
				require.Len(t, pod.Spec.InitContainers, 1)
				assert.Equal(t, tc.wantArgs, pod.Spec.InitContainers[0].Args)
			}
			if tc.wantTerms == nil {
				assert.Nil(t, pod.Spec.Affinity)
			} else {
				require.NotNil(t, pod.Spec.Affinity)
				assert.Equal(t, tc.wantTerms, pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
			}
		})
	}
}

// TestModelProvidedByLayers: a volume named model or a runner mount at
// /mnt/models from a layer (or the incoming pod) means the weights are
// provided: berth adds no volume, mount, downloader or affinity, only
// MODEL_PATH when no layer set it.
func TestModelProvidedByLayers(t *testing.T) {
	userVolume := corev1.Volume{Name: "model", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "mine"}}}
	tests := []struct {
		name         string
		mutate       func(in *Input, pod *corev1.Pod)
		wantVolumes  []corev1.Volume
		wantMounts   []corev1.VolumeMount
		wantModelEnv string
		wantInit     []string
	}{
		{name: "runtime volume named model", mutate: func(in *Input, _ *corev1.Pod) {
			in.Runtime.EngineConfig.Volumes = []corev1.Volume{userVolume}
			in.Runtime.EngineConfig.Runner.VolumeMounts = []corev1.VolumeMount{{Name: "model", MountPath: "/mnt/models"}}
		}, wantVolumes: []corev1.Volume{userVolume}, wantMounts: []corev1.VolumeMount{{Name: "model", MountPath: "/mnt/models"}}, wantModelEnv: "/mnt/models"},
		{name: "user mount at /mnt/models/ of another volume", mutate: func(in *Input, _ *corev1.Pod) {
			in.Service.Spec.Engine = &v1beta1.EngineSpec{
				PodSpec: v1beta1.PodSpec{Volumes: []corev1.Volume{{Name: "weights", VolumeSource: userVolume.VolumeSource}}},
				Runner:  &v1beta1.RunnerSpec{VolumeMounts: []corev1.VolumeMount{{Name: "weights", MountPath: "/mnt/models/"}}},
			}
		}, wantVolumes: []corev1.Volume{{Name: "weights", VolumeSource: userVolume.VolumeSource}},
			wantMounts: []corev1.VolumeMount{{Name: "weights", MountPath: "/mnt/models/"}}, wantModelEnv: "/mnt/models"},
		{name: "the incoming pod's volume named model", mutate: func(_ *Input, pod *corev1.Pod) {
			pod.Spec.Volumes = []corev1.Volume{userVolume}
		}, wantVolumes: []corev1.Volume{userVolume}, wantModelEnv: "/mnt/models"},
		{name: "a layer's MODEL_PATH stays", mutate: func(in *Input, _ *corev1.Pod) {
			in.Runtime.EngineConfig.Runner.Env = []corev1.EnvVar{{Name: "MODEL_PATH", Value: "/mnt/models/snapshot"}}
		}, wantVolumes: []corev1.Volume{{Name: "model", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: gi(2)}}}},
			wantMounts:   []corev1.VolumeMount{{Name: "model", MountPath: "/mnt/models", ReadOnly: true}},
			wantModelEnv: "/mnt/models/snapshot", wantInit: []string{"docker.io/kserve/storage-initializer:v0.15.2"}},
		{name: "a layer's model-downloader stays", mutate: func(in *Input, _ *corev1.Pod) {
			in.Service.Spec.Engine = &v1beta1.EngineSpec{PodSpec: v1beta1.PodSpec{InitContainers: []corev1.Container{{Name: "model-downloader", Image: "mine:1"}}}}
		}, wantVolumes: []corev1.Volume{{Name: "model", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: gi(2)}}}},
			wantMounts: []corev1.VolumeMount{{Name: "model", MountPath: "/mnt/models", ReadOnly: true}}, wantModelEnv: "/mnt/models", wantInit: []string{"mine:1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, pod := loadCase(t, "testdata/model-hf-download")
			in.Runtime = in.Runtime.DeepCopy()
			in.Service = in.Service.DeepCopy()
			tc.mutate(&in, pod)
			require.NoError(t, ComposePod(in, pod))
			assert.Equal(t, tc.wantVolumes, pod.Spec.Volumes)
			assert.Equal(t, tc.wantMounts, pod.Spec.Containers[0].VolumeMounts)
			var env []string
			for _, e := range pod.Spec.Containers[0].Env {
				if e.Name == EnvModelPath {
					env = append(env, e.Value)
				}
			}
			assert.Equal(t, []string{tc.wantModelEnv}, env, "one MODEL_PATH")
			var images []string
			for _, c := range pod.Spec.InitContainers {
				images = append(images, c.Image)
			}
			assert.Equal(t, tc.wantInit, images)
			assert.Nil(t, pod.Spec.Affinity)
			again := pod.DeepCopy()
			require.NoError(t, ComposePod(in, again))
			assert.Equal(t, mustYAML(t, pod), mustYAML(t, again), "idempotent")
		})
	}
}

// TestModelRouterNeverGetsTheModel: whatever the model's storage, the
// router pod has no model volume, mount, downloader or MODEL_PATH, and its
// revision ignores the model.
func TestModelRouterNeverGetsTheModel(t *testing.T) {
	for _, dir := range modelCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			in, _ := loadCase(t, dir)
			in.Component = v1beta1.ComponentRouter
			in.Group = GroupIdentity{}
			pod := composeEngine(t, in)
			assertNoModel(t, pod)
			withModel := mustRevision(t, in)
			in.Model = nil
			assert.Equal(t, withModel, mustRevision(t, in), "the router's revision does not depend on the model")
		})
	}
}

func assertNoModel(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	for _, v := range pod.Spec.Volumes {
		assert.NotEqual(t, ModelVolumeName, v.Name)
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		assert.NotEqual(t, ModelDownloaderName, c.Name)
		for _, m := range c.VolumeMounts {
			assert.NotEqual(t, ModelMountPath, m.MountPath, c.Name)
		}
		for _, e := range c.Env {
			assert.NotEqual(t, EnvModelPath, e.Name, c.Name)
		}
	}
}

// modelCases are the golden cases with a model.
func modelCases(t *testing.T) []string {
	var out []string
	for _, dir := range successCases(t) {
		if in, _ := loadCase(t, dir); in.Model != nil {
			out = append(out, dir)
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestModelComposeSurvivesTheAPIServer: the pod webhook is reinvoked on
// the pod as the API server decoded it (quantities reparsed, empty fields
// dropped); composing it again changes nothing.
func TestModelComposeSurvivesTheAPIServer(t *testing.T) {
	for _, dir := range modelCases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			in, pod := loadCase(t, dir)
			require.NoError(t, ComposePod(in, pod))
			b, err := json.Marshal(pod)
			require.NoError(t, err)
			var decoded corev1.Pod
			require.NoError(t, json.Unmarshal(b, &decoded))
			require.NoError(t, ComposePod(in, &decoded))
			assert.Equal(t, mustYAML(t, pod), mustYAML(t, &decoded))
		})
	}
}

// TestModelRevision: the model's storage is part of the revision; what
// only its status records (when it was read, from which commit) is not.
func TestModelRevision(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(in *Input)
		changes bool
	}{
		{name: "resolvedAt and source", mutate: func(in *Input) {
			in.Model.Discovered.ResolvedAt = &metav1.Time{}
			in.Model.Discovered.Source = "hf://Qwen/Qwen2.5-0.5B-Instruct@other"
		}},
		{name: "model labels and display name", mutate: func(in *Input) { in.Model.Spec.DisplayName = ptr("Qwen") }},
		{name: "weight bytes within the same GiB", mutate: func(in *Input) { in.Model.Discovered.WeightsBytes = ptr(int64(988097825)) }},
		{name: "weight bytes past a GiB", changes: true, mutate: func(in *Input) { in.Model.Discovered.WeightsBytes = ptr(int64(4 << 30)) }},
		{name: "storage URI", changes: true, mutate: func(in *Input) { in.Model.Spec.Storage.StorageURI = ptr("hf://Qwen/Qwen2.5-1.5B-Instruct") }},
		{name: "downloader image", changes: true, mutate: func(in *Input) {
			in.Service.Annotations = map[string]string{v1beta1.AnnotationModelDownloaderImage: "other:1"}
		}},
		{name: "no model", changes: true, mutate: func(in *Input) { in.Model = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := loadCase(t, "testdata/model-hf-download")
			rev := mustRevision(t, in)
			tc.mutate(&in)
			if tc.changes {
				assert.NotEqual(t, rev, mustRevision(t, in))
			} else {
				assert.Equal(t, rev, mustRevision(t, in))
			}
		})
	}
}

// TestNewModelMount: the effective spec (admin's fields win) and a copy
// of status.discovered that shares nothing with the status.
func TestNewModelMount(t *testing.T) {
	spec := v1beta1.BaseModelSpec{ModelArchitecture: ptr("Mine")}
	st := v1beta1.ModelStatus{Discovered: &v1beta1.ModelMetadata{ModelArchitecture: ptr("Theirs"), ModelParameterSize: ptr("8B"), WeightsBytes: ptr(int64(7))}}
	m := NewModelMount(KindBaseModel, "ns", "m", spec, st)
	assert.Equal(t, "Mine", *m.Spec.ModelArchitecture)
	assert.Equal(t, "8B", *m.Spec.ModelParameterSize)
	*st.Discovered.WeightsBytes = 9
	assert.Equal(t, int64(7), *m.Discovered.WeightsBytes)
	assert.Nil(t, NewModelMount(KindClusterBaseModel, "", "m", spec, v1beta1.ModelStatus{}).Discovered)
}

// FuzzModelStorage: whatever the storage fields, composing never panics;
// when it succeeds, composing again changes nothing and the pod has one
// model volume at most, mounted once by the runner.
func FuzzModelStorage(f *testing.F) {
	f.Add("hf://Qwen/Qwen2.5-0.5B-Instruct@main", "", "", "", false, "8B")
	f.Add("pvc://claim/a/../b", "/x", "k", "", true, "1.5T")
	f.Add("s3://b", "/raid", "secret", "cfg", false, "NaNB")
	f.Add("local:///m", "", "", "x", true, "")
	f.Add("", "relative", "", "", false, "-3B")
	base, _ := loadCase(f, "testdata/model-hf-download")
	f.Fuzz(func(t *testing.T, uri, p, key, storageKey string, always bool, size string) {
		in := base
		m := *base.Model
		m.Spec.ModelParameterSize = &size
		st := &v1beta1.StorageSpec{StorageURI: &uri, Path: &p, Key: &key, StorageKey: &storageKey}
		if always {
			st.DownloadPolicy = ptr(v1beta1.AlwaysDownload)
		}
		m.Spec.Storage = st
		in.Model = &m
		pod := SkeletonPod(in.Service, in.Component, in.Group)
		if err := ComposePod(in, pod); err != nil {
			return
		}
		once, err := json.Marshal(pod) // YAML refuses control characters
		require.NoError(t, err)
		require.NoError(t, ComposePod(in, pod))
		again, err := json.Marshal(pod)
		require.NoError(t, err)
		require.Equal(t, string(once), string(again))
		n := 0
		for _, v := range pod.Spec.Volumes {
			if v.Name == ModelVolumeName {
				n++
			}
		}
		require.LessOrEqual(t, n, 1)
		mounts := 0
		for _, vm := range pod.Spec.Containers[0].VolumeMounts {
			if vm.MountPath == ModelMountPath {
				mounts++
			}
		}
		require.Equal(t, n, mounts)
	})
}
