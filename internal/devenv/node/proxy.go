package node

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/berthdev/berth/internal/devenv/cluster"
	"github.com/berthdev/berth/internal/devenv/process"
)

func freePorts(n int) ([]int, error) { return cluster.FreePorts(n) }

// proxyConfig is kube-proxy's configuration: iptables mode, every service
// packet masqueraded (so a reply from a pod on the same bridge returns
// through the host even without br_netfilter), node ports only on the
// pod network, and conntrack sysctls left alone.
func (n *Node) proxyConfig(kubeconfig string, healthz, metrics int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %q
hostnameOverride: %s
mode: iptables
clusterCIDR: %s
healthzBindAddress: %s
metricsBindAddress: %s
nodePortAddresses: [%s]
iptables:
  masqueradeAll: true
  syncPeriod: 10s
  minSyncPeriod: 0s
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kubeconfig, n.lay.name, n.lay.podCIDR, n.local(healthz), n.local(metrics), n.lay.podCIDR)
}

// startProxy runs kube-proxy until its /healthz answers.
func (n *Node) startProxy(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	kubeconfig, err := n.writeKubeconfig("kube-proxy", n.opts.Credentials.ProxyToken)
	if err != nil {
		return err
	}
	cfg := n.path("kube-proxy.yaml")
	if err := os.WriteFile(cfg, []byte(n.proxyConfig(kubeconfig, ports[0], ports[1])), 0o644); err != nil {
		return err
	}
	p, err := n.run("kube-proxy", n.opts.Binaries.KubeProxy, []string{"--config=" + cfg, "--v=1"},
		"PATH="+os.Getenv("PATH")+":/usr/sbin:/sbin")
	if err != nil {
		return err
	}
	return p.WaitReady(ctx, n.opts.Timeout, process.HTTPReady(&http.Client{Timeout: 2 * time.Second}, "http://"+n.local(ports[0])+"/healthz", ""))
}
