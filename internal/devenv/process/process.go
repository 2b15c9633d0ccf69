package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is one host process of the control plane (etcd, kube-apiserver,
// kwok, a berth component...). Its output goes to a log file in the run
// folder, so a readiness failure can quote the tail of what it said.
type Process struct {
	Name    string
	LogPath string

	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}

	mu      sync.Mutex
	exitErr error
	exited  bool
}

// startProcess runs bin with args in its own process group, so that Stop can
// signal the process and anything it forked. Pdeathsig makes the kernel kill
// it if this Go process dies without running its teardown (a test timeout
// panic, kill -9): no stray control plane survives its owner.
func startProcess(name, logDir, bin string, args, env []string) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: create log file: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, log: f, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exited, p.exitErr = true, err
		p.mu.Unlock()
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

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) {
	defer p.log.Close()
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

// Tail returns the last n lines of the process log.
func (p *Process) Tail(n int) string { return tailFile(p.LogPath, n) }

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	return tailLines(data, n)
}

// tailLines keeps the last n non-empty lines of data.
func tailLines(data []byte, n int) string {
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

// WaitReady polls ready every interval until it answers nil, the process
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
