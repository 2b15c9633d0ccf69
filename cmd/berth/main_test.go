package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/berthdev/berth/internal/devenv/process"
)

func TestDispatch(t *testing.T) {
	var gotArgs []string
	commands["test-echo"] = command{Name: "test-echo", Summary: "records its arguments", Run: func(_ context.Context, args []string, _, _ io.Writer) error {
		gotArgs = args
		return nil
	}}
	commands["test-fail"] = command{Name: "test-fail", Summary: "fails", Run: func(context.Context, []string, io.Writer, io.Writer) error {
		return errors.New("etcd exited (exit status 1)")
	}}
	t.Cleanup(func() { delete(commands, "test-echo"); delete(commands, "test-fail") })

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"no command prints usage", nil, 2, []string{"usage: berth <command>", "up ", "demo ", "test-echo "}},
		{"help", []string{"help"}, 0, []string{"usage: berth <command>"}},
		{"unknown command", []string{"nope"}, 2, []string{`berth: unknown command "nope"`, "usage:"}},
		{"runs the command with the rest", []string{"test-echo", "-v", "x"}, 0, nil},
		{"errors name the command", []string{"test-fail"}, 1, []string{"berth test-fail: etcd exited (exit status 1)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			assert.Equal(t, tc.wantCode, code, stderr.String())
			for _, w := range tc.wantStderr {
				assert.Contains(t, stderr.String(), w)
			}
		})
	}
	assert.Equal(t, []string{"-v", "x"}, gotArgs)
}

func TestCountKinds(t *testing.T) {
	assert.Equal(t, "none", countKinds(nil))
	assert.Equal(t, "2 ClusterServingRuntime, 1 AcceleratorClass",
		countKinds([]string{"ClusterServingRuntime/a", "AcceleratorClass/x", "ClusterServingRuntime/b"}))
}

func TestWarningCollector(t *testing.T) {
	c := &warningCollector{}
	c.HandleWarningHeader(299, "", "runtime A was auto-selected")
	c.HandleWarningHeader(299, "", "runtime A was auto-selected")
	c.HandleWarningHeader(299, "", "")
	c.HandleWarningHeader(199, "", "not a warning code the apiserver uses")
	c.HandleWarningHeader(299, "", "class B chosen")
	assert.Equal(t, []string{"runtime A was auto-selected", "class B chosen"}, c.drain())
	assert.Empty(t, c.drain(), "drain forgets what it returned")
}

func TestDeathSummary(t *testing.T) {
	at := time.Date(2025, 1, 2, 12, 3, 4, 0, time.UTC)
	tests := []struct {
		name   string
		deaths []process.Death
		want   []string
	}{
		{"none", nil, []string{}},
		{"once", []process.Death{{Name: "berth-webhook", Err: errors.New("signal: killed"), At: at}},
			[]string{"berth-webhook died once (last: signal: killed at 12:03:04)"}},
		{"per component, first death first", []process.Death{
			{Name: "berth-reconciler", Err: errors.New("exit status 1"), At: at},
			{Name: "berth-webhook", Err: errors.New("signal: killed"), At: at},
			{Name: "berth-reconciler", Err: errors.New("exit status 2"), At: at.Add(time.Minute)},
		}, []string{
			"berth-reconciler died 2 times (last: exit status 2 at 12:04:04)",
			"berth-webhook died once (last: signal: killed at 12:03:04)",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, deathSummary(tc.deaths))
		})
	}
}
