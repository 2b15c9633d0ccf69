package imageref

import (
	"strings"
	"testing"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestNormalize(t *testing.T) {
	tests := []struct {
		ref, repo, suffix, err string
	}{
		{ref: "nginx", repo: "docker.io/library/nginx"},
		{ref: "nginx:1.27", repo: "docker.io/library/nginx", suffix: ":1.27"},
		{ref: "lmsysorg/sglang:v0.4", repo: "docker.io/lmsysorg/sglang", suffix: ":v0.4"},
		{ref: "docker.io/nginx", repo: "docker.io/library/nginx"},
		{ref: "index.docker.io/lmsysorg/sglang", repo: "docker.io/lmsysorg/sglang"},
		{ref: "ghcr.io/org/x@" + digest, repo: "ghcr.io/org/x", suffix: "@" + digest},
		{ref: "ghcr.io/org/x:1@" + digest, repo: "ghcr.io/org/x", suffix: ":1@" + digest},
		{ref: "ghcr.io/org/x@sha256:abc", err: "image reference has an invalid digest"},
		{ref: "ghcr.io/org/x:-1", err: "image reference has an invalid tag"},
		{ref: "ghcr.io/org/../x", err: `image reference has an invalid path component ".."`},
		{ref: "ghcr.io/Org/x", err: `image reference has an invalid path component "Org"`},
		{ref: "ghcr.io/org/x_", err: `image reference has an invalid path component "x_"`},
		{ref: "my_registry.io/x", err: "image reference has an invalid registry"},
		{ref: "registry.example.com", repo: "docker.io/library/registry.example.com"},
		{ref: "a__b/c-d--e.f:v1.0_x", repo: "docker.io/a__b/c-d--e.f", suffix: ":v1.0_x"},
		{ref: "localhost:5000/x:dev", repo: "localhost:5000/x", suffix: ":dev"},
		{ref: "localhost/x", repo: "localhost/x"},
		{ref: "GHCR.IO/org/x", repo: "ghcr.io/org/x"},
		{ref: "nvcr.io/nvidia/tritonserver:24.01-py3", repo: "nvcr.io/nvidia/tritonserver", suffix: ":24.01-py3"},
		{ref: "", err: "empty image reference"},
		{ref: "a b", err: "image reference contains whitespace"},
		{ref: "x:", err: "image reference has an empty tag"},
		{ref: "x@", err: "image reference has an empty digest"},
		{ref: "ghcr.io/", err: "image reference has an empty path segment"},
		{ref: "ghcr.io//x", err: "image reference has an empty path segment"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			repo, suffix, err := Normalize(tt.ref)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if repo != tt.repo || suffix != tt.suffix || gotErr != tt.err {
				t.Errorf("Normalize(%q) = %q, %q, %q; want %q, %q, %q", tt.ref, repo, suffix, gotErr, tt.repo, tt.suffix, tt.err)
			}
		})
	}
}

func TestNormalizePrefix(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{in: "registry.example.com", want: "registry.example.com"},
		{in: "registry.example.com/", want: "registry.example.com"},
		{in: "ghcr.io/org", want: "ghcr.io/org"},
		{in: "lmsysorg", want: "docker.io/lmsysorg"},
		{in: "docker.io/library/nginx", want: "docker.io/library/nginx"},
		{in: "index.docker.io/x", want: "docker.io/x"},
		{in: "localhost:5000", want: "localhost:5000"},
		{in: "", err: "empty prefix"},
		{in: "ghcr.io/org/*", err: "a prefix has no whitespace, digest or wildcard"},
		{in: "ghcr.io/org/x@sha256:1", err: "a prefix has no whitespace, digest or wildcard"},
		{in: "ghcr.io/org/x:1", err: "a prefix has no tag"},
		{in: "ghcr.io//org", err: "prefix has an empty path segment"},
		{in: "/", err: "prefix has an empty path segment"},
		{in: "ghcr.io/../x", err: `prefix has an invalid path component ".."`},
		{in: "Lmsysorg", err: `prefix has an invalid path component "Lmsysorg"`},
		{in: "bad_host.io/x", err: "prefix has an invalid registry"},
	}
	for _, tt := range tests {
		got, err := NormalizePrefix(tt.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tt.want || gotErr != tt.err {
			t.Errorf("NormalizePrefix(%q) = %q, %q; want %q, %q", tt.in, got, gotErr, tt.want, tt.err)
		}
	}
}

// FuzzNormalize: a reference that normalises has a registry, a
// non-empty path without empty segments, and normalises to itself again.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"nginx", "lmsysorg/sglang:v1", "ghcr.io/org/x@" + digest, "localhost:5000/x:1", "a:b:c", "x@y@z", "Foo/bar"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		repo, suffix, err := Normalize(ref)
		if err != nil {
			return
		}
		domain, path, ok := strings.Cut(repo, "/")
		if !ok || domain == "" || path == "" || strings.Contains(path, "//") || strings.HasSuffix(path, "/") {
			t.Fatalf("Normalize(%q) = %q: malformed", ref, repo)
		}
		again, suffix2, err := Normalize(repo + suffix)
		if err != nil || again != repo || suffix2 != suffix {
			t.Fatalf("Normalize(%q) = %q %q, but again %q %q %v", ref, repo, suffix, again, suffix2, err)
		}
		if !Matches(domain, repo) {
			t.Fatalf("its registry %q does not match %q", domain, repo)
		}
	})
}
