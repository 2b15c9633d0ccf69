package testengine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// container is a command line found in a runtime: the container's command
// and args, where in the runtime it was.
type container struct {
	where string
	argv  []string
}

// findContainers walks a decoded YAML object for every map that has a
// command (runners, leaders, workers, KServe-shaped containers).
func findContainers(where string, v any, out *[]container) {
	switch v := v.(type) {
	case map[string]any:
		if cmd, ok := v["command"].([]any); ok {
			var argv []string
			for _, s := range append(cmd, asList(v["args"])...) {
				argv = append(argv, s.(string))
			}
			*out = append(*out, container{where: where, argv: argv})
		} else if _, ok := v["args"]; ok {
			*out = append(*out, container{where: where + " (args without command)", argv: nil})
		}
		for k, child := range v {
			findContainers(where+"."+k, child, out)
		}
	case []any:
		for _, child := range v {
			findContainers(where, child, out)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// shellCommands are the engine command lines a /bin/sh -c script runs:
// each "&&"-separated step, without a leading exec.
func shellCommands(script string) [][]string {
	var out [][]string
	for _, step := range strings.Split(script, "&&") {
		f := strings.Fields(step)
		if len(f) > 0 && f[0] == "exec" {
			f = f[1:]
		}
		if len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// TestShippedRuntimesParse feeds every command line of every shipped
// runtime to Parse, as the test image's python3, vllm and ray would get it.
func TestShippedRuntimesParse(t *testing.T) {
	files, err := filepath.Glob("../../deploy/runtimes/*.yaml")
	require.NoError(t, err)
	own, err := filepath.Glob("../../deploy/test-engine/*.yaml") // its own runtimes
	require.NoError(t, err)
	files = append(files, own...)
	require.NotEmpty(t, files)
	parsed := map[Mode]int{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal(raw, &obj), f)
		var cs []container
		findContainers(filepath.Base(f), obj["spec"], &cs)
		require.NotEmpty(t, cs, "%s has no command line", f)
		for _, c := range cs {
			require.NotNil(t, c.argv, "%s: %s", f, c.where)
			lines := [][]string{c.argv}
			if len(c.argv) == 3 && (c.argv[0] == "/bin/sh" || c.argv[0] == "sh") && c.argv[1] == "-c" {
				lines = shellCommands(c.argv[2])
			}
			for _, argv := range lines {
				argv = expandGroupEnv(argv)
				cfg, err := Parse(argv)
				if assert.NoError(t, err, "%s: %s: %q", f, c.where, argv) {
					parsed[cfg.Mode]++
				}
			}
		}
	}
	t.Logf("parsed command lines by mode: %v", parsed)
	for _, m := range []Mode{ModeSGLang, ModeRouter, ModeVLLM, ModeRay} {
		assert.NotZero(t, parsed[m], "no shipped runtime runs %s", m)
	}
}

// expandGroupEnv expands $(VAR) references to the group env berth gives a
// multi-node group's pods, as the kubelet does before the engine starts
// (the worker of a group of two).
func expandGroupEnv(argv []string) []string {
	out := make([]string, len(argv))
	r := strings.NewReplacer("$(BERTH_GROUP_SIZE)", "2", "$(BERTH_WORKER_INDEX)", "1",
		"$(BERTH_LEADER_ADDRESS)", "svc-engine-0.svc-engine-0.ns", "$(LWS_LEADER_ADDRESS)", "svc-engine-0.svc-engine-0.ns")
	for i, a := range argv {
		out[i] = r.Replace(a)
	}
	return out
}
