package cluster

import (
	"strconv"
)

// The command lines below are the ones measured on the project's 2-core
// machines (see ../shared/research/anchors.md §4). Everything listens on
// 127.0.0.1 only.

func etcdArgs(dataDir string, clientPort, peerPort int) []string {
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	return []string{
		"--name=berth",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=berth=" + peer,
		// A throw-away cluster: fsync only costs time.
		"--unsafe-no-fsync",
		"--logger=zap",
		"--log-outputs=stderr",
	}
}

// apiserverArgs are kube-apiserver's flags. nodeIP is the real node's
// address (Options.NodeIP), "" without one: then the apiserver listens on
// 127.0.0.1 only, the "kubernetes" Service has no endpoints, and pods get
// no service-account tokens (no pod runs). With one, pods on the node reach
// the apiserver through the "kubernetes" Service at nodeIP, and the
// ServiceAccount admission plugin mounts their tokens. profiling serves
// /debug/pprof (Options.Profiling).
func apiserverArgs(p *pki, etcdURL string, port int, certDir, nodeIP string, profiling bool) []string {
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	bind, advertise, reconciler := "127.0.0.1", "127.0.0.1", "none"
	admission := "--disable-admission-plugins=ServiceAccount"
	if nodeIP != "" {
		// 0.0.0.0: the host's processes keep dialling 127.0.0.1, pods dial
		// nodeIP through the Service. The lease reconciler writes nodeIP
		// into the "kubernetes" Service's endpoints.
		bind, advertise, reconciler = "0.0.0.0", nodeIP, "lease"
		admission = "--enable-admission-plugins=NodeRestriction"
	}
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + bind,
		"--advertise-address=" + advertise,
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + p.CertFile,
		"--tls-private-key-file=" + p.KeyFile,
		"--token-auth-file=" + p.TokensFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=" + url,
		"--service-account-key-file=" + p.SAKeyFile,
		"--service-account-signing-key-file=" + p.SAKeyFile,
		"--service-cluster-ip-range=" + ServiceCIDR,
		// Without a real node: pods of the fake fleet never mount a token,
		// and without the ServiceAccount plugin a pod created right after
		// its namespace does not wait for the "default" ServiceAccount
		// (envtest does the same).
		admission,
		"--allow-privileged=true",
		"--profiling=" + strconv.FormatBool(profiling),
		"--endpoint-reconciler-type=" + reconciler,
		"--kubelet-client-certificate=" + p.KubeletClientCert,
		"--kubelet-client-key=" + p.KubeletClientKey,
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// Debian's etcd 3.4 lacks RequestWatchProgress, so the watch cache
		// refuses streaming watch-lists (kwok v0.8.0 uses them and ignores
		// KUBE_FEATURE_WatchListClient): its reflectors then only see new pods
		// on a relist, up to a minute late. Without the cache, watches go to
		// etcd, which serves watch-lists itself; a small cluster does not miss
		// the cache.
		"--watch-cache=false",
	}
}

func schedulerArgs(kubeconfig string, port int, certDir string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--leader-elect=false",
	}
}

func controllerManagerArgs(kubeconfig string, p *pki, port int, certDir string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--leader-elect=false",
		// No cloud, no pod network: these controllers have nothing to do
		// and some of them would fight kwok over node state.
		"--controllers=*,-node-ipam-controller,-cloud-node-lifecycle-controller,-node-route-controller,-service-lb-controller,-persistentvolume-attach-detach-controller",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + p.SAKeyFile,
		"--root-ca-file=" + p.CAFile,
	}
}

func kwokArgs(kubeconfig string, stageFiles []string, port int) []string {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		// Only nodes the fleet marks as fake: a kind cluster's real node is left alone.
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-lease-duration-seconds=40",
		// Fake addresses: status data only, never dialled.
		"--cidr=10.0.0.1/16",
		"--node-ip=10.0.0.1",
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
	}
	for _, f := range stageFiles {
		args = append(args, "--config="+f)
	}
	return args
}
