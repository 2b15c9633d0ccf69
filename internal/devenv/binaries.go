package devenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// FindComponent finds the executable of a berth component (say
// "berth-webhook"): next to the running executable first, so bin/berth
// runs the bin/berth-webhook built with it, then in $PATH. Nothing is
// built at run time; the error says what to build.
func FindComponent(name string) (string, error) {
	exe, err := os.Executable()
	if err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
	}
	return findComponent(name, exe, isExecutableFile, exec.LookPath)
}

// findComponent is FindComponent's order with the file system passed in.
func findComponent(name, exe string, isExec func(string) bool, lookPath func(string) (string, error)) (string, error) {
	var beside string
	if exe != "" {
		beside = filepath.Join(filepath.Dir(exe), name)
		if isExec(beside) {
			return beside, nil
		}
	}
	if p, err := lookPath(name); err == nil {
		return p, nil
	}
	where := "in $PATH"
	if beside != "" {
		where = "at " + beside + " nor in $PATH"
	}
	return "", fmt.Errorf("%s not found %s; build it with `make build` (go build -o bin/ ./cmd/...) and run bin/berth, "+
		"or `go install github.com/berthdev/berth/cmd/%s`", name, where, name)
}

func isExecutableFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
