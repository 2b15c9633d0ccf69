package merge

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Variables the model downloader reads (see the package documentation,
// "The downloader's credentials"): names berth's downloader (berth model
// download) and KServe's storage initializer both read.
const (
	EnvHFToken            = "HF_TOKEN"
	EnvHFEndpoint         = "HF_ENDPOINT"
	EnvAWSAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvAWSSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	EnvAWSSessionToken    = "AWS_SESSION_TOKEN"
	EnvAWSEndpointURL     = "AWS_ENDPOINT_URL"
	EnvS3Endpoint         = "S3_ENDPOINT"
	EnvS3UseHTTPS         = "S3_USE_HTTPS"
	EnvAWSDefaultRegion   = "AWS_DEFAULT_REGION"
	EnvAWSRegion          = "AWS_REGION"
	// EnvS3VirtualBucket is KServe's switch to virtual-host addressing
	// (bucket.endpoint/key); "false" is path style (endpoint/bucket/key).
	EnvS3VirtualBucket = "S3_USER_VIRTUAL_BUCKET"
	// EnvStorageConfig and EnvStorageOverrideConfig are KServe's JSON
	// storage configuration, for schemes berth does not discover (gs://,
	// oci://): the Secret's key spec.storage.storageKey, and
	// spec.storage.parameters as JSON.
	EnvStorageConfig         = "STORAGE_CONFIG"
	EnvStorageOverrideConfig = "STORAGE_OVERRIDE_CONFIG"
)

// Keys of spec.storage.parameters and of the credentials Secret, as the
// model controller's discovery reads them (models.ParamEndpoint ...,
// models.SecretKeyToken ..., package reconcile/models).
const (
	paramEndpoint  = "endpoint"
	paramRegion    = "region"
	paramPathStyle = "pathStyle"
	secretKeyToken = "token"
)

// hfDownloaderEnv: HF_TOKEN from the Secret's key storage.storageKey when
// set, else from its key "token" (optional) with the whole Secret as
// envFrom, so that a key HF_TOKEN arrives as itself and "token" wins, as
// in discovery; storage.parameters.endpoint as HF_ENDPOINT.
func hfDownloaderEnv(m *ModelMount) ([]corev1.EnvVar, []corev1.EnvFromSource, error) {
	st := m.Spec.Storage
	var env []corev1.EnvVar
	var from []corev1.EnvFromSource
	secret, key := deref(st.Key), deref(st.StorageKey)
	switch {
	case secret != "" && key != "":
		env = append(env, secretEnvVar(EnvHFToken, secret, key, false))
	case secret != "":
		env = append(env, secretEnvVar(EnvHFToken, secret, secretKeyToken, true))
		from = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Optional: new(false),
		}}}
	}
	if e := st.Parameters[paramEndpoint]; e != "" {
		u, err := endpointURL(m, e)
		if err != nil {
			return nil, nil, err
		}
		env = append(env, corev1.EnvVar{Name: EnvHFEndpoint, Value: strings.TrimRight(u.String(), "/")})
	}
	return env, from, nil
}

// s3DownloaderEnv: the Secret's keys AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (required) and AWS_SESSION_TOKEN (optional), and
// storage.parameters endpoint, region and pathStyle.
func s3DownloaderEnv(m *ModelMount) ([]corev1.EnvVar, error) {
	st := m.Spec.Storage
	var env []corev1.EnvVar
	if secret := deref(st.Key); secret != "" {
		env = append(env,
			secretEnvVar(EnvAWSAccessKeyID, secret, EnvAWSAccessKeyID, false),
			secretEnvVar(EnvAWSSecretAccessKey, secret, EnvAWSSecretAccessKey, false),
			secretEnvVar(EnvAWSSessionToken, secret, EnvAWSSessionToken, true))
	}
	if e := st.Parameters[paramEndpoint]; e != "" {
		u, err := endpointURL(m, e)
		if err != nil {
			return nil, err
		}
		https := "0"
		if u.Scheme == "https" {
			https = "1"
		}
		env = append(env,
			corev1.EnvVar{Name: EnvAWSEndpointURL, Value: strings.TrimRight(u.String(), "/")},
			corev1.EnvVar{Name: EnvS3Endpoint, Value: u.Host},
			corev1.EnvVar{Name: EnvS3UseHTTPS, Value: https})
	}
	if r := st.Parameters[paramRegion]; r != "" {
		env = append(env, corev1.EnvVar{Name: EnvAWSDefaultRegion, Value: r}, corev1.EnvVar{Name: EnvAWSRegion, Value: r})
	}
	if st.Parameters[paramEndpoint] != "" {
		pathStyle := false
		if v := st.Parameters[paramPathStyle]; v != "" {
			var err error
			if pathStyle, err = strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("%s spec.storage.parameters.%s=%q: want true or false", m.ref(), paramPathStyle, v)
			}
		}
		env = append(env, corev1.EnvVar{Name: EnvS3VirtualBucket, Value: strconv.FormatBool(!pathStyle)})
	}
	return env, nil
}

// storageConfigEnv is KServe's form, for schemes berth does not discover:
// the Secret's key storageKey as STORAGE_CONFIG, else the whole Secret as
// envFrom; parameters as STORAGE_OVERRIDE_CONFIG.
func storageConfigEnv(m *ModelMount) ([]corev1.EnvVar, []corev1.EnvFromSource, error) {
	st := m.Spec.Storage
	var env []corev1.EnvVar
	var from []corev1.EnvFromSource
	secret, key := deref(st.Key), deref(st.StorageKey)
	switch {
	case key != "":
		env = append(env, secretEnvVar(EnvStorageConfig, secret, key, false))
	case secret != "":
		from = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Optional: new(false),
		}}}
	}
	if len(st.Parameters) > 0 {
		b, err := json.Marshal(st.Parameters) // keys sorted
		if err != nil {
			return nil, nil, fmt.Errorf("%s spec.storage.parameters: %w", m.ref(), err)
		}
		env = append(env, corev1.EnvVar{Name: EnvStorageOverrideConfig, Value: string(b)})
	}
	return env, from, nil
}

func secretEnvVar(name, secret, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key, Optional: new(optional),
	}}}
}

// endpointURL parses storage.parameters.endpoint: http(s)://host[:port][/path].
func endpointURL(m *ModelMount, e string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(e))
	if err == nil && u.User != nil {
		return nil, fmt.Errorf("%s spec.storage.parameters.%s holds credentials in the URL; put them in the Secret named by spec.storage.key", m.ref(), paramEndpoint)
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return nil, fmt.Errorf("%s spec.storage.parameters.%s=%q: want http(s)://host[:port][/path], without credentials or query", m.ref(), paramEndpoint, e)
	}
	return u, nil
}
