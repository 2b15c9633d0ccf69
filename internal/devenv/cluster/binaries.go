package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Versions of the control plane. They must match the Makefile's K8S_VERSION
// and KWOK_VERSION: the Makefile builds into these folders and the harness
// looks there.
const (
	KubernetesVersion = "v1.34.4"
	KwokVersion       = "v0.8.0"
)

// Binaries are the executables the local control plane runs.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Scheduler, Kubectl, Kwok string
}

// DefaultBinaries are the ones `make deps` builds under root/bin, and etcd
// from PATH (Debian's etcd-server).
func DefaultBinaries(root string) Binaries {
	k8s := filepath.Join(root, "bin", "k8s-"+KubernetesVersion)
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		etcd = "etcd"
	}
	return Binaries{
		Etcd:              etcd,
		APIServer:         filepath.Join(k8s, "kube-apiserver"),
		ControllerManager: filepath.Join(k8s, "kube-controller-manager"),
		Scheduler:         filepath.Join(k8s, "kube-scheduler"),
		Kubectl:           filepath.Join(k8s, "kubectl"),
		Kwok:              filepath.Join(root, "bin", "kwok-"+KwokVersion, "kwok"),
	}
}

// Missing lists the binaries that are not executable files, sorted by name.
func (b Binaries) Missing() []string {
	var missing []string
	for _, e := range []struct{ name, path string }{
		{"etcd", b.Etcd}, {"kube-apiserver", b.APIServer}, {"kube-controller-manager", b.ControllerManager},
		{"kube-scheduler", b.Scheduler}, {"kubectl", b.Kubectl}, {"kwok", b.Kwok},
	} {
		if !isExecutable(e.path) {
			missing = append(missing, fmt.Sprintf("%s (%s)", e.name, e.path))
		}
	}
	return missing
}

func isExecutable(path string) bool {
	if !filepath.IsAbs(path) {
		p, err := exec.LookPath(path)
		if err != nil {
			return false
		}
		path = p
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// EnsureBinaries builds or installs whatever is missing by running
// `make deps` in root, the same recipe CI and `make demo` use, so there is
// one build path. The first build takes minutes (kube-apiserver alone is
// about 9 minutes cold on 2 cores); later calls find everything and return
// at once.
func EnsureBinaries(ctx context.Context, root string, out io.Writer) (Binaries, error) {
	b := DefaultBinaries(root)
	missing := b.Missing()
	if len(missing) == 0 {
		return b, nil
	}
	fmt.Fprintf(out, "berth: building the local control plane (missing: %s); the first build takes several minutes\n",
		strings.Join(missing, ", "))
	cmd := exec.CommandContext(ctx, "make", "-C", root, "deps")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return b, fmt.Errorf("`make -C %s deps` failed (%w); run it by hand to see why", root, err)
	}
	b = DefaultBinaries(root) // etcd may have just been installed into PATH
	if missing := b.Missing(); len(missing) > 0 {
		return b, fmt.Errorf("still missing after `make deps`: %s", strings.Join(missing, ", "))
	}
	return b, nil
}

// RepoRoot finds the berth checkout containing dir: the nearest parent with
// a go.mod declaring module github.com/berthdev/berth.
func RepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(data)), "module github.com/berthdev/berth\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("not inside the berth repository (no go.mod of github.com/berthdev/berth above " + dir + ")")
		}
	}
}
