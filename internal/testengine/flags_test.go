package testengine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	sglang := []string{"python3", "-m", "sglang.launch_server"}
	router := []string{"/usr/bin/python3", "-m", "sglang_router.launch_router"}
	cat := func(a []string, b ...string) []string { return append(append([]string(nil), a...), b...) }
	tests := []struct {
		name  string
		argv  []string
		check func(t *testing.T, c Config)
		err   string
	}{
		{name: "sglang prefill as the PD runtimes start it",
			argv: cat(sglang, "--host", "0.0.0.0", "--port", "8080", "--model-path", "/mnt/models", "--served-model-name", "llama",
				"--tp-size", "1", "--enable-metrics", "--disaggregation-mode", "prefill", "--disaggregation-transfer-backend", "mooncake",
				"--disaggregation-bootstrap-port", "8999"),
			check: func(t *testing.T, c Config) {
				assert.Equal(t, ModeSGLang, c.Mode)
				assert.Equal(t, "0.0.0.0", c.Host)
				assert.Equal(t, 8080, c.Port)
				assert.Equal(t, "/mnt/models", c.ModelPath)
				assert.Equal(t, []string{"llama"}, c.ServedNames)
				assert.Equal(t, "prefill", c.Disaggregation)
				assert.Equal(t, 8999, c.BootstrapPort)
				assert.Equal(t, []string{
					"ignored flag --tp-size 1: the test engine has no GPU",
					"ignored flag --enable-metrics: the test engine always serves /metrics",
					"ignored flag --disaggregation-transfer-backend mooncake: the test engine has no GPU",
				}, c.Ignored)
			}},
		{name: "sglang defaults", argv: cat(sglang, "--model-path", "/m"),
			check: func(t *testing.T, c Config) {
				assert.Equal(t, DefaultSGLangPort, c.Port)
				assert.Equal(t, DefaultBootstrapPort, c.BootstrapPort)
				assert.Empty(t, c.ServedNames)
				assert.Empty(t, c.Disaggregation)
			}},
		{name: "inline values and null disaggregation", argv: cat(sglang, "--model-path=/m", "--port=9000", "--disaggregation-mode=null"),
			check: func(t *testing.T, c Config) {
				assert.Equal(t, 9000, c.Port)
				assert.Equal(t, "/m", c.ModelPath)
				assert.Empty(t, c.Disaggregation)
			}},
		{name: "sglang lora paths", argv: cat(sglang, "--model-path", "/m", "--lora-paths", "a=/l/a", "/l/b", "--max-loaded-loras", "2"),
			check: func(t *testing.T, c Config) {
				assert.True(t, c.EnableLoRA)
				assert.Equal(t, []Adapter{{"a", "/l/a"}, {"/l/b", "/l/b"}}, c.LoRAModules)
				assert.Equal(t, 2, c.MaxLoadedLoRAs)
			}},
		{name: "a negative number is a value", argv: cat(sglang, "--model-path", "/m", "--random-seed", "-1"),
			check: func(t *testing.T, c Config) {
				assert.Equal(t, []string{"ignored flag --random-seed -1: the test engine has no GPU"}, c.Ignored)
			}},
		{name: "OME's router: several selector items in one argument",
			argv: cat(router, "--pd-disaggregation", "--service-discovery", "--service-discovery-namespace", "ns", "--service-discovery-port", "8080",
				"--prefill-selector", "component=engine ome.io/inferenceservice=x",
				"--decode-selector", "component=decoder ome.io/inferenceservice=x"),
			check: func(t *testing.T, c Config) {
				assert.Equal(t, map[string]string{"component": "engine", "ome.io/inferenceservice": "x"}, c.Router.PrefillSelector)
				assert.Equal(t, map[string]string{"component": "decoder", "ome.io/inferenceservice": "x"}, c.Router.DecodeSelector)
			}},
		{name: "router PD with discovery, selectors of several values",
			argv: cat(router, "--host", "0.0.0.0", "--port", "8080", "--pd-disaggregation", "--policy", "cache_aware",
				"--service-discovery", "--service-discovery-namespace", "ns", "--service-discovery-port", "8080",
				"--prefill-selector", "ome.io/component=engine", "ome.io/inferenceservice=x", "ome.io/role=leader",
				"--decode-selector", "ome.io/component=decoder", "ome.io/inferenceservice=x"),
			check: func(t *testing.T, c Config) {
				assert.Equal(t, ModeRouter, c.Mode)
				r := c.Router
				assert.True(t, r.PD)
				assert.True(t, r.ServiceDiscovery)
				assert.Equal(t, "ns", r.Namespace)
				assert.Equal(t, 8080, r.DiscoveryPort)
				assert.Equal(t, map[string]string{"ome.io/component": "engine", "ome.io/inferenceservice": "x", "ome.io/role": "leader"}, r.PrefillSelector)
				assert.Equal(t, map[string]string{"ome.io/component": "decoder", "ome.io/inferenceservice": "x"}, r.DecodeSelector)
				assert.Equal(t, []string{"ignored flag --policy cache_aware: the test engine routes round robin"}, c.Ignored)
			}},
		{name: "a PD router ignores --selector", argv: cat(router, "--pd-disaggregation", "--service-discovery", "--service-discovery-port", "8080",
			"--selector", "component=engine", "app=x", "--prefill-selector", "a=b", "--decode-selector", "a=c"),
			check: func(t *testing.T, c Config) {
				assert.Equal(t, []string{"ignored flag --selector app=x,component=engine: a PD router discovers with --prefill-selector and --decode-selector"}, c.Ignored)
			}},
		{name: "router static PD workers",
			argv: cat(router, "--pd-disaggregation", "--prefill", "http://p1:8080", "9000", "--prefill", "http://p2:8080", "none",
				"--prefill", "http://p3:8080", "--decode", "http://d:8080"),
			check: func(t *testing.T, c Config) {
				assert.Equal(t, []PrefillURL{{"http://p1:8080", 9000}, {"http://p2:8080", 0}, {"http://p3:8080", DefaultBootstrapPort}}, c.Router.Prefill)
				assert.Equal(t, []string{"http://d:8080"}, c.Router.Decode)
			}},
		{name: "router regular", argv: cat(router, "--worker-urls", "http://a:1", "http://b:2", "--service-discovery",
			"--selector", "app=x", "--service-discovery-port", "8000"),
			check: func(t *testing.T, c Config) {
				assert.Equal(t, []string{"http://a:1", "http://b:2"}, c.Router.WorkerURLs)
				assert.Equal(t, map[string]string{"app": "x"}, c.Router.Selector)
			}},
		{name: "vllm serve with a positional model", argv: []string{"/usr/local/bin/vllm", "serve", "/mnt/models", "--host", "0.0.0.0",
			"--port", "8080", "--served-model-name", "a", "b", "--tensor-parallel-size", "1", "--enable-lora", "--lora-modules", "x=/l/x",
			`{"name":"y","path":"/l/y"}`, "--max-loras", "4", "--enforce-eager"},
			check: func(t *testing.T, c Config) {
				assert.Equal(t, ModeVLLM, c.Mode)
				assert.Equal(t, "/mnt/models", c.ModelPath)
				assert.Equal(t, 8080, c.Port)
				assert.Equal(t, []string{"a", "b"}, c.ServedNames)
				assert.True(t, c.EnableLoRA)
				assert.Equal(t, []Adapter{{"x", "/l/x"}, {"y", "/l/y"}}, c.LoRAModules)
				assert.Equal(t, 4, c.MaxLoRAs)
				assert.Len(t, c.Ignored, 2)
			}},
		{name: "vllm serve's model between flags", argv: []string{"vllm", "serve", "--port", "8080", "/mnt/models", "--enforce-eager"},
			check: func(t *testing.T, c Config) {
				assert.Equal(t, "/mnt/models", c.ModelPath)
				assert.Equal(t, 8080, c.Port)
			}},
		{name: "vllm default port", argv: []string{"vllm", "serve", "/m"},
			check: func(t *testing.T, c Config) { assert.Equal(t, DefaultVLLMPort, c.Port) }},
		{name: "vllm api_server module", argv: []string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"},
			check: func(t *testing.T, c Config) {
				assert.Equal(t, ModeVLLM, c.Mode)
				assert.Equal(t, "/m", c.ModelPath)
			}},
		{name: "berth-test-engine modes", argv: []string{"berth-test-engine", "sglang-router", "--worker-urls", "http://a:1"},
			check: func(t *testing.T, c Config) { assert.Equal(t, ModeRouter, c.Mode) }},
		{name: "berth-test-engine python3", argv: []string{"berth-test-engine", "python3", "-m", "sglang.launch_server", "--model-path", "/m"},
			check: func(t *testing.T, c Config) { assert.Equal(t, ModeSGLang, c.Mode) }},
		{name: "berth-test-engine vllm", argv: []string{"berth-test-engine", "vllm", "serve", "/m"},
			check: func(t *testing.T, c Config) { assert.Equal(t, ModeVLLM, c.Mode) }},

		{name: "junk after a value", argv: cat(sglang, "--model-path", "/m", "--port", "8080", "junk"), err: `unexpected argument "junk"`},
		{name: "junk after a boolean", argv: cat(sglang, "--model-path", "/m", "--trust-remote-code", "junk"), err: `unexpected argument "junk"`},
		{name: "junk after vllm's model", argv: []string{"vllm", "serve", "/m", "--port", "1", "junk"}, err: `unexpected argument "junk"`},
		{name: "two vllm models", argv: []string{"vllm", "serve", "/m", "/n"}, err: `unexpected argument "/n"`},
		{name: "unknown module", argv: []string{"python3", "-m", "http.server"}, err: `module "http.server" is not one it stands in for`},
		{name: "python script", argv: []string{"python3", "run.py"}, err: "not Python"},
		{name: "vllm subcommand", argv: []string{"vllm", "bench"}, err: `subcommand "bench"`},
		{name: "unknown mode", argv: []string{"berth-test-engine", "tgi"}, err: `unknown mode "tgi"`},
		{name: "no mode", argv: []string{"berth-test-engine"}, err: "needs a mode"},
		{name: "sglang without a model", argv: sglang, err: "needs --model-path"},
		{name: "api_server without a model", argv: []string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--port", "1"},
			err: "vLLM needs a model"},
		{name: "api_server takes no positional", argv: []string{"python3", "-m", "vllm.entrypoints.openai.api_server", "/m"},
			err: `unexpected argument "/m"`},
		{name: "vllm without a model", argv: []string{"vllm", "serve", "--port", "1"}, err: "vLLM needs a model"},
		{name: "vllm model twice", argv: []string{"vllm", "serve", "/a", "--model", "/b"}, err: "model given twice"},
		{name: "bad port", argv: cat(sglang, "--model-path", "/m", "--port", "http"), err: `--port: "http" is not a TCP port`},
		{name: "missing value", argv: cat(sglang, "--model-path"), err: "flag --model-path needs a value"},
		{name: "bad disaggregation mode", argv: cat(sglang, "--model-path", "/m", "--disaggregation-mode", "both"), err: `"both" is not one of null, prefill, decode`},
		{name: "bad selector", argv: cat(router, "--service-discovery", "--selector", "app"), err: `selector item "app" is not key=value`},
		{name: "discovery without selector", argv: cat(router, "--service-discovery", "--service-discovery-port", "80"), err: "--service-discovery needs --selector"},
		{name: "PD discovery without decode selector", argv: cat(router, "--pd-disaggregation", "--service-discovery", "--prefill-selector", "a=b"),
			err: "needs --prefill-selector and --decode-selector"},
		{name: "prefill without PD", argv: cat(router, "--prefill", "http://p:1"), err: "need --pd-disaggregation"},
		{name: "worker urls in PD", argv: cat(router, "--pd-disaggregation", "--worker-urls", "http://a:1"), err: "--worker-urls is for a regular router"},
		{name: "bad bootstrap port", argv: cat(router, "--pd-disaggregation", "--prefill", "http://p:1", "x"), err: `bootstrap port of http://p:1`},
		{name: "lora modules without enable-lora", argv: []string{"vllm", "serve", "/m", "--lora-modules", "a=/b"}, err: "--lora-modules needs --enable-lora"},
		{name: "bad lora module", argv: []string{"vllm", "serve", "/m", "--enable-lora", "--lora-modules", "=/b"}, err: `adapter "=/b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.argv)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestParseHelp(t *testing.T) {
	for _, argv := range [][]string{
		{"berth-test-engine", "-h"}, {"berth-test-engine", "--help"}, {"python3", "--help"},
		{"python3", "-m", "sglang.launch_server", "-h"}, {"vllm", "serve", "--help"}, {"vllm", "--help"},
	} {
		_, err := Parse(argv)
		assert.ErrorIs(t, err, ErrHelp, "%v", argv)
	}
}
