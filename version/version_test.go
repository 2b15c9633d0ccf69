package version

import (
	"regexp"
	"testing"
)

func TestVersionIsSemVer(t *testing.T) {
	if !regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(Version) {
		t.Fatalf("VERSION %q is not MAJOR.MINOR.PATCH[-pre]: image tags and the Helm chart need SemVer", Version)
	}
}

func TestImage(t *testing.T) {
	if got, want := Image("berth-webhook"), "ghcr.io/berthdev/berth-webhook:"+Version; got != want {
		t.Fatalf("Image = %q, want %q", got, want)
	}
}
