package merge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// secretEnv is a variable read from key of Secret "creds".
func secretEnv(name, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: key, Optional: &optional}}}
}

// TestModelDownloaderCredentials: the downloader gets the credentials and
// endpoint discovery used, under the names both berth's downloader and
// KServe's storage initializer read.
func TestModelDownloaderCredentials(t *testing.T) {
	envFrom := []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Optional: ptr(false)}}}
	tests := []struct {
		name        string
		storage     *v1beta1.StorageSpec
		wantEnv     []corev1.EnvVar
		wantEnvFrom []corev1.EnvFromSource
	}{
		{name: "hf public: nothing", storage: &v1beta1.StorageSpec{StorageURI: ptr("hf://Qwen/Qwen2.5-0.5B-Instruct")}},
		{name: "hf token under key token, else HF_TOKEN (the Secret's keys)", storage: &v1beta1.StorageSpec{StorageURI: ptr("hf://meta/llama"), Key: ptr("creds")},
			wantEnv: []corev1.EnvVar{secretEnv("HF_TOKEN", "token", true)}, wantEnvFrom: envFrom},
		{name: "hf token under storageKey", storage: &v1beta1.StorageSpec{StorageURI: ptr("hf://meta/llama"), Key: ptr("creds"), StorageKey: ptr("hub")},
			wantEnv: []corev1.EnvVar{secretEnv("HF_TOKEN", "hub", false)}},
		{name: "hf mirror endpoint", storage: &v1beta1.StorageSpec{StorageURI: ptr("hf://meta/llama"), Parameters: map[string]string{"endpoint": "https://hf-mirror.com/"}},
			wantEnv: []corev1.EnvVar{{Name: "HF_ENDPOINT", Value: "https://hf-mirror.com"}}},
		{name: "s3 MinIO: keys, endpoint, region, path style", storage: &v1beta1.StorageSpec{StorageURI: ptr("s3://models/llama"), Key: ptr("creds"),
			Parameters: map[string]string{"endpoint": "http://minio.store:9000", "region": "eu-west-1", "pathStyle": "true"}},
			wantEnv: []corev1.EnvVar{
				secretEnv("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY_ID", false),
				secretEnv("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", false),
				secretEnv("AWS_SESSION_TOKEN", "AWS_SESSION_TOKEN", true),
				{Name: "AWS_ENDPOINT_URL", Value: "http://minio.store:9000"},
				{Name: "S3_ENDPOINT", Value: "minio.store:9000"},
				{Name: "S3_USE_HTTPS", Value: "0"},
				{Name: "AWS_DEFAULT_REGION", Value: "eu-west-1"},
				{Name: "AWS_REGION", Value: "eu-west-1"},
				{Name: "S3_USER_VIRTUAL_BUCKET", Value: "false"},
			}},
		{name: "s3 anonymous on AWS: nothing", storage: &v1beta1.StorageSpec{StorageURI: ptr("s3://models/llama")}},
		{name: "oci keeps KServe's storage config", storage: &v1beta1.StorageSpec{StorageURI: ptr("oci://n/ns/b/bucket/o/prefix"), Key: ptr("creds"), StorageKey: ptr("cfg")},
			wantEnv: []corev1.EnvVar{secretEnv("STORAGE_CONFIG", "cfg", false)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := composeEngine(t, modelInput(t, tc.storage))
			require.Len(t, pod.Spec.InitContainers, 1)
			c := pod.Spec.InitContainers[0]
			var env []corev1.EnvVar
			for _, e := range c.Env {
				if e.Name != EnvModelPath && !strings.HasPrefix(e.Name, "BERTH_") && !strings.HasPrefix(e.Name, "LWS_") {
					env = append(env, e)
				}
			}
			assert.Equal(t, tc.wantEnv, env)
			assert.Equal(t, tc.wantEnvFrom, c.EnvFrom)
		})
	}
}

// TestDownloadSizeLimitCountsTheDownload: the download volume holds every
// file of the repository, not only the weights.
func TestDownloadSizeLimitCountsTheDownload(t *testing.T) {
	// Llama-3.1-8B-Instruct: 16,060,522,496 weight bytes, 32,121,044,992
	// downloaded (original/ holds a second copy). x 1.1 = 35,333,149,492 B
	// = 32.9 GiB -> 33Gi.
	disc := &v1beta1.ModelMetadata{WeightsBytes: ptr(int64(16060522496)), DownloadBytes: ptr(int64(32121044992))}
	got := DownloadSizeLimit(v1beta1.BaseModelSpec{ModelParameterSize: ptr("8B")}, disc)
	require.NotNil(t, got)
	assert.Equal(t, "33Gi", got.String())
}

// TestModelDownloaderParameterErrors: parameters the downloader could not
// use are errors naming the parameter.
func TestModelDownloaderParameterErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		storage *v1beta1.StorageSpec
		want    string
	}{
		"s3 endpoint without a scheme": {&v1beta1.StorageSpec{StorageURI: ptr("s3://b/m"), Parameters: map[string]string{"endpoint": "minio:9000"}},
			`spec.storage.parameters.endpoint="minio:9000": want http(s)://host[:port][/path]`},
		"hf endpoint with credentials": {&v1beta1.StorageSpec{StorageURI: ptr("hf://o/r"), Parameters: map[string]string{"endpoint": "https://u:p@mirror"}},
			`spec.storage.parameters.endpoint holds credentials in the URL`},
		"pathStyle not a boolean": {&v1beta1.StorageSpec{StorageURI: ptr("s3://b/m"), Parameters: map[string]string{"endpoint": "http://minio:9000", "pathStyle": "yes"}},
			`spec.storage.parameters.pathStyle="yes": want true or false`},
	} {
		t.Run(name, func(t *testing.T) {
			in := modelInput(t, tc.storage)
			err := ComposePod(in, SkeletonPod(in.Service, in.Component, in.Group))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "ClusterBaseModel qwen2-5-0-5b-instruct")
			assert.NotContains(t, err.Error(), "u:p@", "credentials are never echoed")
		})
	}
}
