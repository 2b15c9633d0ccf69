// Package process runs the host processes of the local environment and
// keeps berth's components alive.
//
// Rules:
//   - Every process runs in its own process group with Pdeathsig, so Stop,
//     Kill and the death of the owner reach it and everything it forked.
//   - Output goes to one log file per process, appended across restarts;
//     errors about a process name it, say how it ended and quote its log.
//   - Start and WaitReady are for processes whose death ends the
//     environment (etcd, kube-apiserver...). Supervise is for components
//     (the webhook, the reconciler): a death is recorded (Deaths), reported
//     on the spec's Log, and followed by a restart after Backoff.Delay
//     (1s doubling to 30s; back to 1s after a minute of uptime). Stop is
//     not a death: nothing is recorded and nothing restarts.
//   - Backoff.Delay and Backoff.Streak are pure; the watch loop only waits,
//     records and restarts.
//
// A component is a few lines on top of Supervise:
//
//	s, err := process.Supervise(ctx, process.SupervisedSpec{
//		Spec:  process.Spec{Name: "berth-reconciler", Bin: bin, Args: args, LogPath: logPath},
//		Ready: process.HTTPReady(http.DefaultClient, probeURL+"/readyz", ""),
//		Log:   os.Stderr,
//	})
//
// In the local environment use cluster.Cluster.Supervise or
// devenv.Process, which fill the log path, environment and teardown.
package process
