package policy

import (
	"strings"
	"sync"

	"github.com/berthdev/berth/api/policy/v1alpha1"
	"github.com/berthdev/berth/api/policy/v1alpha1/imageref"
)

// imageRule is a compiled v1alpha1.ImageRule.
type imageRule struct {
	prefixes []string // normalised; malformed entries are dropped
	text     string   // the entries as written, for messages
}

func compileImageRule(r *v1alpha1.ImageRule) *imageRule {
	if r == nil {
		return nil
	}
	ir := &imageRule{text: strings.Join(r.AllowedPrefixes, ", ")}
	for _, p := range r.AllowedPrefixes {
		if n, err := imageref.NormalizePrefix(p); err == nil {
			ir.prefixes = append(ir.prefixes, n)
		}
	}
	return ir
}

// imageRef is an image reference read once (imageref.Normalize).
type imageRef struct {
	ref, repo, suffix string
	err               error
}

// readImage reads ref, from imageCache when it was read before: a
// cluster's services use few distinct images, and Normalize's regular
// expressions would otherwise run on every container of every check.
func readImage(ref string) imageRef {
	imageCache.mu.RLock()
	im, ok := imageCache.m[ref]
	imageCache.mu.RUnlock()
	if ok {
		return im
	}
	repo, suffix, err := imageref.Normalize(ref)
	im = imageRef{ref: ref, repo: repo, suffix: suffix, err: err}
	imageCache.mu.Lock()
	if len(imageCache.m) >= maxCachedImages {
		clear(imageCache.m) // start over: bounded whatever the references
	}
	imageCache.m[ref] = im
	imageCache.mu.Unlock()
	return im
}

// imageCache remembers readings of image references (Normalize is pure,
// so a reading never goes stale); shared by every Set, safe for
// concurrent use, at most maxCachedImages entries.
var imageCache = struct {
	mu sync.RWMutex
	m  map[string]imageRef
}{m: map[string]imageRef{}}

// maxCachedImages bounds imageCache; past it the cache starts over.
const maxCachedImages = 4096

// cachedImages is the number of references imageCache holds.
func cachedImages() int {
	imageCache.mu.RLock()
	defer imageCache.mu.RUnlock()
	return len(imageCache.m)
}

// check says why ref is not allowed, "" when it is: "image
// docker.io/evil/x:1 is not from an allowed registry (allowed: ...)".
func (r *imageRule) check(ref string) string {
	if r == nil {
		return ""
	}
	im := readImage(ref)
	return r.checkRef(&im)
}

func (r *imageRule) checkRef(im *imageRef) string {
	if im.err != nil {
		return "image " + quoteRef(im.ref) + " is not a valid reference: " + im.err.Error()
	}
	for _, p := range r.prefixes {
		if imageref.Matches(p, im.repo) {
			return ""
		}
	}
	return "image " + im.repo + im.suffix + " is not from an allowed registry (allowed: " + r.text + ")"
}

func quoteRef(s string) string { return "\"" + s + "\"" }
