package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary re-executes itself as the program when this is set.
const asMain = "BERTH_TEST_ENGINE_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// program runs main() in a child process whose argv[0] is name (the
// basename decides the mode), from a symlink to the test binary.
func program(t *testing.T, name string, args ...string) (int, string, string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.Symlink(self, link))
	cmd := exec.Command(link, args...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	var out, errb limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errb.String()
}

type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if len(l.b) < 1<<20 {
		l.b = append(l.b, p...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

func TestHelp(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"berth-test-engine", []string{"-h"}},
		{"python3", []string{"-m", "sglang.launch_server", "--help"}},
		{"vllm", []string{"serve", "-h"}},
	} {
		code, out, _ := program(t, tt.name, tt.args...)
		assert.Equal(t, 0, code, tt.name)
		assert.Contains(t, out, "It is NOT an inference engine", tt.name)
		assert.Contains(t, out, "python3 -m sglang_router.launch_router", tt.name)
	}
}

func TestMainExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent")
	code, _, stderr := program(t, "python3", "-m", "sglang.launch_server", "--model-path", missing, "--port", "1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, filepath.Join(missing, "config.json"))

	code, _, stderr = program(t, "vllm", "serve", "/m", "stray")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unexpected argument "stray"`)
}
