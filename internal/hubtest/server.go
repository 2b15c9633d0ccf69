// Package hubtest is a local Hugging Face Hub for tests: an httptest server
// that speaks exactly the subset of the Hub's HTTP API modelmeta uses,
//
//	GET /api/models/{org}/{name}[/revision/{rev}][?blobs=true]
//	    {"id", "sha", "private", "siblings": [{"rfilename", "size", "blobId", "lfs"}]}
//	    (sizes and lfs blocks only with blobs=true, as on the Hub)
//	GET|HEAD /{org}/{name}/resolve/{rev}/{path}
//	    the file, with Range support (206, Content-Range, 416); LFS files
//	    first redirect (302) to /cdn/{sha256}, as the Hub redirects to its CDN
//
// and serves real models: their published config.json files (testdata) and
// safetensors shards generated from each model's tensor table, with real
// headers and the real file sizes but zero bytes for the data, which are
// never held in memory.
//
// Access follows the Hub: a private repository answers 401 without the
// server's token and 403 with another one; an unknown repository answers
// 401 without a token and 404 with one; an unknown revision or file 404.
// The revision may be "main" or the repository's commit sha.
//
// S3Server (s3.go) serves the same repositories as a MinIO-style S3 API
// with SigV4 verified against fixed credentials. NewServerAt and
// NewS3ServerAt listen on a given address (e.g. the host's bridge address,
// for pods on a local node), NewServer and NewS3Server on loopback. Tiny
// repositories are small enough to download; the large generated ones are
// for discovery (their lfs sha256 is a stand-in above 64 MiB).
package hubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Token is the bearer token that opens private repositories.
const Token = "hf_hubtest_0123456789abcdef"

// Server is a running test Hub.
type Server struct {
	*httptest.Server
	repos map[string]*Repo
	cdn   sync.Map // sha256 -> cdnEntry

	requests    atomic.Int64
	bytesServed atomic.Int64
}

type cdnEntry struct {
	repo *Repo
	file File
}

// NewServer starts a test Hub on a loopback port serving repos (Models()
// when none are given). Close it when done.
func NewServer(repos ...*Repo) *Server {
	s := newServer(repos)
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// NewServerAt is NewServer listening on addr (host:port; port 0 picks
// one), e.g. the host's bridge address that pods on a local node reach.
func NewServerAt(addr string, repos ...*Repo) (*Server, error) {
	s := newServer(repos)
	srv, err := startAt(addr, http.HandlerFunc(s.serve))
	if err != nil {
		return nil, fmt.Errorf("hubtest: the Hub cannot listen on %s: %w", addr, err)
	}
	s.Server = srv
	return s, nil
}

// startAt is an httptest server listening on addr.
func startAt(addr string, h http.Handler) (*httptest.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := httptest.NewUnstartedServer(h)
	_ = srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return srv, nil
}

func newServer(repos []*Repo) *Server {
	if len(repos) == 0 {
		repos = Models()
	}
	s := &Server{repos: map[string]*Repo{}}
	for _, r := range repos {
		s.repos[r.ID] = r
		for _, f := range r.Files {
			if f.LFS {
				s.cdn.Store(lfsSHA(r.ID, f), cdnEntry{r, f})
			}
		}
	}
	return s
}

// Requests is how many requests the server has answered.
func (s *Server) Requests() int64 { return s.requests.Load() }

// BytesServed is how many body bytes the server has written.
func (s *Server) BytesServed() int64 { return s.bytesServed.Load() }

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n.Add(int64(n))
	return n, err
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	w = countingWriter{w, &s.bytesServed}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hubError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, seg := range segs {
		if u, err := url.PathUnescape(seg); err == nil {
			segs[i] = u
		}
	}
	switch {
	case len(segs) >= 3 && segs[0] == "api" && segs[1] == "models":
		s.modelInfo(w, r, segs[2:])
	case len(segs) == 2 && segs[0] == "cdn":
		s.serveCDN(w, r, segs[1])
	case len(segs) >= 5 && segs[2] == "resolve":
		s.resolve(w, r, segs[0]+"/"+segs[1], segs[3], strings.Join(segs[4:], "/"))
	default:
		hubError(w, http.StatusNotFound, "Not Found")
	}
}

func hubError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Error-Message", msg)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// repo finds the repository and checks the token as the Hub does.
func (s *Server) repo(w http.ResponseWriter, r *http.Request, id string) (*Repo, bool) {
	auth := r.Header.Get("Authorization")
	repo, ok := s.repos[id]
	switch {
	case !ok && auth == "":
		hubError(w, http.StatusUnauthorized, "Repository not found")
	case !ok:
		hubError(w, http.StatusNotFound, "Repository not found")
	case repo.Private && auth == "":
		hubError(w, http.StatusUnauthorized, fmt.Sprintf("Access to model %s is restricted. You must have access to it and be authenticated to access it. Please log in.", id))
	case repo.Private && auth != "Bearer "+Token:
		hubError(w, http.StatusForbidden, fmt.Sprintf("Access to model %s is restricted and you are not in the authorized list.", id))
	default:
		return repo, true
	}
	return nil, false
}

func revisionOK(repo *Repo, rev string) bool { return rev == "main" || rev == repo.SHA }

func (s *Server) modelInfo(w http.ResponseWriter, r *http.Request, segs []string) {
	if len(segs) != 2 && (len(segs) != 4 || segs[2] != "revision") {
		hubError(w, http.StatusNotFound, "Not Found")
		return
	}
	repo, ok := s.repo(w, r, segs[0]+"/"+segs[1])
	if !ok {
		return
	}
	rev := "main"
	if len(segs) == 4 {
		rev = segs[3]
	}
	if !revisionOK(repo, rev) {
		hubError(w, http.StatusNotFound, "Invalid rev id: "+rev)
		return
	}
	blobs := r.URL.Query().Get("blobs") == "true"
	siblings := make([]map[string]any, 0, len(repo.Files))
	for _, f := range repo.Files {
		sib := map[string]any{"rfilename": f.Path}
		if blobs {
			sib["size"] = f.Size
			sib["blobId"] = lfsSHA(repo.ID, f)[:40]
			if f.LFS {
				sib["lfs"] = map[string]any{"sha256": lfsSHA(repo.ID, f), "size": f.Size, "pointerSize": 135}
			}
		}
		siblings = append(siblings, sib)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"_id": repo.SHA[:24], "id": repo.ID, "modelId": repo.ID, "sha": repo.SHA,
		"private": false, "gated": map[bool]any{true: "manual", false: false}[repo.Private],
		"disabled": false, "library_name": "transformers", "tags": []string{"transformers", "safetensors"},
		"siblings": siblings,
	})
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request, id, rev, path string) {
	repo, ok := s.repo(w, r, id)
	if !ok {
		return
	}
	if !revisionOK(repo, rev) {
		hubError(w, http.StatusNotFound, "Invalid rev id: "+rev)
		return
	}
	f, ok := repo.File(path)
	if !ok {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		hubError(w, http.StatusNotFound, "Entry not found")
		return
	}
	w.Header().Set("X-Repo-Commit", repo.SHA)
	if f.LFS {
		w.Header().Set("X-Linked-Size", fmt.Sprint(f.Size))
		http.Redirect(w, r, "/cdn/"+lfsSHA(repo.ID, f)+"?sig=test", http.StatusFound)
		return
	}
	serveFile(w, r, f)
}

func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request, sha string) {
	e, ok := s.cdn.Load(sha)
	if !ok {
		hubError(w, http.StatusNotFound, "Not Found")
		return
	}
	serveFile(w, r, e.(cdnEntry).file)
}

// serveFile serves the virtual file with Range support.
func serveFile(w http.ResponseWriter, r *http.Request, f File) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("ETag", `"`+lfsSHA("", f)[:40]+`"`)
	http.ServeContent(w, r, "", time.Time{}, io.NewSectionReader(f, 0, f.Size))
}
