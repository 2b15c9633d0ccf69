package process

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Backoff is how long a supervisor waits before it starts a process that
// died again. Zero fields take the defaults: 1s doubling to 30s, and a
// process that ran for a minute before it died starts the doubling again.
type Backoff struct {
	// Initial is the delay after the first death in a row.
	Initial time.Duration
	// Max caps the delay, which doubles with each further death in a row.
	Max time.Duration
	// Reset: a death after at least this much uptime counts as the first
	// in a row again.
	Reset time.Duration
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = time.Second
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Reset <= 0 {
		b.Reset = time.Minute
	}
	return b
}

// Delay is the wait before the restart that follows the n-th death in a
// row (n ≥ 1): Initial, doubled n-1 times, at most Max.
func (b Backoff) Delay(n int) time.Duration {
	b = b.withDefaults()
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Streak is the number of deaths in a row after one more death, given the
// number before it and how long the process that died had run.
func (b Backoff) Streak(before int, uptime time.Duration) int {
	if uptime >= b.withDefaults().Reset {
		return 1
	}
	return before + 1
}

// Death is one end of a supervised process that nobody asked for.
type Death struct {
	Name string
	// PID of the process that died; 0 when a restart could not even start
	// it (Err says why).
	PID int
	// Err is how it ended ("signal: killed", "exit status 1"), or why it
	// could not be started.
	Err    error
	At     time.Time
	Uptime time.Duration
	// Restart is the number of the restart this death leads to (1 for the
	// first), after Delay.
	Restart int
	Delay   time.Duration
	LogPath string
}

// String is the line a person reads on the progress writer.
func (d Death) String() string {
	who := d.Name + " could not be started"
	if d.PID != 0 {
		who = fmt.Sprintf("%s (pid %d) died after %s", d.Name, d.PID, d.Uptime.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: %v; restart %d in %s; log %s", who, d.Err, d.Restart, d.Delay, d.LogPath)
}

// SupervisedSpec says how to run and watch one process.
type SupervisedSpec struct {
	Spec
	// Ready answers nil once the process serves; nil: started is ready.
	Ready ReadyFunc
	// ReadyTimeout bounds each readiness wait. Default 90s.
	ReadyTimeout time.Duration
	// Backoff between a death and the restart.
	Backoff Backoff
	// Grace between SIGTERM and SIGKILL when stopped. Default 10s.
	Grace time.Duration
	// Log receives one line per death, restart and readiness after a
	// restart. Default io.Discard.
	Log io.Writer
}

func (s SupervisedSpec) withDefaults() SupervisedSpec {
	if s.ReadyTimeout <= 0 {
		s.ReadyTimeout = 90 * time.Second
	}
	if s.Grace <= 0 {
		s.Grace = 10 * time.Second
	}
	if s.Log == nil {
		s.Log = io.Discard
	}
	s.Backoff = s.Backoff.withDefaults()
	return s
}

// Supervised is a process that is started again, with backoff, whenever
// it dies, until Stop. Every death is kept (Deaths) and reported on the
// spec's Log; a Stop is not a death.
type Supervised struct {
	Name    string
	LogPath string

	spec   SupervisedSpec
	ctx    context.Context // done on Stop
	cancel context.CancelFunc
	done   chan struct{} // closed when the watch loop has ended

	mu       sync.Mutex
	cur      *Process
	ready    bool
	restarts int
	deaths   []Death
	stopping bool
}

// Supervise starts the process, waits until it is ready (ctx bounds only
// this first wait) and then watches it until Stop. A process that does not
// become ready is stopped and the error names it and quotes its log.
func Supervise(ctx context.Context, spec SupervisedSpec) (*Supervised, error) {
	spec = spec.withDefaults()
	p, err := Start(spec.Spec)
	if err != nil {
		return nil, err
	}
	if spec.Ready != nil {
		if err := p.WaitReady(ctx, spec.ReadyTimeout, spec.Ready); err != nil {
			p.Stop(spec.Grace)
			return nil, err
		}
	}
	s := &Supervised{Name: spec.Name, LogPath: spec.LogPath, spec: spec, cur: p, ready: true, done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.watch(p)
	return s, nil
}

// watch waits for the current process to end, records the death, sleeps
// the backoff and starts it again, until Stop.
func (s *Supervised) watch(p *Process) {
	defer close(s.done)
	streak := 0
	var startErr error
	for {
		pid, how, uptime := 0, startErr, time.Duration(0)
		if p != nil {
			select {
			case <-p.Done():
			case <-s.ctx.Done():
				return
			}
			_, how = p.Exited()
			pid, uptime = p.PID(), time.Since(p.Started())
		}
		streak = s.spec.Backoff.Streak(streak, uptime)
		d, ok := s.recordDeath(pid, how, uptime, streak)
		if !ok {
			return
		}
		fmt.Fprintf(s.spec.Log, "berth: %s; last lines:\n%s\n", d, indent(TailFile(s.LogPath, 5)))
		select {
		case <-time.After(d.Delay):
		case <-s.ctx.Done():
			return
		}
		if p, startErr = s.restart(); p != nil {
			s.awaitReady(p)
		}
	}
}

// recordDeath keeps the death unless the process is being stopped.
func (s *Supervised) recordDeath(pid int, how error, uptime time.Duration, streak int) (Death, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return Death{}, false
	}
	d := Death{Name: s.Name, PID: pid, Err: how, At: time.Now(), Uptime: uptime,
		Restart: s.restarts + 1, Delay: s.spec.Backoff.Delay(streak), LogPath: s.LogPath}
	s.deaths = append(s.deaths, d)
	s.ready = false
	return d, true
}

// restart starts the process again unless it is being stopped; the lock
// makes Stop see (and stop) whatever was started.
func (s *Supervised) restart() (*Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil, nil
	}
	s.restarts++
	p, err := Start(s.spec.Spec)
	if err != nil {
		return nil, err
	}
	s.cur = p
	fmt.Fprintf(s.spec.Log, "berth: %s restarted (restart %d, pid %d)\n", s.Name, s.restarts, p.PID())
	return p, nil
}

// awaitReady marks a restarted process ready once its probe answers. A
// process that stays unready keeps running (it may recover); one that
// exits is the watch loop's next death.
func (s *Supervised) awaitReady(p *Process) {
	if s.spec.Ready != nil {
		if err := p.WaitReady(s.ctx, s.spec.ReadyTimeout, s.spec.Ready); err != nil {
			if exited, _ := p.Exited(); !exited && s.ctx.Err() == nil {
				fmt.Fprintf(s.spec.Log, "berth: %s restarted but not ready: %v\n", s.Name, firstLine(err.Error()))
			}
			return
		}
	}
	s.mu.Lock()
	s.ready = s.cur == p
	s.mu.Unlock()
	fmt.Fprintf(s.spec.Log, "berth: %s ready again (pid %d)\n", s.Name, p.PID())
}

// Stop ends the process (SIGTERM, SIGKILL after the grace) and the
// supervision: no restart follows and no death is recorded. It is safe to
// call more than once and returns when everything has ended.
func (s *Supervised) Stop() {
	s.mu.Lock()
	already := s.stopping
	s.stopping = true
	p := s.cur
	s.mu.Unlock()
	if !already {
		s.cancel()
		p.Stop(s.spec.Grace)
	}
	<-s.done
}

// Kill sends SIGKILL to the current process (and its group), as a crash
// would: it is recorded as a death and restarted after the backoff.
func (s *Supervised) Kill() error {
	s.mu.Lock()
	p, stopping := s.cur, s.stopping
	s.mu.Unlock()
	if stopping {
		return fmt.Errorf("kill %s: it was stopped", s.Name)
	}
	return p.Kill()
}

// Process is the current (last started) process.
func (s *Supervised) Process() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Ready reports whether the current process has passed its readiness
// probe (always false between a death and the restarted process's probe).
func (s *Supervised) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready
}

// Restarts is how many times the process was started again after a death
// (a restart whose start itself failed counts too, and is a death).
func (s *Supervised) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Deaths lists every unrequested end of the process, oldest first.
func (s *Supervised) Deaths() []Death {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Death(nil), s.deaths...)
}

func indent(s string) string {
	return "   " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n   ")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
