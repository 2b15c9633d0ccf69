package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// Preflight names every missing part and how to get it.
func TestPreflightNamesWhatIsMissing(t *testing.T) {
	err := Preflight(Binaries{Kubelet: "/nonexistent/kubelet"}, nil, "")
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		`kubelet not found ("/nonexistent/kubelet"): make deps`,
		`kube-proxy not found (""): make deps`,
		"containerd not found", "apt-get install containerd",
		"runc not found", "iptables not found",
		"no CNI plugins in /usr/lib/cni or /opt/cni/bin: apt-get install containernetworking-plugins",
		"no images to load (bin/images/*.tar): run `make images`",
	} {
		assert.Contains(t, msg, want)
	}
	if os.Geteuid() != 0 {
		assert.Contains(t, msg, "not root")
	}
}

func TestCheckCgroups(t *testing.T) {
	v1 := t.TempDir()
	for _, c := range []string{"cpu", "memory", "pids"} {
		require.NoError(t, os.Mkdir(filepath.Join(v1, c), 0o755))
	}
	assert.NoError(t, checkCgroups(v1))

	v2 := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644))
	assert.NoError(t, checkCgroups(v2))
	require.NoError(t, os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("cpuset io pids\n"), 0o644))
	assert.ErrorContains(t, checkCgroups(v2), "lacks the cpu controller")

	assert.ErrorContains(t, checkCgroups(t.TempDir()), "no cgroup cpu hierarchy")
}

func TestUnescapeMount(t *testing.T) {
	assert.Equal(t, "/a b/c", unescapeMount(`/a\040b/c`))
	assert.Equal(t, "/plain", unescapeMount("/plain"))
	assert.Equal(t, `/odd\x`, unescapeMount(`/odd\x`))
}

func testNode(t *testing.T) *Node {
	return &Node{Dir: t.TempDir(), lay: firstLayout, socket: "/run/berth-node-x/containerd.sock", opts: Options{
		PauseImage: "ghcr.io/berthdev/berth-pause:0.1.0", ServiceCIDR: "10.0.0.0/16",
		Binaries:    Binaries{Runc: "/usr/sbin/runc", CNIDir: "/usr/lib/cni"},
		Credentials: Credentials{CAFile: "/x/ca.crt"},
	}}
}

// The rules of the package's doc, as the configuration files carry them.
func TestConfigurations(t *testing.T) {
	n := testNode(t)
	ctr := n.containerdConfig("/run/berth-node-x/state")
	for _, want := range []string{`sandbox_image = "ghcr.io/berthdev/berth-pause:0.1.0"`, "restrict_oom_score_adj = true",
		"SystemdCgroup = false", `snapshotter = "overlayfs"`, `address = "/run/berth-node-x/containerd.sock"`} {
		assert.Contains(t, ctr, want)
	}
	require.NoError(t, registryHosts(n.path("certs.d")))
	hosts, err := os.ReadFile(n.path("certs.d", "_default", "hosts.toml"))
	require.NoError(t, err)
	assert.Contains(t, string(hosts), `server = "`+ClosedRegistry+`"`, "every registry is closed")

	var kubelet map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(n.kubeletConfig(10250, 10248)), &kubelet))
	assert.Equal(t, []any{map[string]any{"key": Label, "value": LabelValue, "effect": "NoSchedule"}}, kubelet["registerWithTaints"])
	assert.Equal(t, []any{GatewayIP}, kubelet["clusterDNS"])
	assert.Equal(t, GatewayIP, kubelet["address"], "the kubelet listens on the pod network's gateway only")
	assert.EqualValues(t, 100, kubelet["imageGCHighThresholdPercent"], "loaded images are never collected: they cannot be pulled back")
	assert.Equal(t, false, kubelet["authentication"].(map[string]any)["anonymous"].(map[string]any)["enabled"])

	var proxy map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(n.proxyConfig("/k", 1, 2)), &proxy))
	assert.Equal(t, true, proxy["iptables"].(map[string]any)["masqueradeAll"])
	assert.Equal(t, "127.0.0.1:1", proxy["healthzBindAddress"])

	core := corefile("/k", 1, 2)
	assert.Contains(t, core, "bind "+GatewayIP)
	assert.NotContains(t, core, "forward", "no upstream: the machine has no network")
}

func TestCNIConfig(t *testing.T) {
	n := testNode(t)
	require.NoError(t, n.writeCNIConfig())
	data, err := os.ReadFile(n.path("cni", "net.d", "10-berth.conflist"))
	require.NoError(t, err)
	s := string(data)
	for _, want := range []string{`"bridge": "berth0"`, `"subnet": "10.244.0.0/24"`, `"hairpinMode": true`, `"ipMasq": true`} {
		assert.Contains(t, s, want)
	}
	assert.True(t, strings.Contains(s, n.path("cni", "ipam")), "IPAM state lives in the node's folder")
}

// The second node: its own address, pod network, cgroup root and taint;
// health and metrics on its address (the host cannot reach its loopback);
// DNS still the first node's CoreDNS.
func TestSecondNodeConfigurations(t *testing.T) {
	n := testNode(t)
	n.lay = secondLayout
	var kubelet map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(n.kubeletConfig(10250, 10248)), &kubelet))
	assert.Equal(t, SecondIP, kubelet["address"])
	assert.Equal(t, SecondIP, kubelet["healthzBindAddress"])
	assert.Equal(t, SecondPodCIDR, kubelet["podCIDR"])
	assert.Equal(t, SecondCgroupRoot, kubelet["cgroupRoot"], "two kubelets must not share /kubepods")
	assert.Equal(t, n.path("pod-logs"), kubelet["podLogsDir"], "two kubelets must not share /var/log/pods: each removes the other's pods' logs as orphans")
	assert.Equal(t, []any{GatewayIP}, kubelet["clusterDNS"], "CoreDNS runs once, on the first node")
	assert.Equal(t, []any{
		map[string]any{"key": Label, "value": LabelValue, "effect": "NoSchedule"},
		map[string]any{"key": SecondTaint, "value": LabelValue, "effect": "NoSchedule"},
	}, kubelet["registerWithTaints"])

	var first map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(testNode(t).kubeletConfig(10250, 10248)), &first))
	assert.NotContains(t, first, "cgroupRoot", "the first node keeps the kubelet's default")

	var proxy map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(n.proxyConfig("/k", 1, 2)), &proxy))
	assert.Equal(t, SecondIP+":1", proxy["healthzBindAddress"])
	assert.Equal(t, SecondName, proxy["hostnameOverride"])

	require.NoError(t, n.writeCNIConfig())
	data, err := os.ReadFile(n.path("cni", "net.d", "10-berth.conflist"))
	require.NoError(t, err)
	for _, want := range []string{`"bridge": "berth1"`, `"subnet": "10.244.1.0/24"`, `"gateway": "10.244.1.1"`} {
		assert.Contains(t, string(data), want)
	}
}

func TestNetworkCommands(t *testing.T) {
	assert.Equal(t, [][]string{
		{"link", "add", "berth0", "type", "bridge"},
		{"addr", "add", "10.244.0.1/24", "dev", "berth0"},
		{"link", "set", "berth0", "up"},
		{"route", "add", "10.0.0.0/16", "dev", "berth0"},
	}, bridgeCmds(firstLayout, "10.0.0.0/16"))
	assert.Equal(t, []string{"-n", "berth-n2", "link", "add", "berth1", "type", "bridge"}, bridgeCmds(secondLayout, "10.0.0.0/16")[0],
		"the second node's bridge is in its namespace")
	second := secondNetworkCmds(secondLayout)
	assert.Equal(t, []string{"netns", "add", "berth-n2"}, second[0])
	assert.Contains(t, second, []string{"-n", "berth-n2", "route", "add", "default", "via", SecondHostIP}, "the node reaches the rest through the host")
	assert.Contains(t, second, []string{"route", "add", SecondPodCIDR, "via", SecondIP, "dev", SecondVeth}, "the host reaches the node's pods through it")
}

func TestPlacementAny(t *testing.T) {
	sel, tol := PlacementAny()
	assert.Equal(t, map[string]string{Label: LabelValue}, sel)
	assert.Len(t, tol, 2)
	assert.Equal(t, SecondTaint, tol[1].Key)
}

func TestCgroupDirs(t *testing.T) {
	v1 := t.TempDir()
	for _, c := range []string{"cpu", "memory", "cpuset"} {
		require.NoError(t, os.Mkdir(filepath.Join(v1, c), 0o755))
	}
	require.NoError(t, os.Symlink(filepath.Join(v1, "cpu"), filepath.Join(v1, "cpu,cpuacct")))
	assert.ElementsMatch(t, []string{v1 + "/cpu/berth-n2", v1 + "/cpuset/berth-n2", v1 + "/memory/berth-n2"}, cgroupDirs(v1, "/berth-n2"))

	v2 := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("cpu memory\n"), 0o644))
	assert.Equal(t, []string{v2 + "/berth-n2"}, cgroupDirs(v2, "/berth-n2"))
}

func TestAtHost(t *testing.T) {
	got, err := atHost("https://127.0.0.1:6443", GatewayIP)
	require.NoError(t, err)
	assert.Equal(t, "https://10.244.0.1:6443", got)
	_, err = atHost("not a url", GatewayIP)
	assert.ErrorContains(t, err, "not a URL with a host")
}

// What a run records in the lock file is what the next Start removes.
func TestRecordRoundTrip(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "lock"))
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString("pid 42\n")
	require.NoError(t, err)
	require.NoError(t, record(f, recordDir, "/tmp/run/node"))
	require.NoError(t, record(f, recordState, "/run/berth-node-1"))
	require.NoError(t, record(f, recordState, "/run/berth-node-2/"))
	require.NoError(t, record(nil, recordState, "/x"), "no lock file: nothing recorded")
	data, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	assert.Equal(t, leftovers{states: []string{"/run/berth-node-1", "/run/berth-node-2"}, dirs: []string{"/tmp/run/node"}}, parseRecord(string(data)))
}

func TestParseRecord(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     leftovers
	}{
		{"older runs wrote a bare pid", "1234\n", leftovers{}},
		{"relative paths are ignored", "state run/x\ndir ../y\n", leftovers{}},
		{"unknown lines are ignored", "pid 1\nfoo /bar\nstate /run/berth-node-9\n", leftovers{states: []string{"/run/berth-node-9"}}},
		{"empty", "", leftovers{}},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, parseRecord(c.in)) })
	}
}

func TestSpecNetns(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}
	sandbox := write("sandbox.json", `{"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":"/var/run/netns/cni-1234"}]}}`)
	container := write("container.json", `{"linux":{"namespaces":[{"type":"network","path":"/proc/77/ns/net"}]}}`)
	assert.Equal(t, []string{"/run/netns/cni-1234"}, specNetns(sandbox), "as the mount table names it")
	assert.Empty(t, specNetns(container), "a container joins its sandbox's namespace: nothing pinned")
	assert.Empty(t, specNetns(filepath.Join(dir, "missing.json")))
	assert.Empty(t, specNetns(write("bad.json", "{")))
}

// removeLeftovers deletes only the containers of a recorded state folder,
// then the folder.
func TestRemoveLeftovers(t *testing.T) {
	state := filepath.Join(t.TempDir(), "berth-node-1")
	other := filepath.Join(t.TempDir(), "berth-node-2")
	require.NoError(t, os.MkdirAll(filepath.Join(state, "task", "a"), 0o755))
	log := filepath.Join(t.TempDir(), "runc.log")
	runc := filepath.Join(t.TempDir(), "runc")
	script := fmt.Sprintf(`#!/bin/sh
echo "$@" >> %s
case "$3" in
list) echo '[{"id":"a","bundle":"%s/task/a"},{"id":"b","bundle":"%s/task/b"}]' ;;
esac
`, log, state, other)
	require.NoError(t, os.WriteFile(runc, []byte(script), 0o755))
	require.NoError(t, removeLeftovers(context.Background(), runc, leftovers{states: []string{state, "/nonexistent/state"}}))
	calls, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "--root "+runcRoot+" list -f json\n--root "+runcRoot+" delete --force a\n", string(calls), "only the recorded run's container")
	assert.NoDirExists(t, state)
}
