package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/procstat"
	"github.com/berthdev/berth/selection"
)

// report is what a run measured.
type report struct {
	cfg      config
	window   time.Duration
	replaced int
	writes   map[string]int
	statuses map[string]v1beta1.AcceleratorClassStatus
	want     map[string]counts
	agreeIn  time.Duration // how long after the churn the statuses agreed; <0 never
	settled  bool          // the statuses agreed before the window
	rss      string        // the reconciler's VmRSS after the run
}

type counts struct{ nodes, total, available int64 }

// measure runs the churn for the window while counting class updates,
// then checks the statuses against the API.
func (l *load) measure(ctx context.Context) (*report, error) {
	rep := &report{cfg: l.cfg, writes: map[string]int{}, agreeIn: -1}
	// Let the controller write the first statuses of the new pods before
	// counting, so the window measures steady churn.
	progress("letting the statuses settle for %s", l.cfg.settle)
	var err error
	if rep.settled, err = l.waitAgree(ctx, l.cfg.settle); err != nil {
		return nil, err
	}
	list, err := l.berth.OmeV1beta1().AcceleratorClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	w, err := l.berth.OmeV1beta1().AcceleratorClasses().Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for ev := range w.ResultChan() {
			if c, ok := ev.Object.(*v1beta1.AcceleratorClass); ok && ev.Type == watch.Modified {
				mu.Lock()
				rep.writes[c.Name]++
				mu.Unlock()
			}
		}
	}()
	progress("churning %g pods/s for %s, counting AcceleratorClass writes", l.cfg.churn, l.cfg.window)
	start := time.Now()
	rep.replaced, err = l.churn(ctx, l.cfg.window)
	rep.window = time.Since(start)
	w.Stop()
	<-counted
	if err != nil {
		return rep, err
	}
	progress("%d pods replaced in %s; waiting up to %s for the statuses to agree with the API", rep.replaced, since(start), l.cfg.settle)
	stopped := time.Now()
	ok, err := l.waitAgree(ctx, l.cfg.settle)
	if ok {
		rep.agreeIn = time.Since(stopped)
	}
	rep.statuses, rep.want, _ = l.compare(ctx)
	rep.rss = l.reconcilerRSS()
	return rep, err
}

// churn deletes a random live pod and creates one on another node, churn
// times a second, with 8 workers so a slow call does not slow the rate.
func (l *load) churn(ctx context.Context, d time.Duration) (int, error) {
	if l.cfg.churn == 0 {
		time.Sleep(d)
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(time.Duration(float64(time.Second) / l.cfg.churn))
	defer tick.Stop()
	jobs := make(chan struct{}, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var done int
	var firstErr error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				err := l.replaceOne(context.Background())
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					done++
				}
				mu.Unlock()
			}
		}()
	}
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			select {
			case jobs <- struct{}{}:
			default: // the workers lag; the report gives the real rate
			}
		}
	}
	close(jobs)
	wg.Wait()
	return done, firstErr
}

func (l *load) replaceOne(ctx context.Context) error {
	l.mu.Lock()
	if len(l.live) == 0 {
		l.mu.Unlock()
		return l.createPod(ctx, rand.IntN(len(l.nodes)))
	}
	i := rand.IntN(len(l.live))
	name := l.live[i]
	l.live[i] = l.live[len(l.live)-1]
	l.live = l.live[:len(l.live)-1]
	l.mu.Unlock()
	zero := int64(0)
	if err := l.kube.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	return l.createPod(ctx, rand.IntN(len(l.nodes)))
}

// waitAgree polls until every class's status equals the API's count.
func (l *load) waitAgree(ctx context.Context, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	for {
		_, _, agree := l.compare(ctx)
		if agree {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// compare counts each class from the API's nodes and pods (Ready,
// schedulable nodes of the class's product; bound, unfinished pods) and
// reads its status.
func (l *load) compare(ctx context.Context) (map[string]v1beta1.AcceleratorClassStatus, map[string]counts, bool) {
	nodes, err1 := l.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	pods, err2 := l.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	cls, err3 := l.berth.OmeV1beta1().AcceleratorClasses().List(ctx, metav1.ListOptions{})
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, nil, false
	}
	used := map[string]map[corev1.ResourceName]int64{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !selection.PodHoldsAccelerators(p) {
			continue
		}
		if used[p.Spec.NodeName] == nil {
			used[p.Spec.NodeName] = map[corev1.ResourceName]int64{}
		}
		for r, q := range selection.PodAcceleratorRequests(p) {
			used[p.Spec.NodeName][r] += q
		}
	}
	statuses, want := map[string]v1beta1.AcceleratorClassStatus{}, map[string]counts{}
	agree := true
	for _, c := range cls.Items {
		res := selection.CountedResource(&c)
		var w counts
		for i := range nodes.Items {
			n := selection.NodeInfoOf(&nodes.Items[i])
			if !n.Ready || !classMatches(&c, n.Labels) {
				continue
			}
			w.nodes++
			w.total += n.Allocatable[res]
			w.available += max(0, n.Allocatable[res]-used[n.Name][res])
		}
		statuses[c.Name], want[c.Name] = c.Status, w
		s := c.Status
		if int64(len(s.Nodes)) != w.nodes || int64(s.TotalAccelerators) != w.total || int64(s.AvailableAccelerators) != w.available {
			agree = false
		}
	}
	return statuses, want, agree
}

// classMatches is this tool's own reading of its classes' discovery
// (a nodeSelector, or one Exists term), independent of selection's.
func classMatches(c *v1beta1.AcceleratorClass, labels map[string]string) bool {
	if sel := c.Spec.Discovery.NodeSelector; len(sel) > 0 {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
	for _, t := range c.Spec.Discovery.NodeSelectorTerms {
		ok := len(t.MatchExpressions) > 0
		for _, e := range t.MatchExpressions {
			if _, has := labels[e.Key]; !has || e.Operator != corev1.NodeSelectorOpExists {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// bound is the most writes a class may make in the window.
func (r *report) bound() int { return int(r.window/r.cfg.interval) + 1 }

func (r *report) failures() []string {
	var out []string
	for name, n := range r.writes {
		if n > r.bound() {
			out = append(out, fmt.Sprintf("AcceleratorClass %s: %d writes in %s, more than the bound %d", name, n, r.window.Round(time.Second), r.bound()))
		}
	}
	if r.agreeIn < 0 {
		out = append(out, "the statuses did not agree with the API's count within "+r.cfg.settle.String()+" after the churn")
	}
	sort.Strings(out)
	return out
}

func (r *report) print(w io.Writer) {
	fmt.Fprintf(w, "\nthe statuses agreed with the API before the window: %t; berth-reconciler VmRSS after the run: %s\n", r.settled, r.rss)
	fmt.Fprintf(w, "AcceleratorClass status writes: %d kwok nodes, %d pods of 1 GPU, %d replaced in %s (%.1f/s), --accelerator-status-interval %s\n",
		r.cfg.nodes, r.cfg.pods, r.replaced, r.window.Round(time.Second), float64(r.replaced)/r.window.Seconds(), r.cfg.interval)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "class\twrites\twrites/min\tbound\tnodes\ttotal\tavailable\tAPI count (nodes/total/available)\tSelectorTooBroad\t")
	names := make([]string, 0, len(r.statuses))
	for n := range r.statuses {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s, want := r.statuses[n], r.want[n]
		broad := ""
		for _, c := range s.Conditions {
			if c.Type == "SelectorTooBroad" {
				broad = string(c.Status) + " " + c.Reason
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%d\t%d\t%d\t%d\t%d/%d/%d\t%s\t\n", n, r.writes[n], float64(r.writes[n])/r.window.Minutes(), r.bound(),
			len(s.Nodes), s.TotalAccelerators, s.AvailableAccelerators, want.nodes, want.total, want.available, broad)
	}
	tw.Flush()
	if r.agreeIn >= 0 {
		fmt.Fprintf(w, "statuses agreed with the API's count %s after the churn stopped\n", r.agreeIn.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(w, "statuses did NOT agree with the API's count within %s\n", r.cfg.settle)
	}
}

// reconcilerRSS is the reconciler's VmRSS ("1968 kB"), or "unknown".
func (l *load) reconcilerRSS() string {
	p := l.rec.Process.Process()
	if p == nil {
		return "unknown"
	}
	m, err := procstat.Memory(p.PID())
	if err != nil {
		return "unknown"
	}
	return m.KB()
}
