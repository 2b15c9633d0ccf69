package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Versions of the control plane. They must match the Makefile's
// K8S_VERSION, KWOK_VERSION and SCHED_PLUGINS_VERSION: the Makefile builds
// into these folders and Locate looks there.
const (
	KubernetesVersion       = "v1.34.4"
	KwokVersion             = "v0.8.0"
	SchedulerPluginsVersion = "v0.32.7"
)

// Binaries are the executables the local control plane runs.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Scheduler, Kubectl, Kwok string
	// SchedulerPlugins is sigs.k8s.io/scheduler-plugins' cmd/scheduler
	// (kube-scheduler with the Coscheduling plugin), the second scheduler;
	// SchedulerPluginsController its cmd/controller (PodGroup status).
	SchedulerPlugins, SchedulerPluginsController string
}

// File names of the scheduler-plugins binaries, as `make deps` writes them
// into bin/scheduler-plugins-<version>/ (upstream's deployment names: the
// commands themselves are cmd/scheduler and cmd/controller).
const (
	SchedulerPluginsSchedulerBin  = "scheduler-plugins-scheduler"
	SchedulerPluginsControllerBin = "scheduler-plugins-controller"
)

// DefaultBinaries are the ones `make deps` builds under root/bin, and etcd
// from PATH (Debian's etcd-server), whether they exist or not. Most callers
// want FindBinaries or EnsureBinaries.
func DefaultBinaries(root string) Binaries {
	k8s := filepath.Join(root, "bin", "k8s-"+KubernetesVersion)
	sp := filepath.Join(root, "bin", "scheduler-plugins-"+SchedulerPluginsVersion)
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

		SchedulerPlugins:           filepath.Join(sp, SchedulerPluginsSchedulerBin),
		SchedulerPluginsController: filepath.Join(sp, SchedulerPluginsControllerBin),
	}
}

// Missing lists the binaries that are not executable files, sorted by name.
func (b Binaries) Missing() []string {
	var missing []string
	for _, e := range []struct{ name, path string }{
		{"etcd", b.Etcd}, {"kube-apiserver", b.APIServer}, {"kube-controller-manager", b.ControllerManager},
		{"kube-scheduler", b.Scheduler}, {"kubectl", b.Kubectl}, {"kwok", b.Kwok},
		{SchedulerPluginsSchedulerBin, b.SchedulerPlugins}, {SchedulerPluginsControllerBin, b.SchedulerPluginsController},
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

// KubeBinDirEnv names a folder holding the control plane's binaries,
// searched first: either the layout `make deps` writes (k8s-v1.34.4/,
// kwok-v0.8.0/, scheduler-plugins-v0.32.7/) or the binaries themselves.
const KubeBinDirEnv = "BERTH_KUBE_BIN_DIR"

// SearchDirs lists the folders searched for the binaries, in order:
// $BERTH_KUBE_BIN_DIR (envDir), the checkout's bin/ when running inside
// one (root), and the folder of the running executable (exeDir, so an
// installed bin/berth finds bin/k8s-v1.34.4 next to it). $PATH comes
// after them. Empty and repeated entries are dropped.
func SearchDirs(envDir, root, exeDir string) []string {
	var dirs []string
	for _, d := range []string{envDir, joinIf(root, "bin"), exeDir} {
		if d != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

func joinIf(root, elem string) string {
	if root == "" {
		return ""
	}
	return filepath.Join(root, elem)
}

// Locate finds each binary in dirs — in the versioned folder `make deps`
// writes (<dir>/k8s-v1.34.4/kube-apiserver, <dir>/kwok-v0.8.0/kwok,
// <dir>/scheduler-plugins-v0.32.7/scheduler-plugins-scheduler), then
// directly in <dir> — and then in $PATH (lookPath). It returns the
// binaries found and the names of those that are not; a missing one keeps
// its bare name as path. isExec and lookPath are the file system, passed
// in so the order is tested without one.
func Locate(dirs []string, isExec func(string) bool, lookPath func(string) (string, error)) (Binaries, []string) {
	var missing []string
	find := func(name, versioned string) string {
		for _, d := range dirs {
			for _, p := range []string{filepath.Join(d, versioned, name), filepath.Join(d, name)} {
				if isExec(p) {
					return p
				}
			}
		}
		if p, err := lookPath(name); err == nil {
			return p
		}
		missing = append(missing, name)
		return name
	}
	k8s, kwok, sp := "k8s-"+KubernetesVersion, "kwok-"+KwokVersion, "scheduler-plugins-"+SchedulerPluginsVersion
	b := Binaries{
		Etcd:              find("etcd", ""),
		APIServer:         find("kube-apiserver", k8s),
		ControllerManager: find("kube-controller-manager", k8s),
		Scheduler:         find("kube-scheduler", k8s),
		Kubectl:           find("kubectl", k8s),
		Kwok:              find("kwok", kwok),

		SchedulerPlugins:           find(SchedulerPluginsSchedulerBin, sp),
		SchedulerPluginsController: find(SchedulerPluginsControllerBin, sp),
	}
	return b, missing
}

// FindBinaries locates the binaries the way Locate says, from the
// environment: $BERTH_KUBE_BIN_DIR, root (a checkout, or "" outside one),
// the running executable's folder and $PATH. The error names what is
// missing, where it looked and how to get it.
func FindBinaries(root string) (Binaries, error) {
	dirs := SearchDirs(os.Getenv(KubeBinDirEnv), root, executableDir())
	b, missing := Locate(dirs, isExecutable, exec.LookPath)
	if len(missing) == 0 {
		return b, nil
	}
	return b, fmt.Errorf("the local control plane needs %s (Kubernetes %s, kwok %s, scheduler-plugins %s, etcd), not found in %s or $PATH; "+
		"build them with `make deps` in a berth checkout and run from there, or set %s to its bin/ folder",
		strings.Join(missing, ", "), KubernetesVersion, KwokVersion, SchedulerPluginsVersion, strings.Join(dirs, ", "), KubeBinDirEnv)
}

// executableDir is the folder of the running executable, "" if unknown.
func executableDir() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	return filepath.Dir(exe)
}

// EnsureBinaries finds the binaries (FindBinaries) and, inside a checkout
// (root not empty), builds or installs whatever is missing by running
// `make deps` there, the same recipe CI and `make demo` use, so there is
// one build path. The first build takes minutes (kube-apiserver alone is
// about 9 minutes cold on 2 cores); later calls find everything and return
// at once. Outside a checkout nothing is built: the error says what to do.
func EnsureBinaries(ctx context.Context, root string, out io.Writer) (Binaries, error) {
	b, err := FindBinaries(root)
	if err == nil || root == "" {
		return b, err
	}
	fmt.Fprintf(out, "berth: building the local control plane (%v); the first build takes several minutes\n", err)
	cmd := exec.CommandContext(ctx, "make", "-C", root, "deps")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return b, fmt.Errorf("`make -C %s deps` failed (%w); run it by hand to see why", root, err)
	}
	b, err = FindBinaries(root) // etcd may have just been installed into PATH
	if err != nil {
		return b, fmt.Errorf("after `make deps`: %w", err)
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
