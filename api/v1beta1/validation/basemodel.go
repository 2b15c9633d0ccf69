package validation

import (
	"errors"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ValidateBaseModelSpec checks a BaseModel's or ClusterBaseModel's storage:
//
//  1. storage.storageUri, when given, parses (v1beta1.ParseStorageURI): a
//     known scheme (hf, s3, gs, oci, pvc or an absolute local path) in its
//     form; the error names the supported schemes or the expected form;
//  2. a pvc:// URI names a claim that is a valid object name, and in
//     OME's form pvc://{namespace}:{claim}/{sub-path} a valid namespace;
//  3. storage.downloadPolicy is AlwaysDownload or ReuseIfExists;
//  4. storage.path, the node cache directory, is absolute.
func ValidateBaseModelSpec(spec *v1beta1.BaseModelSpec, p *field.Path) field.ErrorList {
	if spec == nil || spec.Storage == nil {
		return nil
	}
	st, sp := spec.Storage, p.Child("storage")
	var errs field.ErrorList
	if st.StorageURI != nil {
		errs = append(errs, validateStorageURI(sp.Child("storageUri"), *st.StorageURI)...)
	}
	if d := st.DownloadPolicy; d != nil && *d != v1beta1.AlwaysDownload && *d != v1beta1.ReuseIfExists {
		errs = append(errs, field.NotSupported(sp.Child("downloadPolicy"), *d,
			[]string{string(v1beta1.AlwaysDownload), string(v1beta1.ReuseIfExists)}))
	}
	if st.Path != nil && *st.Path != "" && !path.IsAbs(*st.Path) {
		errs = append(errs, field.Invalid(sp.Child("path"), *st.Path,
			"the node path of the model cache must be absolute, e.g. /raid/models/meta/llama-3-1-8b-instruct"))
	}
	return errs
}

func validateStorageURI(p *field.Path, uri string) field.ErrorList {
	loc, err := v1beta1.ParseStorageURI(uri)
	var ue *v1beta1.StorageURIError
	switch {
	case uri == "":
		return field.ErrorList{field.Required(p, "storage URI is empty")}
	case errors.As(err, &ue):
		return field.ErrorList{field.Invalid(p, uri, ue.Reason)}
	case err != nil:
		return field.ErrorList{field.Invalid(p, uri, err.Error())}
	case loc.Scheme == v1beta1.SchemePVC:
		if msgs := validation.IsDNS1123Subdomain(loc.ClaimName); len(msgs) > 0 {
			return field.ErrorList{field.Invalid(p, uri, `claim name "`+loc.ClaimName+`" is not a valid PersistentVolumeClaim name: `+strings.Join(msgs, "; "))}
		}
		if ns := loc.ClaimNamespace; ns != "" {
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				return field.ErrorList{field.Invalid(p, uri, `claim namespace "`+ns+`" is not a valid namespace name: `+strings.Join(msgs, "; "))}
			}
		}
	}
	return nil
}
