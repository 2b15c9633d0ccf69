package node

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/devenv/process"
)

// coreDNSUser is CoreDNS's identity (a token of the cluster's).
const coreDNSUser = "system:coredns"

// corefile serves cluster.local (Services, headless Services' pods by
// hostname and subdomain, pods by address) on the gateway, and nothing
// else: there is no upstream to forward to.
func corefile(kubeconfig string, health, ready int) string {
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    health %s
    ready %s
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s berth
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    loop
}
`, GatewayIP, loopback(health), loopback(ready), ClusterDomain, kubeconfig)
}

// coreDNSRBAC is what the kubernetes plugin reads, as CoreDNS's own
// manifests grant it.
func coreDNSRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "berth:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "berth:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: coreDNSUser}},
	}
	return role, binding
}

// startCoreDNS grants CoreDNS its reads and runs it until /ready answers
// (its kubernetes plugin has synced).
func (n *Node) startCoreDNS(ctx context.Context) error {
	role, binding := coreDNSRBAC()
	if _, err := n.opts.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if _, err := n.opts.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	kubeconfig, err := n.writeKubeconfig("coredns", n.opts.Credentials.CoreDNSToken)
	if err != nil {
		return err
	}
	conf := n.path("Corefile")
	if err := os.WriteFile(conf, []byte(corefile(kubeconfig, ports[0], ports[1])), 0o644); err != nil {
		return err
	}
	p, err := n.run("coredns", n.opts.Binaries.CoreDNS, []string{"-conf", conf})
	if err != nil {
		return err
	}
	return p.WaitReady(ctx, n.opts.Timeout, process.HTTPReady(&http.Client{Timeout: 2 * time.Second}, "http://"+loopback(ports[1])+"/ready", ""))
}
