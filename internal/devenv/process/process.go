package process

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec says how to run one process.
type Spec struct {
	// Name names the process in progress lines and errors ("kube-apiserver").
	Name string
	// Bin is the executable; Args its arguments.
	Bin  string
	Args []string
	// Env is added to this process's environment.
	Env []string
	// LogPath receives stdout and stderr, appended (a restarted process
	// writes after the one before it).
	LogPath string
}

// Process is one host process of the local environment (etcd,
// kube-apiserver, kwok, a berth component...). Its output goes to a log
// file, so a readiness failure can quote the tail of what it said.
type Process struct {
	Name    string
	LogPath string

	cmd     *exec.Cmd
	started time.Time
	done    chan struct{}

	mu      sync.Mutex
	exitErr error
	exited  bool
}

// Start runs spec.Bin in its own process group, so that Stop and Kill
// reach the process and anything it forked. Pdeathsig makes the kernel
// kill it if this Go process dies without running its teardown (a test
// timeout panic, kill -9): no stray process survives its owner.
func Start(spec Spec) (*Process, error) {
	f, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: open log file: %w", spec.Name, err)
	}
	cmd := exec.Command(spec.Bin, spec.Args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Bin, err)
	}
	p := &Process{Name: spec.Name, LogPath: spec.LogPath, cmd: cmd, started: time.Now(), done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exited, p.exitErr = true, err
		p.mu.Unlock()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited, p.exitErr
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// PID of the process.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Started is when the process was started.
func (p *Process) Started() time.Time { return p.started }

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and
// returns once the process has ended.
func (p *Process) Stop(grace time.Duration) {
	if exited, _ := p.Exited(); exited {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill sends SIGKILL to the process group and does not wait: what a crash
// or the OOM killer does. Tests use it to see a component restarted.
func (p *Process) Kill() error {
	if exited, _ := p.Exited(); exited {
		return fmt.Errorf("kill %s (pid %d): it has already exited", p.Name, p.PID())
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s (pid %d): %w", p.Name, p.PID(), err)
	}
	return nil
}

// Tail returns the last n lines of the process log.
func (p *Process) Tail(n int) string { return TailFile(p.LogPath, n) }

// TailFile returns the last n non-empty lines of the file at path, or a
// note saying why it cannot be read.
func TailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	return TailLines(data, n)
}

// TailLines keeps the last n non-empty lines of data.
func TailLines(data []byte, n int) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// ReadyFunc answers nil once a process serves.
type ReadyFunc func(ctx context.Context) error

// WaitReady polls ready every 100ms until it answers nil, the process
// exits, or timeout passes. Its errors name the process, say what happened
// (exited with which status, or which check kept failing) and quote the
// tail of its log: that is what a person needs to fix a broken start.
func (p *Process) WaitReady(ctx context.Context, timeout time.Duration, ready ReadyFunc) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
			_, exitErr := p.Exited()
			return fmt.Errorf("%s exited (%v) before it became ready; last lines of %s:\n%s",
				p.Name, exitErr, p.LogPath, p.Tail(20))
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s not ready after %s (last check: %v); last lines of %s:\n%s",
					p.Name, timeout, last, p.LogPath, p.Tail(20))
			}
			return fmt.Errorf("%s: waiting for readiness: %w", p.Name, ctx.Err())
		case <-tick.C:
		}
	}
}

// HTTPReady answers nil when GET url returns 200; token, if set, is sent
// as a bearer token.
func HTTPReady(client *http.Client, url, token string) ReadyFunc {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, oneLine(string(body), 5))
		}
		return nil
	}
}

// oneLine joins the last n lines of s with " | ".
func oneLine(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
