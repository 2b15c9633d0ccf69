package v1beta1

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StorageScheme is the kind of storage a model's weights live in.
type StorageScheme string

// The storage schemes berth understands.
const (
	SchemeHF    StorageScheme = "hf"    // hf://org/repo[@revision], the Hugging Face Hub
	SchemeS3    StorageScheme = "s3"    // s3://bucket/prefix, any S3-compatible store
	SchemeGS    StorageScheme = "gs"    // gs://bucket/prefix, Google Cloud Storage
	SchemeOCI   StorageScheme = "oci"   // oci://n/{namespace}/b/{bucket}/o/{prefix}, OCI Object Storage
	SchemePVC   StorageScheme = "pvc"   // pvc://[{namespace}:]{claim}/{sub-path}, a PersistentVolumeClaim
	SchemeLocal StorageScheme = "local" // an absolute path on the node, or local:///path
)

// SupportedStorageSchemes names the accepted forms, for error messages.
const SupportedStorageSchemes = "hf://, s3://, gs://, oci://, pvc:// and absolute local paths"

// ErrStorageURI is wrapped by every ParseStorageURI error.
var ErrStorageURI = errors.New("invalid storage URI")

// StorageLocation is a parsed storage URI. Only the fields of its scheme
// are set.
type StorageLocation struct {
	Scheme StorageScheme
	// Repo and Revision (hf); Revision is empty for the default branch.
	Repo, Revision string
	// Namespace (oci), Bucket and Prefix (s3, gs, oci). Prefix has no
	// leading or trailing slash and may be empty.
	Namespace, Bucket, Prefix string
	// ClaimName and SubPath (pvc). SubPath may be empty. ClaimNamespace
	// is the namespace OME's form pvc://{namespace}:{claim}/{sub-path}
	// names (written for ClusterBaseModels); empty in the short form,
	// where the claim is in the namespace of the pods that mount it.
	ClaimNamespace, ClaimName, SubPath string
	// Path (local), cleaned and absolute.
	Path string
}

// Discoverable says whether berth reads the model's metadata from this
// storage: hf (the Hub's API), s3 (an S3-compatible API) and pvc (a
// short-lived inspector Job that mounts the claim). gs and oci are
// downloaded, never inspected, and a local (node) path is on nodes the
// reconciler cannot read: their models must declare modelFormat,
// modelArchitecture and modelParameterSize. Only a discoverable model
// awaits metadata (ModelAwaitsMetadata); any other is decided on what its
// spec declares, so it never waits for a discovery that cannot happen.
func (l StorageLocation) Discoverable() bool {
	switch l.Scheme {
	case SchemeHF, SchemeS3, SchemePVC:
		return true
	}
	return false
}

// StorageURIError is what ParseStorageURI returns: the URI and what is
// wrong with it, with the form expected.
type StorageURIError struct {
	URI    string
	Reason string
}

func (e *StorageURIError) Error() string {
	if e.URI == "" {
		return e.Reason
	}
	return fmt.Sprintf("storage URI %q: %s", e.URI, e.Reason)
}

// Unwrap makes errors.Is(err, ErrStorageURI) hold.
func (e *StorageURIError) Unwrap() error { return ErrStorageURI }

// ParseStorageURI parses a model's storage.storageUri. Unknown schemes and
// malformed URIs are *StorageURIError (wrapping ErrStorageURI) that say
// what form was expected.
func ParseStorageURI(uri string) (StorageLocation, error) {
	fail := func(format string, a ...any) (StorageLocation, error) {
		return StorageLocation{}, &StorageURIError{URI: uri, Reason: fmt.Sprintf(format, a...)}
	}
	if uri == "" {
		return StorageLocation{}, &StorageURIError{Reason: "storage URI is empty"}
	}
	if strings.HasPrefix(uri, "/") {
		return StorageLocation{Scheme: SchemeLocal, Path: path.Clean(uri)}, nil
	}
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		scheme = ""
	}
	switch StorageScheme(scheme) {
	case SchemeHF:
		return parseHF(rest, fail)
	case SchemeS3, SchemeGS:
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return fail("%s:// needs a bucket, as in %s://bucket/prefix", scheme, scheme)
		}
		return StorageLocation{Scheme: StorageScheme(scheme), Bucket: bucket, Prefix: strings.Trim(prefix, "/")}, nil
	case SchemeOCI:
		return parseOCI(rest, fail)
	case SchemePVC:
		return parsePVC(rest, fail)
	case SchemeLocal:
		if !strings.HasPrefix(rest, "/") {
			return fail("local paths are absolute, as in /raid/models or local:///raid/models")
		}
		return StorageLocation{Scheme: SchemeLocal, Path: path.Clean(rest)}, nil
	}
	return fail("unsupported scheme %q; supported: %s", scheme, SupportedStorageSchemes)
}

type failFunc func(format string, a ...any) (StorageLocation, error)

// parsePVC reads pvc://{claim}/{sub-path} and OME's
// pvc://{namespace}:{claim}/{sub-path}.
func parsePVC(rest string, fail failFunc) (StorageLocation, error) {
	claim, sub, _ := strings.Cut(rest, "/")
	ns, name, qualified := strings.Cut(claim, ":")
	if !qualified {
		ns, name = "", claim
	}
	switch {
	case qualified && ns == "":
		return fail("the namespace before ':' is empty, as in pvc://{namespace}:{claim}/{sub-path}")
	case name == "":
		return fail("pvc:// needs a claim name, as in pvc://{claim}/{sub-path} or pvc://{namespace}:{claim}/{sub-path}")
	}
	for _, seg := range strings.Split(sub, "/") {
		if seg == ".." {
			return fail("the sub-path may not leave the claim (..)")
		}
	}
	sub = strings.Trim(path.Clean("/"+sub), "/")
	return StorageLocation{Scheme: SchemePVC, ClaimNamespace: ns, ClaimName: name, SubPath: sub}, nil
}

func parseHF(rest string, fail failFunc) (StorageLocation, error) {
	repo, rev, hasRev := strings.Cut(rest, "@")
	parts := strings.Split(repo, "/")
	if repo == "" || len(parts) > 2 || parts[0] == "" || parts[len(parts)-1] == "" {
		return fail("hf:// needs a repository, as in hf://org/repo[@revision]")
	}
	if hasRev && rev == "" {
		return fail("the revision after @ is empty")
	}
	return StorageLocation{Scheme: SchemeHF, Repo: repo, Revision: rev}, nil
}

func parseOCI(rest string, fail failFunc) (StorageLocation, error) {
	p := strings.SplitN(rest, "/", 6)
	ok := len(p) >= 4 && p[0] == "n" && p[1] != "" && p[2] == "b" && p[3] != ""
	if ok && len(p) > 4 {
		ok = p[4] == "o"
	}
	if !ok {
		return fail("oci:// is written oci://n/{namespace}/b/{bucket}/o/{prefix}")
	}
	l := StorageLocation{Scheme: SchemeOCI, Namespace: p[1], Bucket: p[3]}
	if len(p) == 6 {
		l.Prefix = strings.Trim(p[5], "/")
	}
	return l, nil
}

// EffectiveModelSpec is the model as selection sees it: the spec, with
// every field the admin left unset filled from st.Discovered. What the
// admin wrote always wins. The result shares nothing with st.
func EffectiveModelSpec(spec BaseModelSpec, st ModelStatus) BaseModelSpec {
	out := *spec.DeepCopy()
	d := st.Discovered.DeepCopy()
	if d == nil {
		return out
	}
	if out.ModelFormat.Name == "" && d.ModelFormat != nil {
		f := *d.ModelFormat
		if v := out.ModelFormat.Version; v != nil {
			f.Version = v
		}
		if op := out.ModelFormat.Operator; op != nil {
			f.Operator = op
		}
		if w := out.ModelFormat.Weight; w != nil {
			f.Weight = w
		}
		out.ModelFormat = f
	}
	if out.ModelFramework == nil {
		out.ModelFramework = d.ModelFramework
	}
	if out.ModelType == nil {
		out.ModelType = d.ModelType
	}
	if out.ModelArchitecture == nil || *out.ModelArchitecture == "" {
		out.ModelArchitecture = d.ModelArchitecture
	}
	if out.Quantization == nil {
		out.Quantization = d.Quantization
	}
	if out.ModelParameterSize == nil || *out.ModelParameterSize == "" {
		out.ModelParameterSize = d.ModelParameterSize
	}
	if out.MaxTokens == nil {
		out.MaxTokens = d.MaxTokens
	}
	return out
}

// ModelAwaitsMetadata says whether selection must wait for the model's
// metadata: the spec lacks modelFormat.name, modelArchitecture or
// modelParameterSize, its storage URI is discoverable, and the
// MetadataResolved condition is not True for this generation (the
// reconciler sets the condition's observedGeneration). The string says
// what is missing and, when discovery failed, the condition's reason and
// message.
func ModelAwaitsMetadata(spec BaseModelSpec, st ModelStatus, generation int64) (bool, string) {
	var missing []string
	if spec.ModelFormat.Name == "" {
		missing = append(missing, "modelFormat.name")
	}
	if spec.ModelArchitecture == nil || *spec.ModelArchitecture == "" {
		missing = append(missing, "modelArchitecture")
	}
	if spec.ModelParameterSize == nil || *spec.ModelParameterSize == "" {
		missing = append(missing, "modelParameterSize")
	}
	if len(missing) == 0 || spec.Storage == nil || spec.Storage.StorageURI == nil {
		return false, ""
	}
	uri := *spec.Storage.StorageURI
	if loc, err := ParseStorageURI(uri); err != nil || !loc.Discoverable() {
		return false, ""
	}
	c := meta.FindStatusCondition(st.Conditions, ConditionMetadataResolved)
	if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation {
		return false, ""
	}
	verb := "are"
	if len(missing) == 1 {
		verb = "is"
	}
	msg := fmt.Sprintf("model metadata not yet known: %s %s not in the spec; discovery from %s ", joinAnd(missing), verb, uri)
	if c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == generation {
		return true, msg + "failed: " + c.Reason + ": " + c.Message
	}
	return true, msg + "is pending"
}

// joinAnd joins "a", "b" and "c" as "a, b and c".
func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
