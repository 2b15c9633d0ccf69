package node

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/berthdev/berth/internal/devenv/process"
)

// kubeletConfig is the KubeletConfiguration of the node: webhook
// authentication and authorization (the apiserver's client certificate
// is signed by the cluster CA), cgroupfs, containerd, CoreDNS at the
// gateway, pods' logs and volumes under the node's folder, the taint, and
// no image garbage collection (the images cannot be pulled back). The
// second node's kubelet has a cgroup root of its own.
func (n *Node) kubeletConfig(port, healthz int) string {
	healthzAddr, _, _ := strings.Cut(n.local(healthz), ":")
	var extra strings.Builder
	if n.lay.cgroupRoot != "" {
		fmt.Fprintf(&extra, "cgroupRoot: %s\n", n.lay.cgroupRoot)
	}
	taints := n.lay.taints
	if len(taints) == 0 {
		taints = []string{Label}
	}
	extra.WriteString("registerWithTaints:\n")
	for _, key := range taints {
		fmt.Fprintf(&extra, "- key: %s\n  value: %q\n  effect: NoSchedule\n", key, LabelValue)
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: %s
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
imageServiceEndpoint: unix://%s
clusterDNS: [%s]
clusterDomain: %s
resolvConf: %q
podLogsDir: %q
podCIDR: %s
failSwapOn: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
maxPods: 110
nodeStatusReportFrequency: 10s
syncFrequency: 10s
fileCheckFrequency: 5s
%s`, n.lay.nodeIP, port, healthzAddr, healthz, n.opts.Credentials.CAFile, n.socket, n.socket, GatewayIP, ClusterDomain,
		n.path("kubelet", "resolv.conf"), n.path("pod-logs"), n.lay.podCIDR, extra.String())
}

// writeKubeconfig writes a kubeconfig for one of the node's identities.
func (n *Node) writeKubeconfig(name, token string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["berth"] = &clientcmdapi.Cluster{Server: n.opts.Credentials.APIServerURL, CertificateAuthorityData: n.opts.Credentials.CAPEM}
	cfg.AuthInfos["berth"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["berth"] = &clientcmdapi.Context{Cluster: "berth", AuthInfo: "berth"}
	cfg.CurrentContext = "berth"
	path := n.path(name + ".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// startKubelet runs the kubelet until the Node is Ready.
func (n *Node) startKubelet(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	for _, d := range []string{"kubelet", "pod-logs"} {
		if err := os.MkdirAll(n.path(d), 0o755); err != nil {
			return err
		}
	}
	if err := makeCgroupRoot(n.lay.cgroupRoot); err != nil {
		return err
	}
	// Pods with dnsPolicy Default get this file: no search path and no
	// upstream (the machine has no network); ClusterFirst pods use CoreDNS.
	if err := os.WriteFile(n.path("kubelet", "resolv.conf"), []byte("nameserver "+GatewayIP+"\n"), 0o644); err != nil {
		return err
	}
	cfg := n.path("kubelet", "config.yaml")
	if err := os.WriteFile(cfg, []byte(n.kubeletConfig(ports[0], ports[1])), 0o644); err != nil {
		return err
	}
	kubeconfig, err := n.writeKubeconfig("kubelet", n.opts.Credentials.KubeletToken)
	if err != nil {
		return err
	}
	p, err := n.run("kubelet", n.opts.Binaries.Kubelet, []string{
		"--config=" + cfg,
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + n.path("kubelet", "root"),
		"--cert-dir=" + n.path("kubelet", "pki"),
		"--hostname-override=" + n.lay.name,
		"--node-ip=" + n.lay.nodeIP,
		"--node-labels=" + Label + "=" + LabelValue,
		"--v=1",
	}, "PATH="+os.Getenv("PATH")+":/usr/sbin:/sbin")
	if err != nil {
		return err
	}
	hz := "http://" + n.local(ports[1]) + "/healthz"
	if err := p.WaitReady(ctx, n.opts.Timeout, process.HTTPReady(&http.Client{Timeout: 2 * time.Second}, hz, "")); err != nil {
		return err
	}
	return n.waitNodeReady(ctx, p)
}

// waitNodeReady waits for the Node's Ready condition, failing early when
// the kubelet exits.
func (n *Node) waitNodeReady(ctx context.Context, p *process.Process) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, n.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("kubelet exited (%v); its log ends:\n%s", err, p.Tail(20))
		}
		node, err := n.opts.Kube.CoreV1().Nodes().Get(ctx, n.lay.name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready within %s (%s): %w; kubelet log ends:\n%s", n.lay.name, n.opts.Timeout, last, err, p.Tail(20))
	}
	return nil
}
