package hubtest

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// The S3 server's fixed credentials, region and bucket.
const (
	S3AccessKeyID     = "AKIDHUBTEST"
	S3SecretAccessKey = "hubtest/secret+key"
	S3Region          = "us-east-1"
	S3Bucket          = "models"
)

// S3Server is a MinIO-style S3 API for tests: path-style addressing
// (/{bucket}/{key}), ListObjectsV2 (prefix, continuation-token, max-keys),
// GET with Range and HEAD, every request signed with AWS Signature Version
// 4 by S3AccessKeyID/S3SecretAccessKey for S3Region and verified, else
// S3's 403 error document (AccessDenied, InvalidAccessKeyId,
// SignatureDoesNotMatch). Bucket S3Bucket holds each repository's files
// under {repo ID}/, e.g. s3://models/Qwen/Qwen2.5-7B-Instruct/config.json;
// another bucket answers 404 NoSuchBucket.
type S3Server struct {
	*httptest.Server
	objects map[string]File // key -> file
	keys    []string        // sorted
}

// NewS3Server starts the S3 server on a loopback port serving repos
// (Models() when none are given). Close it when done.
func NewS3Server(repos ...*Repo) *S3Server {
	s := newS3(repos)
	s.Server = httptest.NewServer(s)
	return s
}

// NewS3ServerAt is NewS3Server listening on addr (host:port).
func NewS3ServerAt(addr string, repos ...*Repo) (*S3Server, error) {
	s := newS3(repos)
	srv, err := startAt(addr, s)
	if err != nil {
		return nil, fmt.Errorf("hubtest: the S3 server cannot listen on %s: %w", addr, err)
	}
	s.Server = srv
	return s, nil
}

func newS3(repos []*Repo) *S3Server {
	if len(repos) == 0 {
		repos = Models()
	}
	s := &S3Server{objects: map[string]File{}}
	for _, r := range repos {
		for _, f := range r.Files {
			s.objects[r.ID+"/"+f.Path] = f
		}
	}
	for k := range s.objects {
		s.keys = append(s.keys, k)
	}
	sort.Strings(s.keys)
	return s
}

func (s *S3Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if code, msg := verifySigV4(r); code != "" {
		s3Error(w, http.StatusForbidden, code, msg)
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case bucket != S3Bucket:
		s3Error(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
	case key == "" && r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
		s.list(w, r.URL.Query())
	case key != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		f, ok := s.objects[key]
		if !ok {
			s3Error(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
			return
		}
		serveFile(w, r, f)
	default:
		s3Error(w, http.StatusNotImplemented, "NotImplemented", "hubtest's S3 server only lists and reads")
	}
}

type s3Object struct {
	Key  string `xml:"Key"`
	Size int64  `xml:"Size"`
	ETag string `xml:"ETag"`
}

type listBucketResult struct {
	XMLName               xml.Name   `xml:"ListBucketResult"`
	Name                  string     `xml:"Name"`
	Prefix                string     `xml:"Prefix"`
	KeyCount              int        `xml:"KeyCount"`
	MaxKeys               int        `xml:"MaxKeys"`
	IsTruncated           bool       `xml:"IsTruncated"`
	Contents              []s3Object `xml:"Contents"`
	NextContinuationToken string     `xml:"NextContinuationToken,omitempty"`
}

// list answers ListObjectsV2; the continuation token is the last key sent.
func (s *S3Server) list(w http.ResponseWriter, q url.Values) {
	maxKeys := 1000
	if v, err := strconv.Atoi(q.Get("max-keys")); err == nil && v > 0 && v < maxKeys {
		maxKeys = v
	}
	res := listBucketResult{Name: S3Bucket, Prefix: q.Get("prefix"), MaxKeys: maxKeys}
	after := q.Get("continuation-token")
	for _, k := range s.keys {
		if !strings.HasPrefix(k, res.Prefix) || k <= after {
			continue
		}
		if len(res.Contents) == maxKeys {
			res.IsTruncated, res.NextContinuationToken = true, res.Contents[len(res.Contents)-1].Key
			break
		}
		res.Contents = append(res.Contents, s3Object{Key: k, Size: s.objects[k].Size, ETag: `"` + lfsSHA("", s.objects[k])[:32] + `"`})
	}
	res.KeyCount = len(res.Contents)
	w.Header().Set("Content-Type", "application/xml")
	_, _ = io.WriteString(w, xml.Header)
	_ = xml.NewEncoder(w).Encode(res)
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}
