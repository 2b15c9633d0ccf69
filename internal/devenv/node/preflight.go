package node

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// LockPath is the machine-wide lock of the real node: its bridge, address
// and DNS port are fixed, so only one runs at a time.
const LockPath = "/run/berth-real-node.lock"

// DefaultCNIDirs are where Debian's containernetworking-plugins and the
// upstream release put the CNI plugins.
var DefaultCNIDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// CNIPlugins are the plugins the node's network uses.
var CNIPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// FindBinaries fills what b leaves empty from $PATH and DefaultCNIDirs.
// Kubelet, KubeProxy and CoreDNS must be given (they are built by `make
// deps`, see cluster.FindBinaries).
func FindBinaries(b Binaries) Binaries {
	look := func(cur *string, name string, also ...string) {
		if *cur != "" {
			return
		}
		if p, err := exec.LookPath(name); err == nil {
			*cur = p
			return
		}
		for _, dir := range also {
			if p := filepath.Join(dir, name); isExecutable(p) {
				*cur = p
				return
			}
		}
	}
	sbin := []string{"/usr/sbin", "/sbin", "/usr/bin"}
	look(&b.Containerd, "containerd")
	look(&b.Ctr, "ctr")
	look(&b.Runc, "runc", sbin...)
	look(&b.IP, "ip", sbin...)
	look(&b.IPTables, "iptables", sbin...)
	look(&b.Nsenter, "nsenter", sbin...)
	if b.CNIDir == "" {
		for _, d := range DefaultCNIDirs {
			if isExecutable(filepath.Join(d, "bridge")) {
				b.CNIDir = d
				break
			}
		}
	}
	return b
}

// Preflight says why a real node cannot start here, or nil. Each reason
// names what is missing and how to get it; all reasons are joined.
func Preflight(b Binaries, images []string, pauseImage string) error {
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("not root: containerd, the kubelet and the pod network need root (run as root, or with sudo)"))
	}
	if err := checkCgroups("/sys/fs/cgroup"); err != nil {
		errs = append(errs, err)
	}
	for _, e := range []struct{ name, path, fix string }{
		{"kubelet", b.Kubelet, "make deps"}, {"kube-proxy", b.KubeProxy, "make deps"}, {"coredns", b.CoreDNS, "make deps"},
		{"containerd", b.Containerd, "apt-get install containerd"}, {"ctr", b.Ctr, "apt-get install containerd"},
		{"runc", b.Runc, "apt-get install runc"}, {"ip", b.IP, "apt-get install iproute2"},
		{"iptables", b.IPTables, "apt-get install iptables"},
	} {
		if !isExecutable(e.path) {
			errs = append(errs, fmt.Errorf("%s not found (%q): %s", e.name, e.path, e.fix))
		}
	}
	if b.CNIDir == "" {
		errs = append(errs, fmt.Errorf("no CNI plugins in %s: apt-get install containernetworking-plugins", strings.Join(DefaultCNIDirs, " or ")))
	} else {
		for _, p := range CNIPlugins {
			if !isExecutable(filepath.Join(b.CNIDir, p)) {
				errs = append(errs, fmt.Errorf("CNI plugin %s missing from %s: apt-get install containernetworking-plugins", p, b.CNIDir))
			}
		}
	}
	if len(images) == 0 {
		errs = append(errs, errors.New("no images to load (bin/images/*.tar): run `make images`"))
	} else if pauseImage == "" {
		errs = append(errs, errors.New("no pause image among the images: run `make images`"))
	}
	if err := lockFree(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkCgroups needs the cpu and memory controllers, on cgroup v1
// hierarchies (/sys/fs/cgroup/cpu, /sys/fs/cgroup/memory) or v2.
func checkCgroups(root string) error {
	if data, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err == nil {
		for _, c := range []string{"cpu", "memory"} {
			if !strings.Contains(" "+strings.TrimSpace(string(data))+" ", " "+c+" ") {
				return fmt.Errorf("cgroup v2 at %s lacks the %s controller: the kubelet needs it", root, c)
			}
		}
		return nil
	}
	for _, c := range []string{"cpu", "memory", "pids"} {
		if _, err := os.Stat(filepath.Join(root, c)); err != nil {
			return fmt.Errorf("no cgroup %s hierarchy at %s (neither cgroup v2 nor a v1 hierarchy is mounted): the kubelet needs it", c, filepath.Join(root, c))
		}
	}
	return nil
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return path != "" && err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// Lock takes the machine-wide real node lock, or says who holds it. It
// returns what the previous holder recorded (see record): what a killed
// run may have left. The file then holds this process's pid.
func Lock() (*os.File, leftovers, error) {
	f, err := tryLock()
	if err != nil {
		return nil, leftovers{}, err
	}
	prev, _ := os.ReadFile(LockPath)
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("%s %d\n", recordPID, os.Getpid())), 0)
	return f, parseRecord(string(prev)), nil
}

// tryLock opens the lock file and locks it, without writing.
func tryLock() (*os.File, error) {
	f, err := os.OpenFile(LockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", LockPath, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(LockPath)
		f.Close()
		first, _, _ := strings.Cut(strings.TrimSpace(string(holder)), "\n")
		return nil, fmt.Errorf("another real node runs on this machine (lock %s held by %s): one at a time", LockPath, strings.TrimSpace(first))
	}
	return f, nil
}

// Unlock releases the lock taken by Lock.
func Unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

// lockFree reports whether Lock would succeed now (without keeping it, and
// without touching what the file records).
func lockFree() error {
	if os.Geteuid() != 0 {
		return nil // reported as "not root" already
	}
	f, err := tryLock()
	if err != nil {
		return err
	}
	Unlock(f)
	return nil
}
