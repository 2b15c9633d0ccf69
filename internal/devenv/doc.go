// Package devenv is berth's local development environment: a real
// Kubernetes control plane on 127.0.0.1 (package cluster) with berth's CRDs,
// a fake GPU fleet (fleet, kwok) and berth's components, for the e2e suite,
// `berth up` and `berth demo`. It is not part of the product: nothing in
// the webhook or the reconciler imports it.
//
// Gang scheduling (package gang): every cluster also gets the PodGroup CRDs
// of Coscheduling (scheduling.x-k8s.io/v1alpha1) and Volcano
// (scheduling.volcano.sh/v1beta1), and ElasticQuota, after berth's
// (Env.GangCRDs); then, on the local control plane (not on kind),
// sigs.k8s.io/scheduler-plugins v0.32.7 runs as a second scheduler, profile
// gang.SchedulerName ("scheduler-plugins-scheduler") with the Coscheduling
// plugin, with its PodGroup controller. kube-scheduler keeps
// "default-scheduler"; a pod chooses with spec.schedulerName. No Volcano
// scheduler runs.
//
// Kueue (package kueue): not part of Up. The Kueue sync's e2e tests install
// Kueue v0.17.0's own CRDs (kueue.CRDs) and run its controller manager
// next to the control plane (cluster.Cluster.StartKueue; the binary from
// `make deps`, bin/kueue-v0.17.0/kueue).
//
// A real node (package node: containerd, kubelet, kube-proxy, CoreDNS)
// runs next to the fleet when Options.RealNode asks for one and the
// machine can run it (root, cgroups, `make deps`, `make images`); where it
// cannot, Env.NodeErr says why and everything else runs as before. With
// it the apiserver also serves pods (cluster.Options.NodeIP), so berth can
// be installed in the cluster and a service's containers really run.
// Options.SecondNode adds a second real node in its own network namespace
// (node.StartSecond: hostNetwork pods get separate hosts); Env.SecondNode,
// or Env.SecondNodeErr saying why not. Stop stops the second node, then the
// first, then the rest.
//
// Rules:
//   - Components are passed explicitly: Up(ctx, Options{Components:
//     []Component{Webhook(bin), Reconciler(bin)}}). There is no
//     registration by import and no package state; what a test needs from
//     a component (ports, certificates, its process) is on the value it
//     passed in, filled by Start.
//   - Nothing is built at run time in the product path. Component binaries
//     are found by FindComponent (next to the running executable, then
//     $PATH); the Kubernetes and scheduler-plugins binaries by
//     cluster.FindBinaries ($BERTH_KUBE_BIN_DIR, the checkout's bin/, next
//     to the executable, $PATH). Only inside a checkout are missing Kubernetes binaries built,
//     by `make deps` (cluster.EnsureBinaries). The e2e suite's TestMain
//     builds the component binaries once, as a test harness.
//   - Everything applied comes from the binary: deploy.FS (CRDs, runtimes,
//     classes, samples, webhook configurations), the gang CRDs (gang.CRDs),
//     the kwok Stage files and the fleet are compiled in, so an installed
//     berth works anywhere.
//   - A component runs as a process.Supervised (env.Cluster.Supervise): when
//     it dies it is restarted with backoff (1s doubling to 30s), the death
//     is printed on Options.Events and kept (Env.Deaths, and each
//     component's Process.Deaths). A control plane process that dies is not
//     restarted: callers see it through env.Cluster.Died.
//
// Adding a component that follows the contract of ProcessComponent
// (--kubeconfig, --probe-listen, GET /readyz) is one constructor:
//
//	func Reconciler(bin string, args ...string) *ProcessComponent {
//		return Process("berth-reconciler", bin, args...)
//	}
//
// and one entry in Options.Components. A component with more set-up (the
// webhook: certificates, registration) wraps a ProcessComponent in its own
// Start, as WebhookComponent does.
package devenv
