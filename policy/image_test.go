package policy

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/berthdev/berth/api/policy/v1alpha1/imageref"
)

func TestImageRule(t *testing.T) {
	r := compileImageRule(MakePolicy("p").Images("registry.example.com", "ghcr.io/org", "lmsysorg").Obj().Spec.Rules.Images)
	const denied = " is not from an allowed registry (allowed: registry.example.com, ghcr.io/org, lmsysorg)"
	tests := []struct{ ref, want string }{
		{ref: "registry.example.com/any/image:1"},
		{ref: "ghcr.io/org/x"},
		{ref: "ghcr.io/org"},
		{ref: "lmsysorg/sglang:latest"},
		{ref: "docker.io/lmsysorg/sglang"},
		{ref: "ghcr.io/organisation/x:1", want: "image ghcr.io/organisation/x:1" + denied},
		{ref: "registry.example.com.evil.io/x", want: "image registry.example.com.evil.io/x" + denied},
		{ref: "evil/x:1", want: "image docker.io/evil/x:1" + denied},
		{ref: "sglang", want: "image docker.io/library/sglang" + denied},
		{ref: "x:", want: `image "x:" is not a valid reference: image reference has an empty tag`},
	}
	for _, tt := range tests {
		if got := r.check(tt.ref); got != tt.want {
			t.Errorf("check(%q) = %q; want %q", tt.ref, got, tt.want)
		}
	}
}

// TestReadImageCache: a reference read again comes from the cache with the
// same reading (errors included), and the cache never holds more than
// maxCachedImages references.
func TestReadImageCache(t *testing.T) {
	for _, ref := range []string{"lmsysorg/sglang:v1", "x:", "ghcr.io/org/x@sha256:" + strings.Repeat("a", 64)} {
		first, again := readImage(ref), readImage(ref)
		if first.repo != again.repo || first.suffix != again.suffix || (first.err == nil) != (again.err == nil) {
			t.Errorf("readImage(%q) = %+v, then %+v", ref, first, again)
		}
		repo, suffix, err := imageref.Normalize(ref)
		if again.repo != repo || again.suffix != suffix || (err == nil) != (again.err == nil) {
			t.Errorf("readImage(%q) = %+v; Normalize says %q %q %v", ref, again, repo, suffix, err)
		}
	}
	for i := range 2*maxCachedImages + 10 {
		readImage("registry.example.com/x:" + strconv.Itoa(i))
		if n := cachedImages(); n > maxCachedImages {
			t.Fatalf("after %d references the cache holds %d, above %d", i+1, n, maxCachedImages)
		}
	}
}

func TestReadImageConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				ref := "ghcr.io/org/x:" + strconv.Itoa((i*7+g)%5000)
				if im := readImage(ref); im.repo != "ghcr.io/org/x" || im.err != nil {
					t.Errorf("readImage(%q) = %+v", ref, im)
					return
				}
			}
		}()
	}
	wg.Wait()
}
