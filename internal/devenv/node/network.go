package node

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// sysctls the node needs: forwarding between the bridge and the host, and
// bridged packets through iptables where br_netfilter exists.
var sysctls = map[string]string{
	"/proc/sys/net/ipv4/ip_forward":                 "1",
	"/proc/sys/net/bridge/bridge-nf-call-iptables":  "1",
	"/proc/sys/net/bridge/bridge-nf-call-ip6tables": "1",
}

// startNetwork removes what a killed run left, then makes the bridge with
// the gateway address (CoreDNS binds it before any pod exists), the
// unreachable route of the Service range, the sysctls and the CNI
// configuration. The second node first gets its network namespace and
// veth (secondNetworkCmds).
func (n *Node) startNetwork(ctx context.Context) error {
	_ = n.cleanupKernel() // leftovers of a killed run; errors: nothing to clean
	if n.lay.netns == "" {
		for path, v := range sysctls {
			if _, err := os.Stat(path); err != nil {
				continue // br_netfilter absent: every service packet is masqueraded anyway
			}
			if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
				return fmt.Errorf("sysctl %s=%s: %w", strings.TrimPrefix(path, "/proc/sys/"), v, err)
			}
		}
	}
	cmds := bridgeCmds(n.lay, n.opts.ServiceCIDR)
	if n.lay.netns != "" {
		cmds = append(secondNetworkCmds(n.lay), cmds...)
	}
	for _, args := range cmds {
		if err := runCmd(ctx, n.opts.Binaries.IP, args...); err != nil {
			return err
		}
	}
	if n.lay.netns != "" {
		if err := n.netnsSysctls(ctx); err != nil {
			return err
		}
	}
	return n.writeCNIConfig()
}

// bridgeCmds are the ip commands of the node's bridge (in the node's
// network namespace: ip -n).
func bridgeCmds(l layout, serviceCIDR string) [][]string {
	cmds := [][]string{
		{"link", "add", l.bridge, "type", "bridge"},
		{"addr", "add", l.gateway + "/24", "dev", l.bridge},
		{"link", "set", l.bridge, "up"},
		// A packet for a Service that kube-proxy has no rule for (yet) must
		// not follow the default route out of the machine: the Service
		// range is on the bridge. (Not an unreachable route: the host's own
		// connections, the apiserver's to webhooks among them, are routed
		// before kube-proxy's OUTPUT rules rewrite them.)
		{"route", "add", serviceCIDR, "dev", l.bridge},
	}
	if l.netns != "" {
		for i := range cmds {
			cmds[i] = append([]string{"-n", l.netns}, cmds[i]...)
		}
	}
	return cmds
}

// secondNetworkCmds make the second node's network namespace, the veth
// pair to the host (eth0 inside), and the routes both ways: the host
// reaches the node's pod network through the node's address, the node
// reaches everything else through the host.
func secondNetworkCmds(l layout) [][]string {
	ns := []string{"-n", l.netns}
	return [][]string{
		{"netns", "add", l.netns},
		{"link", "add", SecondVeth, "type", "veth", "peer", "name", "eth0", "netns", l.netns},
		{"addr", "add", SecondHostIP + "/30", "dev", SecondVeth},
		{"link", "set", SecondVeth, "up"},
		append(ns, "link", "set", "lo", "up"),
		append(ns, "addr", "add", l.nodeIP+"/30", "dev", "eth0"),
		append(ns, "link", "set", "eth0", "up"),
		append(ns, "route", "add", "default", "via", SecondHostIP),
		{"route", "add", l.podCIDR, "via", l.nodeIP, "dev", SecondVeth},
	}
}

// netnsSysctls sets the sysctls in the node's network namespace (they are
// per namespace): forwarding between its bridge and eth0, and bridged
// packets through iptables where br_netfilter exists.
func (n *Node) netnsSysctls(ctx context.Context) error {
	var script strings.Builder
	for path, v := range sysctls {
		fmt.Fprintf(&script, "if [ -e %s ]; then echo %s > %s || exit 1; fi\n", path, v, path)
	}
	return runCmd(ctx, n.opts.Binaries.Nsenter, "--net="+netnsPath(n.lay.netns), "--", "/bin/sh", "-c", script.String())
}

// netnsPath is where `ip netns add` pins a network namespace.
func netnsPath(name string) string { return "/run/netns/" + name }

// writeCNIConfig writes the bridge network for containerd's CRI plugin:
// host-local addresses from PodCIDR, the gateway on the bridge, outgoing
// traffic masqueraded, hairpin so a pod reaches itself through a Service.
func (n *Node) writeCNIConfig() error {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "berth",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": n.lay.bridge, "isGateway": true, "ipMasq": true, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  []any{[]any{map[string]any{"subnet": n.lay.podCIDR, "gateway": n.lay.gateway}}},
					"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
					"dataDir": n.path("cni", "ipam"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(n.path("cni", "net.d"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(n.path("cni", "net.d", "10-berth.conflist"), data, 0o644)
}

// cleanupKernel deletes the bridge, the route and kube-proxy's iptables
// chains; each is attempted, and the errors of those that existed are
// returned. The second node's are all in its network namespace: deleting
// the namespace and the host's end of the veth (with its route) removes
// them.
func (n *Node) cleanupKernel() error {
	ctx := context.Background()
	var errs []string
	if n.lay.netns != "" {
		if _, err := os.Stat(netnsPath(n.lay.netns)); err == nil {
			if err := runCmd(ctx, n.opts.Binaries.IP, "netns", "del", n.lay.netns); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if _, err := os.Stat("/sys/class/net/" + SecondVeth); err == nil {
			if err := runCmd(ctx, n.opts.Binaries.IP, "link", "del", SecondVeth); err != nil {
				errs = append(errs, err.Error())
			}
		}
		return joinErrs(errs)
	}
	if _, err := os.Stat("/sys/class/net/" + n.lay.bridge); err == nil {
		if err := runCmd(ctx, n.opts.Binaries.IP, "link", "del", n.lay.bridge); err != nil {
			errs = append(errs, err.Error())
		}
	}
	_ = runCmd(ctx, n.opts.Binaries.IP, "route", "del", "unreachable", n.opts.ServiceCIDR) // left by older runs
	_ = runCmd(ctx, n.opts.Binaries.IP, "route", "del", n.opts.ServiceCIDR, "dev", n.lay.bridge)
	if n.opts.Binaries.KubeProxy != "" {
		// Removes the KUBE-* chains of every mode.
		_ = runCmd(ctx, n.opts.Binaries.KubeProxy, "--cleanup", "--v=0")
	}
	n.removeKubeletChains(ctx)
	return joinErrs(errs)
}

func joinErrs(errs []string) error {
	if len(errs) > 0 {
		return fmt.Errorf("cleaning the node's network: %s", strings.Join(errs, "; "))
	}
	return nil
}

// kubeletChains are the iptables chains the kubelet itself makes (its
// localnet firewall and its canaries); kube-proxy --cleanup leaves them.
var kubeletChains = []struct{ table, chain string }{
	{"filter", "KUBE-FIREWALL"}, {"filter", "KUBE-KUBELET-CANARY"},
	{"nat", "KUBE-KUBELET-CANARY"}, {"mangle", "KUBE-KUBELET-CANARY"}, {"mangle", "KUBE-IPTABLES-HINT"},
}

// removeKubeletChains deletes the jumps to the kubelet's chains, then the
// chains; a chain that is not there is no error.
func (n *Node) removeKubeletChains(ctx context.Context) {
	ipt := n.opts.Binaries.IPTables
	if ipt == "" {
		return
	}
	for _, from := range []string{"INPUT", "OUTPUT"} {
		for runCmd(ctx, ipt, "-t", "filter", "-D", from, "-j", "KUBE-FIREWALL") == nil {
		}
	}
	for _, c := range kubeletChains {
		_ = runCmd(ctx, ipt, "-t", c.table, "-F", c.chain)
		_ = runCmd(ctx, ipt, "-t", c.table, "-X", c.chain)
	}
}

// runCmd runs a short command and returns its output in the error.
func runCmd(ctx context.Context, bin string, args ...string) error {
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
