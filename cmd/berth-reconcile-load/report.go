package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/berthdev/berth/internal/devenv/process"
	"github.com/berthdev/berth/webhook/server"
)

// report is everything measured, printed at the end of the run.
type report struct {
	cfg                config
	loadStart, loadEnd string
	nodes              int
	creates            []createRun
	apply              *applyRun
	idle               *idleRun
	deaths             []process.Death
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nberth-reconcile-load: %d CPUs, load average %s at the start, %s at the end\n", runtime.NumCPU(), r.loadStart, r.loadEnd)
	fmt.Fprintf(w, "control plane: internal/devenv on 127.0.0.1, %d kwok nodes (cpu 64, memory 256Gi, pods %d each)\n", r.nodes, podsPerNode)
	fmt.Fprintf(w, "berth-reconciler %s (other flags at their defaults)\n", strings.Join(reconcilerArgs(r.cfg)[2:], " "))
	fmt.Fprintf(w, "command: %s\n", strings.Join(os.Args, " "))
	fmt.Fprintf(w, "raw loop: rest.Config QPS %g, Burst %d, one create at a time\n", r.cfg.qps, r.cfg.burst)
	if len(r.creates) > 0 {
		r.printCreates(w)
	}
	if r.apply != nil {
		r.printApply(w)
	}
	if r.idle != nil {
		r.printIdle(w)
	}
	for _, d := range r.deaths {
		fmt.Fprintf(w, "\nWARNING: %s\n", d)
	}
}

func (r *report) printCreates(w io.Writer) {
	fmt.Fprintf(w, "\n1. Pod creation: one InferenceService of N single-pod groups (reconciler and webhook) next to N plain pods (raw loop)\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "N\tpath\tfirst pod\tN created\tcreates/s\tratio\tfirst→N creates/s\tratio\tall Running\tper create\twebhook call\t")
	for i, c := range r.creates {
		ratio, spanRatio := "", ""
		if c.path == pathReconciler {
			if raw, ok := rawOf(r.creates[i:], c.n); ok {
				ratio = fmt.Sprintf("%.2f×", c.rate()/raw.rate())
				if raw.spanRate() > 0 {
					spanRatio = fmt.Sprintf("%.2f×", c.spanRate()/raw.spanRate())
				}
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.1f\t%s\t%.1f\t%s\t%s\t%s\t%s\t\n", c.n, c.path, dur(c.first), dur(c.created), c.rate(), ratio,
			c.spanRate(), spanRatio, dur(c.running), ms(c.created/time.Duration(c.n)), ms(c.webhook))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nTimes count from the service's apply (reconciler) or the first create (raw) until the pod was seen on a")
	fmt.Fprintln(w, "watch. creates/s = N / \"N created\"; its ratio, reconciler ÷ raw, is the result (goal ≥ 0.80×).")
	fmt.Fprintln(w, "first→N creates/s leaves out the time until the first pod (the service's admission, the reconciler")
	fmt.Fprintln(w, "noticing it). \"all Running\" includes the scheduler binding every pod and kwok marking it Running.")
	fmt.Fprintln(w, "per create = \"N created\" / N. webhook call = the apiserver's mean round trip to "+server.WebhookMutatePods)
	fmt.Fprintln(w, "during the run (apiserver_admission_webhook_admission_duration_seconds); the raw loop never calls it.")
	for _, c := range r.creates {
		switch {
		case c.path != pathReconciler:
		case c.writesErr != nil:
			fmt.Fprintf(w, "NOTE: at N=%d the reconciler's pod creates could not be read: %v\n", c.n, c.writesErr)
		case c.writes != float64(c.n):
			fmt.Fprintf(w, "NOTE: at N=%d the reconciler counted %.0f pod creates.\n", c.n, c.writes)
		}
	}
}

func rawOf(runs []createRun, n int) (createRun, bool) {
	i := slices.IndexFunc(runs, func(c createRun) bool { return c.path == pathRaw && c.n == n })
	if i < 0 {
		return createRun{}, false
	}
	return runs[i], true
}

func (r *report) printApply(w io.Writer) {
	a := r.apply
	fmt.Fprintf(w, "\n2. Apply to Running: %d one-group InferenceServices, server-side applied one after another\n\n", a.n)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "services\tall applied\tall Running\tper service apply→Running p50\tp99\tmax\t")
	fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t\n", a.n, dur(a.applied), dur(a.running),
		dur(quantile(a.each, 0.5)), dur(quantile(a.each, 0.99)), dur(quantile(a.each, 1)))
	tw.Flush()
}

func (r *report) printIdle(w io.Writer) {
	d := r.idle
	fmt.Fprintf(w, "\n3. Idle reconciler: %d InferenceServices × %d groups = %d pods\n\n", d.services, d.replicas, d.services*d.replicas)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "all applied\t%s after the first apply\n", dur(d.applied))
	fmt.Fprintf(tw, "all pods created\t%s\n", dur(d.created))
	fmt.Fprintf(tw, "all pods Running\t%s\n", dur(d.running))
	fmt.Fprintf(tw, "services Ready at their generation\t%d of %d (%s)\n", d.ready, d.services, dur(d.settled))
	if d.notReady != "" {
		fmt.Fprintf(tw, "  e.g.\t%s\n", d.notReady)
	}
	if over := d.services - serviceIPs(); over > 0 {
		fmt.Fprintf(tw, "NOTE\t%d services need %d ClusterIPs; the local Service CIDR %s holds %d, so %d front Services are\n",
			d.services, d.services, clusterServiceCIDR(), serviceIPs(), over)
		fmt.Fprintf(tw, "\trefused (\"range is full\") and retried with backoff: the writes below are those retries.\n")
		fmt.Fprintf(tw, "\tFor 10,000 pods that fit: -idle-services 250 -idle-replicas 40.\n")
	}
	if d.quiet > 0 {
		fmt.Fprintf(tw, "reconciler sent no write for %s\t%s\n", r.cfg.settle, dur(d.quiet))
	} else {
		fmt.Fprintf(tw, "reconciler sent no write for %s\tnever within %s: measured anyway\n", r.cfg.settle, r.cfg.wait)
	}
	fmt.Fprintf(tw, "reconciler CPU until then\t%.1f s\n", d.buildCPU)
	fmt.Fprintf(tw, "reconciler writes until then\t%.0f%s; %.0f reconciles failed\n", total(d.buildWrites), writesDetail(d.buildWrites), d.buildErrors)
	if d.window > 0 && d.pid != 0 {
		fmt.Fprintf(tw, "\nwindow of %s, berth-reconciler pid %d\t\n", d.window, d.pid)
		fmt.Fprintf(tw, "CPU (utime+stime)\t%.2f s (%.2f%% of one core)\n", d.win.cpu, 100*d.win.cpu/d.window.Seconds())
		fmt.Fprintf(tw, "RSS at the end\t%.1f MiB (peak since start %.1f MiB)\n", float64(d.win.rssKiB)/1024, float64(d.win.hwmKiB)/1024)
		fmt.Fprintf(tw, "Go heap in use at the end\t%.1f MiB (%.1f MiB from the OS)\n", d.heapInuse/(1<<20), d.goSys/(1<<20))
		fmt.Fprintf(tw, "reconciles\t%.0f (%.0f failed)\n", d.syncs, d.errors)
		fmt.Fprintf(tw, "API writes\t%.0f (goal 0)%s\n", total(d.writes), writesDetail(d.writes))
		if !d.resyncAt.IsZero() {
			fmt.Fprintf(tw, "NOTE\tthe window holds the reconciler's informer resync (every %s since its start; about %s):\n",
				r.cfg.resync, d.resyncAt.Format("15:04:05"))
			fmt.Fprintf(tw, "\tevery cached object comes back as an update event then. -resync moves it.\n")
		}
		if d.restarted {
			fmt.Fprintf(tw, "WARNING\tthe reconciler restarted during the window: the numbers mix two processes\n")
		}
	}
	tw.Flush()
}

func writesDetail(m map[string]float64) string {
	var parts []string
	for k, v := range m {
		if v != 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	slices.Sort(parts)
	return ": " + strings.Join(parts, ", ")
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < 10*time.Second:
		return d.Round(10 * time.Millisecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}
