package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// secondNodeAccount is the ServiceAccount (in kube-system) the second
// kubelet runs as: the cluster's token file knows only the first node's
// kubelet, and the Node authorizer ties that identity to the first node.
const secondNodeAccount = "berth-node-2"

// secondNodeTokenTTL is how long the second kubelet's token lasts, as long
// as the local cluster's certificates.
const secondNodeTokenTTL = 7 * 24 * 60 * 60

// secondNodeToken makes the second kubelet's identity: a ServiceAccount
// bound to Kubernetes' own system:node ClusterRole (what every kubelet
// may do, without the Node authorizer's per-node limits, which apply to
// system:nodes only), and returns a token of it.
func secondNodeToken(ctx context.Context, kube kubernetes.Interface) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: secondNodeAccount, Namespace: metav1.NamespaceSystem}}
	if _, err := kube.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "berth:" + secondNodeAccount},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	ttl := int64(secondNodeTokenTTL)
	tok, err := kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	return tok.Status.Token, nil
}

// atHost is rawURL with its host replaced by ip, its port kept.
func atHost(rawURL, ip string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("the apiserver's URL %q: not a URL with a host", rawURL)
	}
	if port := u.Port(); port != "" {
		u.Host = net.JoinHostPort(ip, port)
	} else {
		u.Host = ip
	}
	return u.String(), nil
}

// cgroupMount is where the cgroup hierarchies are mounted.
const cgroupMount = "/sys/fs/cgroup"

// cgroupDirs are root (a cgroup path such as /berth-n2) in every mounted
// hierarchy: one on cgroup v2, one per v1 hierarchy (symlinked names such
// as cpu,cpuacct counted once).
func cgroupDirs(mount, root string) []string {
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err == nil {
		return []string{filepath.Join(mount, root)}
	}
	entries, _ := os.ReadDir(mount)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() { // a symlink is not a directory entry here
			dirs = append(dirs, filepath.Join(mount, e.Name(), root))
		}
	}
	return dirs
}

// makeCgroupRoot creates the kubelet's cgroup root in every hierarchy (the
// kubelet refuses a root that does not exist); a v1 cpuset gets its
// parent's CPUs and memory nodes, without which no task may join it.
func makeCgroupRoot(root string) error {
	if root == "" {
		return nil
	}
	for _, dir := range cgroupDirs(cgroupMount, root) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cgroup root %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
				return fmt.Errorf("cgroup root %s: %s: %w", dir, f, err)
			}
		}
	}
	return nil
}

// removeCgroupRoot removes the kubelet's cgroup root and every cgroup
// under it, deepest first, in every hierarchy; a cgroup that still has
// tasks stays and is named.
func removeCgroupRoot(root string) error {
	if root == "" {
		return nil
	}
	var errs []string
	for _, dir := range cgroupDirs(cgroupMount, root) {
		var all []string
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				all = append(all, path)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(all)))
		for _, d := range all {
			if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing cgroups: %s", strings.Join(errs, "; "))
	}
	return nil
}
