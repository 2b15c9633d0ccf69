package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/berthdev/berth/internal/devenv/gang"
	"github.com/berthdev/berth/internal/devenv/process"
)

// StartGangScheduler runs sigs.k8s.io/scheduler-plugins next to the
// control plane: its scheduler as a second scheduler (profile
// gang.SchedulerName, with the Coscheduling plugin; kube-scheduler keeps
// default-scheduler) and its controller, which keeps PodGroups' status. Both
// are control plane processes: not restarted, reported by Died, stopped
// with the cluster. Call it once the PodGroup and ElasticQuota CRDs
// (gang.CRDs) are Established: the controller stops when a kind it watches
// is not served. It returns once the scheduler's /healthz and the
// controller's /readyz answer. Not on an attached (kind) cluster.
func (c *Cluster) StartGangScheduler(ctx context.Context) error {
	if c.attached != nil {
		return errors.New("the gang scheduler runs only next to a local control plane this package started, not on an attached cluster")
	}
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	schedPort, ctrlPort := ports[0], ports[1]
	kubeconfig := filepath.Join(c.RunDir, "scheduler-plugins.kubeconfig")
	config := filepath.Join(c.RunDir, "scheduler-plugins-config.yaml")
	if err := os.WriteFile(config, gangSchedulerConfig(kubeconfig), 0o644); err != nil {
		return fmt.Errorf("write the scheduler-plugins configuration: %w", err)
	}
	t := time.Now()
	sched, err := c.start(gang.SchedulerName, c.opts.Binaries.SchedulerPlugins,
		gangSchedulerArgs(config, kubeconfig, schedPort, filepath.Join(c.RunDir, "scheduler-plugins-certs")))
	if err != nil {
		return err
	}
	ctrl, err := c.start("scheduler-plugins-controller", c.opts.Binaries.SchedulerPluginsController, gangControllerArgs(kubeconfig, ctrlPort))
	if err != nil {
		return err
	}
	probe := &http.Client{Timeout: 5 * time.Second, Transport: insecureProbeTransport()}
	if err := sched.WaitReady(ctx, c.opts.Timeout, process.HTTPReady(probe, "https://127.0.0.1:"+strconv.Itoa(schedPort)+"/healthz", "")); err != nil {
		return err
	}
	c.record(gang.SchedulerName, t)
	if err := ctrl.WaitReady(ctx, c.opts.Timeout, process.HTTPReady(http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(ctrlPort)+"/readyz", "")); err != nil {
		return err
	}
	c.record("scheduler-plugins-controller", t)
	return nil
}

// gangSchedulerConfig is the second scheduler's configuration: one profile,
// gang.SchedulerName, whose pods are sorted and held by Coscheduling (a
// member of a PodGroup waits in Permit, up to
// gang.PermitWaitingTimeSeconds, until minMember members fit), the other
// plugins being kube-scheduler's defaults. No leader election: one replica.
// It is scheduler-plugins' manifests/coscheduling/scheduler-config.yaml with
// berth's profile name.
func gangSchedulerConfig(kubeconfig string) []byte {
	return fmt.Appendf(nil, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: %q
profiles:
- schedulerName: %s
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: %d
`, kubeconfig, gang.SchedulerName, gang.PermitWaitingTimeSeconds)
}

func gangSchedulerArgs(config, kubeconfig string, port int, certDir string) []string {
	return []string{
		"--config=" + config,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
	}
}

// gangControllerArgs: controller-runtime flags; its health probes on
// loopback, no metrics server ("0"), no leader election.
func gangControllerArgs(kubeconfig string, probePort int) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--probeAddr=127.0.0.1:" + strconv.Itoa(probePort),
		"--metricsAddr=0",
		"--enableLeaderElection=false",
	}
}

// record appends a Timing and prints its "ready in" line.
func (c *Cluster) record(name string, since time.Time) {
	d := time.Since(since)
	c.Timings = append(c.Timings, Timing{name, d})
	fmt.Fprintf(c.opts.Log, "berth: %-24s ready in %s\n", name, d.Round(10*time.Millisecond))
}

// insecureProbeTransport is for the loopback /healthz probe of a process
// serving on its own self-signed certificate, as Start's probe of
// kube-scheduler; never for a client that carries credentials.
func insecureProbeTransport() *http.Transport {
	return &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // loopback health probe only
}
