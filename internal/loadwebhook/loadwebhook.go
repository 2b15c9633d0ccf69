// Package loadwebhook runs the webhook side of berth's load tools
// (berth-load, berth-admission-load): berth-webhook's server,
// AdmissionReview codec and GC default serving the tool's routes over TLS
// on a free loopback port, in a child process of the tool, so its CPU time
// and memory are its own. Only 127.0.0.1 is ever listened on.
package loadwebhook

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/berthdev/berth/certs"
	"github.com/berthdev/berth/internal/gcdefault"
	"github.com/berthdev/berth/webhook/admission"
	"github.com/berthdev/berth/webhook/app"
	"github.com/berthdev/berth/webhook/metrics"
	"github.com/berthdev/berth/webhook/server"
)

const ready = "READY "

// Allow is the no-op decision the tools measure against: every request is
// allowed without a look.
func Allow(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return admission.Allowed()
}

// Serve is the child's side: it applies berth-webhook's GOGC default (a
// GOGC in its environment wins), serves routes with the certificate in
// certDir and prints "READY <addr>" on stdout. It returns when serving
// fails.
func Serve(certDir string, routes []server.Route) error {
	gcdefault.Set(app.DefaultGOGC, os.Getenv)
	reloader, err := certs.NewReloader(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"), time.Minute, slog.Default())
	if err != nil {
		return err
	}
	srv := server.New("127.0.0.1:0", server.Router(routes, func() bool { return true }, metrics.New(), slog.Default()), reloader.TLSConfig(), "", nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("%s%s\n", ready, ln.Addr())
	return srv.Run(context.Background(), ln, nil, time.Second)
}

// Child is a running webhook side.
type Child struct {
	cmd  *exec.Cmd
	Addr string // host:port it serves on
	CA   []byte // PEM of the CA that signed its certificate
}

// Start writes a new loopback certificate into dir and runs the tool's own
// binary with args, which must make it call Serve with dir, and env added
// to its environment; it returns once the child has printed its address.
func Start(dir string, args, env []string) (*Child, error) {
	bundle, err := certs.Generate(nil, []net.IP{net.ParseIP("127.0.0.1")}, 24*time.Hour, time.Now())
	if err != nil {
		return nil, err
	}
	if err := bundle.WriteFiles(dir); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &Child{cmd: cmd, CA: bundle.CACert}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ready) {
		c.Stop()
		return nil, fmt.Errorf("the webhook side did not start: %q %v", line, err)
	}
	c.Addr = strings.TrimSpace(strings.TrimPrefix(line, ready))
	return c, nil
}

// PID is the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Stop kills the child and waits for it.
func (c *Child) Stop() { _ = c.cmd.Process.Kill(); _ = c.cmd.Wait() }
