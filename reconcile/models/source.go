package models

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/modelmeta"
	"github.com/berthdev/berth/reconcile/plan"
)

// Keys of storage.parameters the model controller reads.
const (
	// ParamEndpoint: the Hub (hf://) or S3 API (s3://) base URL of this
	// model, e.g. https://hf-mirror.com or http://minio.example:9000.
	ParamEndpoint = "endpoint"
	// ParamRegion: the S3 region signed into requests (default us-east-1).
	ParamRegion = "region"
	// ParamPathStyle: "true" puts the bucket in the path (MinIO, OCI).
	ParamPathStyle = "pathStyle"
)

// Keys of the credentials Secret (storage.key).
const (
	// SecretKeyToken and SecretKeyHFToken hold a Hub token, tried in this
	// order unless storage.storageKey names the key.
	SecretKeyToken   = "token"
	SecretKeyHFToken = "HF_TOKEN"
	// S3 credentials, as the AWS tools name them.
	SecretKeyAccessKeyID     = "AWS_ACCESS_KEY_ID"
	SecretKeySecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	SecretKeySessionToken    = "AWS_SESSION_TOKEN"
)

// discover reads the model's files through its Source, within
// DiscoveryTimeout, and converts what they say.
func (c *Controller) discover(ctx context.Context, m *model, loc v1beta1.StorageLocation) plan.ModelOutcome {
	ctx, cancel := context.WithTimeout(ctx, c.opts.DiscoveryTimeout)
	defer cancel()
	src, fail := c.source(ctx, m, loc)
	if fail != nil {
		return *fail
	}
	md, err := modelmeta.Discover(ctx, src, modelmeta.Options{})
	if err != nil {
		return failure(string(modelmeta.ReasonOf(err)), err)
	}
	api := md.ToAPI()
	return plan.ModelOutcome{Metadata: &api}
}

// failure is an outcome from an error; the message drops modelmeta's
// "<Reason>: " prefix, which the condition's reason already says.
func failure(reason string, err error) plan.ModelOutcome {
	return plan.ModelOutcome{Reason: reason, Message: strings.TrimPrefix(err.Error(), reason+": ")}
}

// source builds the Source of an hf:// or s3:// model with its endpoint,
// parameters and credentials.
func (c *Controller) source(ctx context.Context, m *model, loc v1beta1.StorageLocation) (modelmeta.Source, *plan.ModelOutcome) {
	st := m.spec.Storage
	uri := *st.StorageURI
	if fail := endpointRefused(m, st.Parameters[ParamEndpoint], c.opts.NamespacedEndpoints); fail != nil {
		return nil, fail // before the Secret is read: its token would go there
	}
	data, fail := c.credentials(ctx, m)
	if fail != nil {
		return nil, fail
	}
	var src modelmeta.Source
	var err error
	switch loc.Scheme {
	case v1beta1.SchemeHF:
		o := modelmeta.HFOptions{Endpoint: c.opts.HFEndpoint, Client: c.opts.HTTPClient}
		if e := st.Parameters[ParamEndpoint]; e != "" {
			o.Endpoint = e
		}
		if data != nil {
			if o.Token, fail = hfToken(m, data); fail != nil {
				return nil, fail
			}
		}
		src, err = modelmeta.NewHF(uri, o)
	case v1beta1.SchemeS3:
		o := modelmeta.S3Options{Endpoint: st.Parameters[ParamEndpoint], Region: st.Parameters[ParamRegion], Client: c.opts.HTTPClient}
		if v := st.Parameters[ParamPathStyle]; v != "" {
			if o.PathStyle, err = strconv.ParseBool(v); err != nil {
				return nil, &plan.ModelOutcome{Reason: plan.ReasonInvalidStorageURI, Message: fmt.Sprintf("storage.parameters.%s=%q is not true or false", ParamPathStyle, v)}
			}
		}
		if data != nil {
			if o.Credentials, fail = s3Credentials(m, data); fail != nil {
				return nil, fail
			}
		}
		src, err = modelmeta.NewS3(uri, o)
	default:
		return nil, &plan.ModelOutcome{Reason: plan.ReasonUnsupported, Message: fmt.Sprintf("berth cannot read %s:// models", loc.Scheme)}
	}
	if err != nil {
		return nil, &plan.ModelOutcome{Reason: plan.ReasonInvalidStorageURI, Message: "storage: " + err.Error()}
	}
	return src, nil
}

// endpointRefused says why a model may not move its reads to endpoint
// (storage.parameters.endpoint), nil when it may: none is set, the model
// is a ClusterBaseModel (an admin's), or endpoint is one of allowed
// (compared without a trailing slash). A BaseModel's author may not hold
// its namespace's Secrets; honouring any endpoint would send the token of
// the Secret the model names (and the reconciler's requests) wherever the
// author points.
func endpointRefused(m *model, endpoint string, allowed []string) *plan.ModelOutcome {
	if endpoint == "" || m.kind != KindBaseModel {
		return nil
	}
	for _, a := range allowed {
		if strings.TrimSuffix(a, "/") == strings.TrimSuffix(endpoint, "/") {
			return nil
		}
	}
	return &plan.ModelOutcome{Reason: plan.ReasonEndpointNotAllowed, Message: fmt.Sprintf(
		"%s: storage.parameters.endpoint %q is not one the reconciler allows for namespaced models (--model-namespaced-endpoints: %s); ask an admin to allow it, or use a ClusterBaseModel",
		m.ref(), endpoint, strings.Join(allowed, ", "))}
}

// credentialsNamespace is where a model's Secret lives: a BaseModel's
// namespace, or the configured namespace for a ClusterBaseModel.
func (c *Controller) credentialsNamespace(m *model) string {
	if m.kind == KindBaseModel {
		return m.namespace
	}
	return c.opts.CredentialsNamespace
}

// credentials reads the Secret named by storage.key with a direct GET
// (Secrets are never cached or watched); nil data when the model names
// none.
func (c *Controller) credentials(ctx context.Context, m *model) (map[string][]byte, *plan.ModelOutcome) {
	st := m.spec.Storage
	if st.Key == nil || *st.Key == "" {
		return nil, nil
	}
	ns, name := c.credentialsNamespace(m), *st.Key
	s, err := c.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, &plan.ModelOutcome{Reason: plan.ReasonCredentialsMissing, Message: fmt.Sprintf(
			"%s: Secret %s/%s named by storage.key does not exist; create it, then the next retry reads it", m.ref(), ns, name)}
	case apierrors.IsForbidden(err):
		return nil, &plan.ModelOutcome{Reason: plan.ReasonCredentialsMissing, Message: fmt.Sprintf(
			"%s: berth-reconciler may not read Secret %s/%s named by storage.key: %v", m.ref(), ns, name, err)}
	case err != nil:
		return nil, &plan.ModelOutcome{Reason: plan.ReasonUnavailable, Message: fmt.Sprintf(
			"%s: reading Secret %s/%s: %v", m.ref(), ns, name, err)}
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData { // only set on objects never stored; harmless
		s.Data[k] = []byte(v)
	}
	return s.Data, nil
}

// hfToken is the Hub token: the key storage.storageKey names, else
// "token", else "HF_TOKEN".
func hfToken(m *model, data map[string][]byte) (string, *plan.ModelOutcome) {
	keys := []string{SecretKeyToken, SecretKeyHFToken}
	if k := m.spec.Storage.StorageKey; k != nil && *k != "" {
		keys = []string{*k}
	}
	for _, k := range keys {
		if v := strings.TrimSpace(string(data[k])); v != "" {
			return v, nil
		}
	}
	return "", &plan.ModelOutcome{Reason: plan.ReasonCredentialsMissing, Message: fmt.Sprintf(
		"%s: Secret %s named by storage.key has no key %s with a Hub token", m.ref(), *m.spec.Storage.Key, strings.Join(keys, " or "))}
}

// s3Credentials reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and,
// optionally, AWS_SESSION_TOKEN.
func s3Credentials(m *model, data map[string][]byte) (modelmeta.S3Credentials, *plan.ModelOutcome) {
	cr := modelmeta.S3Credentials{
		AccessKeyID:     strings.TrimSpace(string(data[SecretKeyAccessKeyID])),
		SecretAccessKey: strings.TrimSpace(string(data[SecretKeySecretAccessKey])),
		SessionToken:    strings.TrimSpace(string(data[SecretKeySessionToken])),
	}
	if cr.AccessKeyID == "" || cr.SecretAccessKey == "" {
		return cr, &plan.ModelOutcome{Reason: plan.ReasonCredentialsMissing, Message: fmt.Sprintf(
			"%s: Secret %s named by storage.key needs keys %s and %s", m.ref(), *m.spec.Storage.Key, SecretKeyAccessKeyID, SecretKeySecretAccessKey)}
	}
	return cr, nil
}
