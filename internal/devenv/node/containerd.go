package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ClosedRegistry is where containerd is told every registry lives: a
// loopback port nothing listens on, so a pull of an image the node does
// not have fails at once (ErrImagePull) and never leaves the machine.
const ClosedRegistry = "http://127.0.0.1:1"

// containerdConfig is containerd 1.6's configuration (version 2) for the
// node: state and sockets under the node's folder, runc with cgroupfs,
// berth's pause image, the bridge network, and every registry closed.
func (n *Node) containerdConfig(stateDir string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  enable_unprivileged_ports = true
  enable_unprivileged_icmp = true
  # This machine's root lacks CAP_SYS_RESOURCE: a negative oom_score_adj
  # (the kubelet gives sandboxes -998) makes runc fail ("can't get final
  # child's PID from pipe"). Clamp to containerd's own, as rootless kind does.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, n.path("containerd", "root"), stateDir, n.socket, n.opts.PauseImage, n.opts.Binaries.Runc,
		n.opts.Binaries.CNIDir, n.path("cni", "net.d"), n.path("containerd", "certs.d"))
}

// registryHosts closes every registry: certs.d/_default/hosts.toml sends
// each to ClosedRegistry instead of its own host.
func registryHosts(dir string) error {
	d := filepath.Join(dir, "_default")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", ClosedRegistry, ClosedRegistry)), 0o644)
}

// startContainerd writes the configuration and runs containerd until its
// socket answers. The state folder (sockets, shim state) lives under /run
// with a short name: a unix socket path is limited to 108 bytes.
func (n *Node) startContainerd(ctx context.Context) error {
	state, err := os.MkdirTemp("/run", "berth-node-")
	if err != nil {
		return err
	}
	n.stateDir = state
	n.socket = filepath.Join(state, "containerd.sock")
	if err := record(n.rec, recordState, state); err != nil {
		return fmt.Errorf("record %s in %s: %w", state, LockPath, err)
	}
	if err := registryHosts(n.path("containerd", "certs.d")); err != nil {
		return err
	}
	cfg := n.path("containerd", "config.toml")
	if err := os.WriteFile(cfg, []byte(n.containerdConfig(filepath.Join(state, "state"))), 0o644); err != nil {
		return err
	}
	p, err := n.run("containerd", n.opts.Binaries.Containerd, []string{"--config", cfg})
	if err != nil {
		return err
	}
	return p.WaitReady(ctx, n.opts.Timeout, func(ctx context.Context) error {
		return exec.CommandContext(ctx, n.opts.Binaries.Ctr, "--address", n.socket, "version").Run()
	})
}

// loadImages imports every image tarball into containerd's CRI namespace
// (k8s.io), where the kubelet finds them.
func (n *Node) loadImages(ctx context.Context) error {
	for _, tar := range n.opts.Images {
		out, err := exec.CommandContext(ctx, n.opts.Binaries.Ctr, "--address", n.socket, "-n", "k8s.io",
			"images", "import", tar).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ctr images import %s: %v: %s", tar, err, strings.TrimSpace(string(out)))
		}
	}
	out, err := exec.CommandContext(ctx, n.opts.Binaries.Ctr, "--address", n.socket, "-n", "k8s.io", "images", "ls", "-q").Output()
	if err != nil {
		return fmt.Errorf("ctr images ls: %w", err)
	}
	n.Images = nil
	for _, ref := range strings.Fields(string(out)) {
		if !strings.HasPrefix(ref, "sha256:") {
			n.Images = append(n.Images, ref)
		}
	}
	if !contains(n.Images, n.opts.PauseImage) {
		return fmt.Errorf("the pause image %s is not among the loaded images %v: run `make images`", n.opts.PauseImage, n.Images)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
