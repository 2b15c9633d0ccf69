package sidecar

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseConfigFromProfileEnv(t *testing.T) {
	c, err := ParseConfig(nil, envOf(map[string]string{
		"TOPO_TYPE": "sglang", "SGL_ROUTER_URL": "http://pd.team.svc", "POD_IP": "10.244.0.7",
		"INSTANCE_INFO":      `{"data":{"port":8080,"worker_type":"prefill","bootstrap_port":8998}}`,
		"HEARTBEAT_INTERVAL": "2s",
	}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8080", c.EngineURL, "the engine is on localhost at the instance port")
	assert.Equal(t, "http://10.244.0.7:8080", c.WorkerURL())
	assert.Equal(t, InstanceInfo{Port: 8080, WorkerType: WorkerPrefill, BootstrapPort: 8998}, c.Instance)
	assert.Equal(t, 2*time.Second, c.Heartbeat)
	assert.Equal(t, EngineSGLang, c.Engine)
	assert.Equal(t, DefaultEngineTimeout, c.EngineTimeout)
}

func TestParseConfigFlagsWinOverEnv(t *testing.T) {
	c, err := ParseConfig([]string{"--engine", "vllm", "--instance-info", `{"port":8000}`, "--topo-type", "none"},
		envOf(map[string]string{"ENGINE_TYPE": "sglang", "TOPO_TYPE": "sglang"}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, EngineVLLM, c.Engine)
	assert.Equal(t, TopoNone, c.Topo)
	assert.Equal(t, WorkerRegular, c.Instance.WorkerType, "a bare instance object is accepted; the type defaults to regular")
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"no instance info", nil, nil, []string{"--instance-info (INSTANCE_INFO) is required"}},
		{"bad instance JSON", []string{"--instance-info", "{"}, nil, []string{"--instance-info: unexpected end of JSON input"}},
		{"everything wrong", []string{"--instance-info", `{"data":{"port":0,"worker_type":"leader"}}`, "--engine", "tgi", "--heartbeat", "0s"},
			map[string]string{"SGL_ROUTER_URL": "pd:80"},
			[]string{`--engine "tgi": want sglang or vllm`, "port 0 is not a TCP port", `worker_type "leader"`,
				`--router-url (SGL_ROUTER_URL): "pd:80"`, `--pod-ip (POD_IP) ""`, "--heartbeat 0s: want a positive duration"}},
		{"bootstrap on decode", []string{"--instance-info", `{"data":{"port":1,"worker_type":"decode","bootstrap_port":2}}`, "--topo-type", "none"}, nil,
			[]string{"bootstrap_port is for prefill workers, not decode"}},
		{"bad env duration", []string{"--instance-info", `{"port":1}`, "--topo-type", "none"}, map[string]string{"HEARTBEAT_INTERVAL": "soon"},
			[]string{`HEARTBEAT_INTERVAL="soon"`}},
		{"bad topo", []string{"--instance-info", `{"port":1}`, "--topo-type", "etcd"}, nil, []string{`"etcd": want sglang or none`}},
		{"stray argument", []string{"extra"}, nil, []string{`unexpected arguments ["extra"]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig(tt.args, envOf(tt.env), io.Discard)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseAdapters(t *testing.T) {
	got, err := ParseAdapters([]byte(`[{"name":"sql","source":"/a/sql"},{"name":"chat","source":"/a/chat"}]`))
	require.NoError(t, err)
	assert.Equal(t, []Adapter{{"sql", "/a/sql"}, {"chat", "/a/chat"}}, got)
	got, err = ParseAdapters([]byte("  \n"))
	require.NoError(t, err)
	assert.Empty(t, got, "an empty file (no annotation yet) is no adapter")
	for in, want := range map[string]string{
		`{}`: "want a JSON list", `[{"name":"x"}]`: "[0]: name and source are required",
		`[{"name":"x","source":"a"},{"name":"x","source":"b"}]`: `[1]: adapter "x" listed twice`,
	} {
		_, err := ParseAdapters([]byte(in))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
}
