// Package node runs one real Kubernetes node next to the kwok fleet of the
// local control plane: containerd with runc and the CNI bridge plugin (from
// Debian), kubelet and kube-proxy (built from k8s.io/kubernetes like the
// servers), and CoreDNS (built from its Go module), as host processes.
// Containers of berth's own images really run there.
//
// Rules:
//   - It needs root, cgroups, a bridge and iptables. Preflight says exactly
//     what is missing; callers (`berth up`, the e2e suite) then carry on
//     with the kwok fleet alone and print why. Only one real node runs on a
//     machine at a time (a lock file); a second environment goes without.
//   - Nothing is pulled. Images are loaded into containerd from the
//     tarballs of `make images` (bin/images/*.tar); the sandbox image is
//     berth's own pause image. containerd's registry configuration points
//     every registry at a closed loopback port, so a missing image fails
//     with ErrImagePull and never leaves the machine.
//   - The node is labelled node.berth.dev/real=true and tainted
//     node.berth.dev/real=true:NoSchedule: only pods that tolerate the
//     taint land there, and the kwok fleet and everything that uses it is
//     unchanged.
//   - Network: a bridge (Bridge) with the gateway address GatewayIP on the
//     pod network PodCIDR; pods reach the apiserver through the
//     "kubernetes" Service at GatewayIP (cluster.Options.NodeIP), Services
//     through kube-proxy (iptables, every service packet masqueraded so
//     replies on the same bridge come back through it), and names through
//     CoreDNS on GatewayIP:53, which answers cluster.local only (no
//     upstream). The Service range is routed to the bridge so a packet for
//     a Service without rules never leaves the machine.
//   - Everything it writes lives in its run folder, except what the kernel
//     keeps: the bridge, iptables chains, the route and containers. Stop
//     removes every pod sandbox through containerd's CRI API, stops the
//     processes, unmounts what is left under the run folder and deletes the
//     bridge, the route and kube-proxy's chains. Start first removes what a
//     killed run may have left.
package node
