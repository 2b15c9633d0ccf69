// Package imageref reads container image references as the container
// runtime does, and compares them with registry or repository prefixes on
// a path boundary. It is what ServingPolicy's images rule and its
// validation share; it imports nothing but the standard library.
package imageref

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// The reference grammar of the distribution project (and so of Docker and
// containerd), which refuses what it does not match: a policy must not
// read a reference the runtime would read differently ("ghcr.io/org/../x").
var (
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)
	domainRE      = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?$`)
	tagRE         = regexp.MustCompile(`^:[\w][\w.-]{0,127}$`)
	digestRE      = regexp.MustCompile(`^@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$`)
)

// DefaultRegistry is the registry of a reference that names none, as the
// container runtime reads it.
const DefaultRegistry = "docker.io"

// Normalize reads an image reference as the container runtime does
// and returns its repository with the registry (docker.io when none is
// named; docker.io/library/x for a single-segment x; index.docker.io is
// docker.io) and, apart, its tag and digest (":1", "@sha256:...", or
// both). A registry host name is lower-cased; the path is kept as written.
func Normalize(ref string) (repo, suffix string, err error) {
	if ref == "" {
		return "", "", errors.New("empty image reference")
	}
	if strings.ContainsAny(ref, " \t\r\n") {
		return "", "", errors.New("image reference contains whitespace")
	}
	name := ref
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, suffix = name[:i], name[i:]
		if len(suffix) == 1 {
			return "", "", errors.New("image reference has an empty digest")
		}
		if !digestRE.MatchString(suffix) {
			return "", "", errors.New("image reference has an invalid digest")
		}
	}
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.Contains(name[i:], "/") {
		if i == len(name)-1 {
			return "", "", errors.New("image reference has an empty tag")
		}
		if !tagRE.MatchString(name[i:]) {
			return "", "", errors.New("image reference has an invalid tag")
		}
		name, suffix = name[:i], name[i:]+suffix
	}
	domain, path := splitDomain(name)
	if err := checkPath("image reference", path); err != nil {
		return "", "", err
	}
	if !domainRE.MatchString(domain) {
		return "", "", errors.New("image reference has an invalid registry")
	}
	if domain == DefaultRegistry && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	return domain + "/" + path, suffix, nil
}

// checkPath checks a repository path's components; what names the
// checked string in the error.
func checkPath(what, path string) error {
	for _, c := range strings.Split(path, "/") {
		if c == "" {
			return errors.New(what + " has an empty path segment")
		}
		if !pathComponent.MatchString(c) {
			return errors.New(what + " has an invalid path component " + strconv.Quote(c))
		}
	}
	return nil
}

// splitDomain splits a repository into its registry and path: the first
// segment is a registry when it has a dot or a port, or is localhost;
// otherwise the registry is docker.io.
func splitDomain(name string) (domain, path string) {
	i := strings.IndexByte(name, '/')
	if i < 0 {
		return DefaultRegistry, name
	}
	first := name[:i]
	if !strings.ContainsAny(first, ".:") && first != "localhost" && strings.ToLower(first) == first {
		return DefaultRegistry, name
	}
	if strings.ContainsAny(first, ".:") {
		// Host names are case-insensitive; a bare upper-case first
		// segment (a registry by Docker's rule) is kept as written, so
		// that it still reads as a registry.
		first = strings.ToLower(first)
	}
	if first == "index.docker.io" || first == "registry-1.docker.io" {
		first = DefaultRegistry
	}
	return first, name[i+1:]
}

// NormalizePrefix reads an allowedPrefixes entry: a registry, or a
// registry and a path, without tag or digest. A first segment that is not
// a registry (no dot, port or localhost) is a Docker Hub path: lmsysorg
// is docker.io/lmsysorg. A trailing "/" is dropped.
func NormalizePrefix(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty prefix")
	}
	if strings.ContainsAny(p, " \t\r\n@*") {
		return "", errors.New("a prefix has no whitespace, digest or wildcard")
	}
	p = strings.TrimSuffix(p, "/")
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "//") {
		return "", errors.New("prefix has an empty path segment")
	}
	domain, path := p, ""
	if i := strings.IndexByte(p, '/'); i >= 0 {
		domain, path = p[:i], p[i+1:]
	}
	if !strings.ContainsAny(domain, ".:") && domain != "localhost" {
		domain, path = DefaultRegistry, p
	}
	if strings.Contains(path, ":") {
		return "", errors.New("a prefix has no tag")
	}
	if path != "" {
		if err := checkPath("prefix", path); err != nil {
			return "", err
		}
	}
	if !domainRE.MatchString(domain) {
		return "", errors.New("prefix has an invalid registry")
	}
	domain = strings.ToLower(domain)
	if domain == "index.docker.io" || domain == "registry-1.docker.io" {
		domain = DefaultRegistry
	}
	if path == "" {
		return domain, nil
	}
	return domain + "/" + path, nil
}

// Matches compares on a path boundary: ghcr.io/org matches
// ghcr.io/org and ghcr.io/org/x, not ghcr.io/organisation/x.
func Matches(prefix, repo string) bool {
	return repo == prefix || (strings.HasPrefix(repo, prefix) && repo[len(prefix)] == '/')
}
