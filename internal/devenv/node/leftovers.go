package node

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The lock file (LockPath) says what the run holding it has made, one
// line each, so that the next Start can remove what a killed run left:
//
//	pid 1234
//	state /run/berth-node-123      (a containerd's state folder)
//	dir /tmp/berth-cluster-1/node  (a node's folder)
const (
	recordPID   = "pid"
	recordState = "state"
	recordDir   = "dir"
)

// runcRoot is where containerd's runc shim keeps the CRI namespace's
// containers (its default root, the same for every containerd).
const runcRoot = "/run/containerd/runc/k8s.io"

// record appends one line to the lock file.
func record(lock *os.File, kind, value string) error {
	if lock == nil {
		return nil
	}
	st, err := lock.Stat()
	if err != nil {
		return err
	}
	_, err = lock.WriteAt([]byte(kind+" "+value+"\n"), st.Size())
	return err
}

// leftovers is what a lock file's lines name.
type leftovers struct {
	states, dirs []string
}

// parseRecord reads a lock file's content. The bare pid line of older
// runs is ignored, as are lines it does not know.
func parseRecord(content string) leftovers {
	var l leftovers
	sc := bufio.NewScanner(strings.NewReader(content))
	for sc.Scan() {
		kind, value, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok || !filepath.IsAbs(value) {
			continue
		}
		switch kind {
		case recordState:
			l.states = append(l.states, filepath.Clean(value))
		case recordDir:
			l.dirs = append(l.dirs, filepath.Clean(value))
		}
	}
	return l
}

// removeLeftovers removes what a killed run recorded: its containers
// (runc delete --force of those whose bundle is in a recorded state
// folder), their shims, their pods' network namespaces, the mounts under
// the recorded folders, and the state folders. Each step is attempted; the
// errors are joined.
func removeLeftovers(ctx context.Context, runc string, l leftovers) error {
	var errs []error
	for _, state := range l.states {
		if _, err := os.Stat(state); err != nil {
			continue
		}
		netns, err := deleteContainers(ctx, runc, state)
		if err != nil {
			errs = append(errs, err)
		}
		killShims(state)
		if err := unmountUnder(append([]string{state}, netns...)...); err != nil {
			errs = append(errs, err)
		}
		for _, p := range netns {
			_ = os.Remove(p)
		}
		if err := os.RemoveAll(state); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unmountUnder(l.dirs...); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// runcContainer is one entry of `runc list -f json`.
type runcContainer struct {
	ID     string `json:"id"`
	Bundle string `json:"bundle"`
}

// deleteContainers force-deletes the containers whose bundle lies in
// state and returns the network namespaces their specs name (the pods'
// sandboxes pin them under /run/netns).
func deleteContainers(ctx context.Context, runc, state string) ([]string, error) {
	out, err := exec.CommandContext(ctx, runc, "--root", runcRoot, "list", "-f", "json").Output()
	if err != nil {
		if _, statErr := os.Stat(runcRoot); errors.Is(statErr, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("runc list: %w", err)
	}
	var list []runcContainer
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("runc list: %w", err)
	}
	var netns []string
	var errs []error
	for _, c := range list {
		if !strings.HasPrefix(c.Bundle, state+"/") {
			continue
		}
		netns = append(netns, specNetns(filepath.Join(c.Bundle, "config.json"))...)
		if err := runCmd(ctx, runc, "--root", runcRoot, "delete", "--force", c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return netns, errors.Join(errs...)
}

// specNetns is the network namespace path of an OCI spec, if it names one
// under /run/netns or /var/run/netns (a symlink to /run on this machine's
// kind of system), as /run/netns/NAME.
func specNetns(config string) []string {
	data, err := os.ReadFile(config)
	if err != nil {
		return nil
	}
	var spec struct {
		Linux struct {
			Namespaces []struct{ Type, Path string } `json:"namespaces"`
		} `json:"linux"`
	}
	if json.Unmarshal(data, &spec) != nil {
		return nil
	}
	var paths []string
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type != "network" {
			continue
		}
		// containerd names /var/run/netns; the mount table says /run/netns.
		if rest, ok := strings.CutPrefix(ns.Path, "/var/run/netns/"); ok {
			paths = append(paths, "/run/netns/"+rest)
		} else if strings.HasPrefix(ns.Path, "/run/netns/") {
			paths = append(paths, ns.Path)
		}
	}
	return paths
}

// killShims kills the containerd shims serving state's socket (their
// containerd is gone; they would wait forever).
func killShims(state string) {
	socket := filepath.Join(state, "containerd.sock")
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.Contains(filepath.Base(args[0]), "containerd-shim") && contains(args, socket) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
