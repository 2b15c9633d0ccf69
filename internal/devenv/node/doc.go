// Package node runs a real Kubernetes node (and, when asked, a second one)
// next to the kwok fleet of the local control plane: containerd with runc
// and the CNI bridge plugin (from Debian), kubelet and kube-proxy (built
// from k8s.io/kubernetes like the servers), and CoreDNS (built from its Go
// module), as host processes.
// Containers of berth's own images really run there.
//
// Rules:
//   - It needs root, cgroups, a bridge and iptables. Preflight says exactly
//     what is missing; callers (`berth up`, the e2e suite) then carry on
//     with the kwok fleet alone and print why. Only one real node (with its
//     second, if asked) runs on a machine at a time (a lock file); a
//     second environment goes without.
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
//   - A second node (Node.StartSecond, started by the caller next to the
//     first, which it needs: the lock, CoreDNS) is a host of its own, so
//     hostNetwork pods on the two nodes do not share ports: its processes
//     (containerd, kubelet, kube-proxy) run in the network namespace
//     SecondNetns, entered with nsenter --net only (mounts stay shared:
//     the kubelet's volume mounts must be containerd's). A veth pair joins
//     it to the host (SecondHostIP on the host, SecondIP, its InternalIP,
//     inside); it has its own bridge and pod network (SecondPodCIDR),
//     forwarding, a default route through the host, and the host routes
//     SecondPodCIDR through it. Its processes reach the apiserver and
//     CoreDNS at GatewayIP. Its kubelet has its own root, state, socket
//     and cgroup root (SecondCgroupRoot: two kubelets must not share
//     /kubepods), and runs as a ServiceAccount bound to the system:node
//     ClusterRole (the cluster's token file knows the first kubelet only).
//     It carries the first node's label and taint and SecondTaint: pods
//     placed with Placement stay on the first node, PlacementAny reaches
//     both.
//   - Everything it writes lives in its run folder, except what the kernel
//     keeps: the bridge, iptables chains, the route and containers. Stop
//     removes every pod sandbox through containerd's CRI API, stops the
//     processes, unmounts what is left under the run folder and deletes the
//     bridge, the route and kube-proxy's chains; the second node's Stop
//     deletes its network namespace (its bridge, routes and chains go with
//     it), the host's end of the veth and its cgroups. Start first removes
//     what a killed run may have left: the lock file records the run's
//     folders and each containerd's state folder as they are made, and the
//     next Start force-deletes (runc) the containers whose bundles are in a
//     recorded state folder, kills their shims, removes their pods' network
//     namespaces, unmounts what is left under the recorded folders, and
//     removes the second node's namespace, veth and cgroups.
package node
