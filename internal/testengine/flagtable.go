package testengine

import (
	"fmt"
	"strconv"
)

type flagKind int

const (
	kindAny      flagKind = iota // unknown: every value up to the next flag
	kindBool                     // no value
	kindOne                      // exactly one value
	kindOneOrTwo                 // a URL and an optional bootstrap port
	kindList                     // one or more values up to the next flag
	kindListOpt                  // zero or more values up to the next flag
)

// flagSpec says how a flag's values are read and what they set; a nil set
// means the flag is accepted, logged as ignored with reason.
type flagSpec struct {
	kind   flagKind
	set    func(*Config, []string) error
	reason string
}

func flagTable(mode Mode) map[string]flagSpec {
	t := map[string]flagSpec{
		"--host": {kind: kindOne, set: func(c *Config, v []string) error { c.Host = v[0]; return nil }},
		"--port": {kind: kindOne, set: setInt(func(c *Config) *int { return &c.Port }, parsePort)},
	}
	var extra map[string]flagSpec
	switch mode {
	case ModeSGLang:
		extra = sglangFlags()
	case ModeVLLM:
		extra = vllmFlags()
	case ModeRouter:
		extra = routerFlags()
	case ModeRay:
		return map[string]flagSpec{
			"--block": {kind: kindBool, set: setBool(func(c *Config) *bool { return &c.RayBlock })},
			"--head":  {kind: kindBool, reason: "the test engine starts no Ray cluster"},
		}
	}
	for k, v := range extra {
		t[k] = v
	}
	for _, b := range knownBooleans[mode] {
		if _, ok := t[b]; !ok {
			t[b] = flagSpec{kind: kindBool}
		}
	}
	return t
}

// knownBooleans are flags the engines take without a value, so a value
// after one is reported as positional junk instead of swallowed.
var knownBooleans = map[Mode][]string{
	ModeSGLang: {"--enable-metrics", "--trust-remote-code", "--enable-dp-attention", "--skip-server-warmup",
		"--disable-radix-cache", "--enable-torch-compile", "--is-embedding", "--enable-mixed-chunk",
		"--disable-cuda-graph", "--enable-deterministic-inference", "--log-requests"},
	ModeVLLM: {"--trust-remote-code", "--enforce-eager", "--enable-prefix-caching", "--disable-log-requests",
		"--disable-log-stats", "--enable-chunked-prefill", "--enable-auto-tool-choice", "--disable-frontend-multiprocessing"},
	ModeRouter: {"--log-json", "--dp-aware", "--enable-igw"},
}

func sglangFlags() map[string]flagSpec {
	model := func(c *Config, v []string) error { c.ModelPath = v[0]; return nil }
	return map[string]flagSpec{
		"--model-path":        {kind: kindOne, set: model},
		"--model":             {kind: kindOne, set: model},
		"--served-model-name": {kind: kindOne, set: func(c *Config, v []string) error { c.ServedNames = []string{v[0]}; return nil }},
		"--disaggregation-mode": {kind: kindOne, set: func(c *Config, v []string) error {
			switch v[0] {
			case "null":
				c.Disaggregation = ""
			case "prefill", "decode":
				c.Disaggregation = v[0]
			default:
				return fmt.Errorf("%q is not one of null, prefill, decode", v[0])
			}
			return nil
		}},
		"--disaggregation-bootstrap-port": {kind: kindOne, set: setInt(func(c *Config) *int { return &c.BootstrapPort }, parsePort)},
		"--enable-lora":                   {kind: kindBool, set: setBool(func(c *Config) *bool { return &c.EnableLoRA })},
		"--lora-paths": {kind: kindList, set: func(c *Config, v []string) error {
			a, err := parseAdapters(v)
			c.LoRAModules = append(c.LoRAModules, a...)
			c.EnableLoRA = true // SGLang enables LoRA when adapters are given
			return err
		}},
		"--max-loras-per-batch":  {kind: kindOne, set: setInt(func(c *Config) *int { return &c.MaxLoRAs }, parseCount)},
		"--max-loaded-loras":     {kind: kindOne, set: setInt(func(c *Config) *int { return &c.MaxLoadedLoRAs }, parseCount)},
		"--max-running-requests": {kind: kindOne, set: setInt(func(c *Config) *int { return &c.MaxRunning }, parseCount)},
		"--dist-init-addr":       {kind: kindOne, set: func(c *Config, v []string) error { c.MultiNode.DistInitAddr = v[0]; return nil }},
		"--nnodes":               {kind: kindOne, set: setInt(func(c *Config) *int { return &c.MultiNode.NNodes }, parseCount)},
		"--node-rank":            {kind: kindOne, set: setInt(func(c *Config) *int { return &c.MultiNode.NodeRank }, parseCount)},
		"--enable-metrics":       {kind: kindBool, reason: "the test engine always serves /metrics"},
		"--is-embedding":         {kind: kindBool, reason: "the test engine serves completions and chat only, no embeddings"},
		"--lora-target-modules":  {kind: kindList, reason: "the test engine applies no adapter weights"},
	}
}

func vllmFlags() map[string]flagSpec {
	return map[string]flagSpec{
		"--model": {kind: kindOne, set: func(c *Config, v []string) error { c.ModelPath = v[0]; return nil }},
		"--served-model-name": {kind: kindList, set: func(c *Config, v []string) error {
			c.ServedNames = append([]string(nil), v...)
			return nil
		}},
		"--enable-lora": {kind: kindBool, set: setBool(func(c *Config) *bool { return &c.EnableLoRA })},
		"--lora-modules": {kind: kindList, set: func(c *Config, v []string) error {
			a, err := parseAdapters(v)
			c.LoRAModules = append(c.LoRAModules, a...)
			return err
		}},
		"--max-loras":    {kind: kindOne, set: setInt(func(c *Config) *int { return &c.MaxLoRAs }, parseCount)},
		"--max-num-seqs": {kind: kindOne, set: setInt(func(c *Config) *int { return &c.MaxRunning }, parseCount)},
		"--task":         {kind: kindOne, reason: "the test engine serves completions and chat only"},
	}
}

func routerFlags() map[string]flagSpec {
	r := func(c *Config) *RouterConfig { return &c.Router }
	selector := func(pick func(*RouterConfig) *map[string]string) func(*Config, []string) error {
		return func(c *Config, v []string) error {
			sel, err := parseSelector(v)
			*pick(r(c)) = sel
			return err
		}
	}
	return map[string]flagSpec{
		"--pd-disaggregation": {kind: kindBool, set: func(c *Config, v []string) error { return boolValue(&c.Router.PD, v) }},
		"--policy": {kind: kindOne, set: func(c *Config, v []string) error {
			c.Router.Policy = v[0]
			c.Ignored = append(c.Ignored, ignoredLine("--policy", v, "the test engine routes round robin"))
			return nil
		}},
		"--prefill-policy":    {kind: kindOne, reason: "the test engine routes round robin"},
		"--decode-policy":     {kind: kindOne, reason: "the test engine routes round robin"},
		"--worker-urls":       {kind: kindListOpt, set: func(c *Config, v []string) error { c.Router.WorkerURLs = append(c.Router.WorkerURLs, v...); return nil }},
		"--prefill":           {kind: kindOneOrTwo, set: addPrefill},
		"--decode":            {kind: kindOne, set: func(c *Config, v []string) error { c.Router.Decode = append(c.Router.Decode, v[0]); return nil }},
		"--service-discovery": {kind: kindBool, set: func(c *Config, v []string) error { return boolValue(&c.Router.ServiceDiscovery, v) }},
		"--service-discovery-namespace": {kind: kindOne, set: func(c *Config, v []string) error {
			c.Router.Namespace = v[0]
			return nil
		}},
		"--service-discovery-port": {kind: kindOne, set: setInt(func(c *Config) *int { return &c.Router.DiscoveryPort }, parsePort)},
		"--selector":               {kind: kindList, set: selector(func(r *RouterConfig) *map[string]string { return &r.Selector })},
		"--prefill-selector":       {kind: kindList, set: selector(func(r *RouterConfig) *map[string]string { return &r.PrefillSelector })},
		"--decode-selector":        {kind: kindList, set: selector(func(r *RouterConfig) *map[string]string { return &r.DecodeSelector })},
		"--bootstrap-port-annotation": {kind: kindOne, set: func(c *Config, v []string) error {
			c.Router.BootstrapPortAnnotation = v[0]
			return nil
		}},
		"--kubeconfig": {kind: kindOne, set: func(c *Config, v []string) error { c.Router.Kubeconfig = v[0]; return nil }},
	}
}

func addPrefill(c *Config, v []string) error {
	p := PrefillURL{URL: v[0], BootstrapPort: DefaultBootstrapPort}
	if len(v) == 2 {
		if v[1] == "none" {
			p.BootstrapPort = 0
		} else {
			port, err := parsePort(v[1])
			if err != nil {
				return fmt.Errorf("bootstrap port of %s: %w", v[0], err)
			}
			p.BootstrapPort = port
		}
	}
	c.Router.Prefill = append(c.Router.Prefill, p)
	return nil
}

func setInt(field func(*Config) *int, parse func(string) (int, error)) func(*Config, []string) error {
	return func(c *Config, v []string) error {
		n, err := parse(v[0])
		if err != nil {
			return err
		}
		*field(c) = n
		return nil
	}
}

func setBool(field func(*Config) *bool) func(*Config, []string) error {
	return func(c *Config, v []string) error { return boolValue(field(c), v) }
}

// boolValue sets a boolean flag: bare is true, --flag=false is false.
func boolValue(dst *bool, v []string) error {
	if len(v) == 0 {
		*dst = true
		return nil
	}
	b, err := strconv.ParseBool(v[0])
	if err != nil {
		return fmt.Errorf("%q is not a boolean", v[0])
	}
	*dst = b
	return nil
}
