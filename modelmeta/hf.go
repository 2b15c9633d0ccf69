package modelmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Hub defaults.
const (
	DefaultHFEndpoint   = "https://huggingface.co"
	DefaultHFRevision   = "main"
	DefaultHFTimeout    = 30 * time.Second
	DefaultHFMaxAPIBody = 16 << 20
)

// HFOptions configure NewHF. The zero value reads public models from
// huggingface.co.
type HFOptions struct {
	// Endpoint is the Hub's base URL; a mirror's (e.g. https://hf-mirror.com)
	// works the same. Default DefaultHFEndpoint.
	Endpoint string
	// Token, when set, is sent as "Authorization: Bearer <token>". It is
	// needed for private and gated models and never appears in Describe or
	// in errors.
	Token string
	// Client is the HTTP client; default a client with Timeout.
	Client *http.Client
	// Timeout bounds each request when Client is nil. Default 30s.
	Timeout time.Duration
	// MaxAPIBody caps the model-info JSON. Default 16 MiB.
	MaxAPIBody int64
}

// HF reads a model from the Hugging Face Hub (or a mirror) with two routes:
//
//	GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true
//	    the commit sha and the files ("siblings") with their sizes
//	GET {endpoint}/{repo}/resolve/{sha}/{file} with a Range header
//	    a byte range of one file (the Hub redirects LFS files to its CDN;
//	    the Range header follows the redirect, the token does not leave
//	    the endpoint's host)
//
// After List, reads use the resolved commit sha so that every file comes from
// the same commit even if the branch moves.
type HF struct {
	endpoint string
	repo     string
	revision string
	sha      string
	token    string
	sums     map[string]string // LFS files' sha256 from the last List
	client   *http.Client
	maxBody  int64
}

var hfRepoRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)

// NewHF parses hf://org/repo[@revision] (revision: a branch, tag or commit;
// default main).
func NewHF(uri string, o HFOptions) (*HF, error) {
	rest, ok := strings.CutPrefix(uri, "hf://")
	if !ok {
		return nil, fmt.Errorf("%q is not an hf:// URI (hf://org/repo[@revision])", uri)
	}
	repo, rev, hasRev := strings.Cut(rest, "@")
	repo = strings.TrimSuffix(repo, "/")
	if !hfRepoRE.MatchString(repo) || strings.Contains(repo, "..") {
		return nil, fmt.Errorf("%q: the repository must be org/name of letters, digits, '.', '_' and '-'", uri)
	}
	if hasRev && (rev == "" || strings.ContainsAny(rev, " \t\n?#")) {
		return nil, fmt.Errorf("%q: the revision after @ must be a branch, tag or commit", uri)
	}
	if !hasRev {
		rev = DefaultHFRevision
	}
	endpoint := strings.TrimRight(o.Endpoint, "/")
	if endpoint == "" {
		endpoint = DefaultHFEndpoint
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("hub endpoint %q is not an http(s) URL", o.Endpoint)
	}
	h := &HF{endpoint: endpoint, repo: repo, revision: rev, token: o.Token, client: o.Client, maxBody: o.MaxAPIBody}
	if h.client == nil {
		timeout := o.Timeout
		if timeout <= 0 {
			timeout = DefaultHFTimeout
		}
		h.client = &http.Client{Timeout: timeout}
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultHFMaxAPIBody
	}
	return h, nil
}

// Describe is hf://org/repo@<commit sha> once List has run, and
// hf://org/repo@<revision> before.
func (h *HF) Describe() string {
	rev := h.revision
	if h.sha != "" {
		rev = h.sha
	}
	return "hf://" + h.repo + "@" + rev
}

func (h *HF) repoPath() string {
	org, name, ok := strings.Cut(h.repo, "/")
	if !ok {
		return url.PathEscape(org)
	}
	return url.PathEscape(org) + "/" + url.PathEscape(name)
}

// List fetches the model info of the revision.
func (h *HF) List(ctx context.Context) ([]File, error) {
	u := h.endpoint + "/api/models/" + h.repoPath() + "/revision/" + url.PathEscape(h.revision) + "?blobs=true"
	resp, err := h.do(ctx, u, "", "")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, h.maxBody+1))
	if err != nil {
		return nil, &Error{Reason: ReasonUnavailable, Message: "reading the model info failed", Err: err}
	}
	if int64(len(body)) > h.maxBody {
		return nil, Errorf(ReasonTooLarge, "", "the Hub's model info is more than %d bytes", h.maxBody)
	}
	var info struct {
		SHA      string `json:"sha"`
		Siblings []struct {
			RFilename string `json:"rfilename"`
			Size      *int64 `json:"size"`
			LFS       *struct {
				SHA256 string `json:"sha256"`
			} `json:"lfs"`
		} `json:"siblings"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, Errorf(ReasonUnavailable, "", "the Hub's model info is not the expected JSON: %v", err)
	}
	files := make([]File, 0, len(info.Siblings))
	sums := map[string]string{}
	for _, s := range info.Siblings {
		f := File{Path: s.RFilename, Size: -1}
		if s.Size != nil && *s.Size >= 0 {
			f.Size = *s.Size
		}
		if s.LFS != nil && len(s.LFS.SHA256) == 64 {
			sums[s.RFilename] = strings.ToLower(s.LFS.SHA256)
		}
		files = append(files, f)
	}
	h.sums = sums
	h.sha = info.SHA
	return files, nil
}

// SHA256 is the sha256 (hex) the Hub's last List gave for path, an LFS
// file; "" for other files or before List.
func (h *HF) SHA256(path string) string { return h.sums[path] }

// ReadRange fetches bytes [offset, offset+length) of path with a Range
// request. A server that ignores Range (200) has its first offset bytes
// skipped; the reader never yields more than length bytes.
func (h *HF) ReadRange(ctx context.Context, path string, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 || length <= 0 {
		return nil, fmt.Errorf("bad range offset %d length %d", offset, length)
	}
	rev := h.revision
	if h.sha != "" {
		rev = h.sha
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	u := h.endpoint + "/" + h.repoPath() + "/resolve/" + url.PathEscape(rev) + "/" + strings.Join(segs, "/")
	resp, err := h.do(ctx, u, path, fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusOK:
		if _, err := io.CopyN(io.Discard, resp.Body, offset); err != nil {
			_ = resp.Body.Close()
			return io.NopCloser(strings.NewReader("")), nil
		}
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, length), resp.Body}, nil
}

// do sends a GET and maps the Hub's refusals to Reasons. A 416 (range past
// the end of the file) is returned as an empty 206.
func (h *HF) do(ctx context.Context, u, file, rng string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	req.Header.Set("User-Agent", "berth-modelmeta")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, &Error{Reason: ReasonUnavailable, File: file, Message: "the Hub did not answer", Err: err}
	}
	switch code := resp.StatusCode; {
	case code == http.StatusOK || code == http.StatusPartialContent:
		return resp, nil
	case code == http.StatusRequestedRangeNotSatisfiable:
		_ = resp.Body.Close()
		return &http.Response{StatusCode: http.StatusPartialContent, Body: http.NoBody}, nil
	default:
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		_ = resp.Body.Close()
		return nil, h.statusError(code, file)
	}
}

func (h *HF) statusError(code int, file string) *Error {
	what := "the model " + h.repo + " at revision " + h.revision
	if file != "" {
		what = "the file"
	}
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		if h.token == "" {
			return Errorf(ReasonUnauthorized, file, "the Hub refused %s (HTTP %d): the repo is private or gated, or does not exist: set a token", what, code)
		}
		return Errorf(ReasonUnauthorized, file, "the Hub refused the token for %s (HTTP %d): the token lacks access to this private or gated repo, or the repo does not exist", what, code)
	case http.StatusNotFound:
		return Errorf(ReasonNotFound, file, "the Hub has no %s (HTTP 404)", strings.TrimPrefix(what, "the "))
	}
	return Errorf(ReasonUnavailable, file, "the Hub answered HTTP %d for %s", code, what)
}
