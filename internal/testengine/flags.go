package testengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Mode is what the test engine stands in for.
type Mode string

// The modes, named after the command lines that start them.
const (
	ModeSGLang Mode = "sglang"        // python3 -m sglang.launch_server
	ModeRouter Mode = "sglang-router" // python3 -m sglang_router.launch_router
	ModeVLLM   Mode = "vllm"          // vllm serve, python3 -m vllm.entrypoints.openai.api_server
	// ModeRay is "ray start": multi-node vLLM runtimes start Ray before
	// vLLM. The stand-in does nothing; with --block it waits for SIGTERM.
	ModeRay Mode = "ray"
)

// ErrHelp is returned by Parse when the command line asks for help.
var ErrHelp = errors.New("help requested")

// Adapter is a LoRA adapter named on the command line or loaded later.
type Adapter struct {
	Name string
	Path string
}

// PrefillURL is one --prefill of the router: a URL and, unless "none", the
// prefill's bootstrap port.
type PrefillURL struct {
	URL           string
	BootstrapPort int // 0: none
}

// Config is a parsed command line.
type Config struct {
	Mode        Mode
	Host        string
	Port        int
	ModelPath   string
	ServedNames []string // first is the primary name; empty: the model path
	// Disaggregation is "" (none), "prefill" or "decode".
	Disaggregation string
	BootstrapPort  int
	EnableLoRA     bool
	LoRAModules    []Adapter
	MaxLoRAs       int  // vLLM --max-loras (slots, not a cap), SGLang --max-loras-per-batch
	MaxLoadedLoRAs int  // SGLang --max-loaded-loras: a cap on loaded adapters (0: none)
	MaxRunning     int  // --max-running-requests / --max-num-seqs (0: no limit)
	RayBlock       bool // ray start --block
	Router         RouterConfig
	// MultiNode: --dist-init-addr, --nnodes, --node-rank (SGLang).
	MultiNode MultiNode
	// Ignored lists the accepted flags the test engine does not act on, one
	// log line each.
	Ignored []string
}

// RouterConfig is the SGLang router's part of the command line.
type RouterConfig struct {
	PD                      bool
	Policy                  string
	WorkerURLs              []string
	Prefill                 []PrefillURL
	Decode                  []string
	ServiceDiscovery        bool
	Namespace               string
	DiscoveryPort           int
	Selector                map[string]string
	PrefillSelector         map[string]string
	DecodeSelector          map[string]string
	BootstrapPortAnnotation string
	Kubeconfig              string
}

// Default ports and the annotation the SGLang router reads a prefill's
// bootstrap port from.
const (
	DefaultSGLangPort        = 8080
	DefaultVLLMPort          = 8000
	DefaultBootstrapPort     = 8998
	DefaultBootstrapPortAnno = "sglang.ai/bootstrap-port"
)

// Parse reads a command line, argv[0] included. The basename of argv[0]
// decides: python3 (-m sglang.launch_server, -m sglang_router.launch_router,
// -m vllm.entrypoints.openai.api_server), vllm (serve MODEL), or
// berth-test-engine followed by one of those command lines or a mode name
// (sglang, sglang-router, vllm).
func Parse(argv []string) (Config, error) {
	if len(argv) == 0 {
		return Config{}, errors.New("empty command line")
	}
	name := filepath.Base(argv[0])
	args := argv[1:]
	switch {
	case name == "vllm":
		return parseVLLMCLI(args)
	case name == "ray":
		return parseRay(args)
	case strings.HasPrefix(name, "python"):
		return parsePython(name, args)
	}
	if len(args) == 0 {
		return Config{}, fmt.Errorf("%s needs a mode: one of sglang, sglang-router, vllm, or a command line starting with python3 or vllm (-h for help)", name)
	}
	switch args[0] {
	case "-h", "--help", "help":
		return Config{}, ErrHelp
	case "sglang":
		return parseMode(ModeSGLang, args[1:])
	case "sglang-router":
		return parseMode(ModeRouter, args[1:])
	case "vllm":
		return parseVLLMCLI(args[1:])
	case "ray":
		return parseRay(args[1:])
	case "python3", "python":
		return parsePython(args[0], args[1:])
	}
	return Config{}, fmt.Errorf("unknown mode %q: want sglang, sglang-router, vllm, python3 -m ... or vllm serve ... (-h for help)", args[0])
}

func parsePython(name string, args []string) (Config, error) {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		return Config{}, ErrHelp
	}
	if len(args) < 2 || args[0] != "-m" {
		return Config{}, fmt.Errorf("%s here is berth-test-engine, not Python: it runs only -m sglang.launch_server, -m sglang_router.launch_router or -m vllm.entrypoints.openai.api_server, got %q", name, strings.Join(args, " "))
	}
	switch args[1] {
	case "sglang.launch_server":
		return parseMode(ModeSGLang, args[2:])
	case "sglang_router.launch_router":
		return parseMode(ModeRouter, args[2:])
	case "vllm.entrypoints.openai.api_server":
		return parseMode(ModeVLLM, args[2:])
	}
	return Config{}, fmt.Errorf("%s here is berth-test-engine, not Python: module %q is not one it stands in for (sglang.launch_server, sglang_router.launch_router, vllm.entrypoints.openai.api_server)", name, args[1])
}

// parseVLLMCLI reads what follows "vllm": "serve [MODEL] flags...".
func parseVLLMCLI(args []string) (Config, error) {
	if len(args) == 0 {
		return Config{}, errors.New("vllm here is berth-test-engine: it runs only \"vllm serve MODEL ...\"")
	}
	switch args[0] {
	case "-h", "--help":
		return Config{}, ErrHelp
	case "serve":
	default:
		return Config{}, fmt.Errorf("vllm here is berth-test-engine: subcommand %q is not one it stands in for (only serve)", args[0])
	}
	model := ""
	cfg, err := parseFlags(ModeVLLM, args[1:], func(tok string) bool {
		if model != "" {
			return false
		}
		model = tok // vllm serve's one positional, before or between flags as argparse allows
		return true
	})
	if err != nil {
		return cfg, err
	}
	if model != "" && cfg.ModelPath != "" && model != cfg.ModelPath {
		return cfg, fmt.Errorf("vllm serve: model given twice, %q and --model %q", model, cfg.ModelPath)
	}
	if model != "" {
		cfg.ModelPath = model
	}
	return cfg, validate(&cfg)
}

// parseRay reads what follows "ray": "start flags...".
func parseRay(args []string) (Config, error) {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		return Config{}, ErrHelp
	}
	if len(args) == 0 || args[0] != "start" {
		return Config{}, fmt.Errorf("ray here is berth-test-engine: it runs only \"ray start ...\", got %q", strings.Join(args, " "))
	}
	return parseMode(ModeRay, args[1:])
}

func parseMode(mode Mode, args []string) (Config, error) {
	cfg, err := parseFlags(mode, args, nil)
	if err != nil {
		return cfg, err
	}
	if mode == ModeRouter && cfg.Router.PD && cfg.Router.Selector != nil {
		cfg.Ignored = append(cfg.Ignored, ignoredLine("--selector", []string{formatSelector(cfg.Router.Selector)},
			"a PD router discovers with --prefill-selector and --decode-selector"))
	}
	return cfg, validate(&cfg)
}

// parseFlags reads a mode's flags; positional, when not nil, may take a
// token that is not a flag's value (it reports whether it did).
func parseFlags(mode Mode, args []string, positional func(string) bool) (Config, error) {
	cfg := Config{Mode: mode, Host: "0.0.0.0", Port: DefaultSGLangPort, BootstrapPort: DefaultBootstrapPort}
	cfg.Router.BootstrapPortAnnotation = DefaultBootstrapPortAnno
	if mode == ModeVLLM {
		cfg.Port = DefaultVLLMPort
	}
	table := flagTable(mode)
	for i := 0; i < len(args); {
		tok := args[i]
		if !isFlag(tok) && positional != nil && positional(tok) {
			i++
			continue
		}
		if !isFlag(tok) {
			return cfg, fmt.Errorf("unexpected argument %q: %s takes no positional arguments here (a value for a flag that takes none?)", tok, commandName(mode))
		}
		if tok == "-h" || tok == "--help" {
			return cfg, ErrHelp
		}
		name, inline, hasInline := strings.Cut(tok, "=")
		spec, known := table[name]
		if !known {
			spec = flagSpec{kind: kindAny}
		}
		vals, next, err := takeValues(name, spec.kind, args, i+1, inline, hasInline)
		if err != nil {
			return cfg, err
		}
		i = next
		if !known || spec.set == nil {
			cfg.Ignored = append(cfg.Ignored, ignoredLine(name, vals, spec.reason))
			continue
		}
		if err := spec.set(&cfg, vals); err != nil {
			return cfg, fmt.Errorf("%s: %w", name, err)
		}
	}
	return cfg, nil
}

func commandName(mode Mode) string {
	switch mode {
	case ModeSGLang:
		return "sglang.launch_server"
	case ModeRouter:
		return "sglang_router.launch_router"
	case ModeRay:
		return "ray start"
	}
	return "vllm serve"
}

func isFlag(tok string) bool {
	if !strings.HasPrefix(tok, "-") || tok == "-" {
		return false
	}
	_, err := strconv.ParseFloat(tok, 64)
	return err != nil // "-1" is a value, not a flag
}

// takeValues collects a flag's values starting at args[i].
func takeValues(name string, kind flagKind, args []string, i int, inline string, hasInline bool) ([]string, int, error) {
	if hasInline {
		return []string{inline}, i, nil
	}
	j := i
	for j < len(args) && !isFlag(args[j]) {
		j++
	}
	vals := args[i:j]
	switch kind {
	case kindBool:
		return nil, i, nil
	case kindOne:
		if len(vals) == 0 {
			return nil, i, fmt.Errorf("flag %s needs a value", name)
		}
		return vals[:1], i + 1, nil
	case kindOneOrTwo:
		if len(vals) == 0 {
			return nil, i, fmt.Errorf("flag %s needs a URL and optionally a bootstrap port", name)
		}
		n := min(len(vals), 2)
		return vals[:n], i + n, nil
	case kindList:
		if len(vals) == 0 {
			return nil, i, fmt.Errorf("flag %s needs at least one value", name)
		}
	}
	return vals, j, nil
}

func ignoredLine(name string, vals []string, reason string) string {
	if reason == "" {
		reason = "the test engine has no GPU"
	}
	if len(vals) == 0 {
		return fmt.Sprintf("ignored flag %s: %s", name, reason)
	}
	return fmt.Sprintf("ignored flag %s %s: %s", name, strings.Join(vals, " "), reason)
}

func validate(cfg *Config) error {
	if cfg.Port < 1 || cfg.Port > 65535 {
		return fmt.Errorf("--port %d is not a TCP port", cfg.Port)
	}
	switch cfg.Mode {
	case ModeSGLang:
		if cfg.ModelPath == "" {
			return errors.New("sglang.launch_server needs --model-path")
		}
		if cfg.Disaggregation == "prefill" && (cfg.BootstrapPort < 1 || cfg.BootstrapPort > 65535) {
			return fmt.Errorf("--disaggregation-bootstrap-port %d is not a TCP port", cfg.BootstrapPort)
		}
		if err := cfg.MultiNode.validate(); err != nil {
			return err
		}
	case ModeVLLM:
		if cfg.ModelPath == "" {
			return errors.New("vLLM needs a model: vllm serve MODEL, or --model MODEL")
		}
	case ModeRouter:
		return validateRouter(&cfg.Router)
	case ModeRay:
		return nil
	}
	if len(cfg.LoRAModules) > 0 && !cfg.EnableLoRA && cfg.Mode == ModeVLLM {
		return errors.New("--lora-modules needs --enable-lora (as vLLM)")
	}
	return nil
}

func validateRouter(r *RouterConfig) error {
	if !r.PD && (len(r.Prefill) > 0 || len(r.Decode) > 0 || r.PrefillSelector != nil || r.DecodeSelector != nil) {
		return errors.New("--prefill, --decode, --prefill-selector and --decode-selector need --pd-disaggregation")
	}
	if r.PD && len(r.WorkerURLs) > 0 {
		return errors.New("--worker-urls is for a regular router: with --pd-disaggregation give --prefill and --decode")
	}
	if !r.ServiceDiscovery {
		return nil
	}
	if r.PD && (len(r.PrefillSelector) == 0 || len(r.DecodeSelector) == 0) {
		return errors.New("--service-discovery with --pd-disaggregation needs --prefill-selector and --decode-selector")
	}
	if !r.PD && len(r.Selector) == 0 {
		return errors.New("--service-discovery needs --selector k=v ... (the test engine never routes to every pod of a namespace)")
	}
	if r.DiscoveryPort < 1 || r.DiscoveryPort > 65535 {
		return fmt.Errorf("--service-discovery-port %d is not a TCP port", r.DiscoveryPort)
	}
	return nil
}

// parseAdapters reads LoRA adapters as vLLM (--lora-modules name=path or
// JSON {"name","path"}) and SGLang (--lora-paths name=path, or a bare path
// named after itself) write them.
func parseAdapters(vals []string) ([]Adapter, error) {
	out := make([]Adapter, 0, len(vals))
	for _, v := range vals {
		if strings.HasPrefix(v, "{") {
			var j struct {
				Name     string `json:"name"`
				LoRAName string `json:"lora_name"`
				Path     string `json:"path"`
				LoRAPath string `json:"lora_path"`
			}
			if err := json.Unmarshal([]byte(v), &j); err != nil {
				return nil, fmt.Errorf("adapter %q: %w", v, err)
			}
			a := Adapter{Name: cmpOr(j.Name, j.LoRAName), Path: cmpOr(j.Path, j.LoRAPath)}
			if a.Name == "" || a.Path == "" {
				return nil, fmt.Errorf("adapter %q needs a name and a path", v)
			}
			out = append(out, a)
			continue
		}
		name, path, ok := strings.Cut(v, "=")
		if !ok {
			name, path = v, v
		}
		if name == "" || path == "" {
			return nil, fmt.Errorf("adapter %q: want name=path", v)
		}
		out = append(out, Adapter{Name: name, Path: path})
	}
	return out, nil
}

// parseSelector reads key=value items, given as separate arguments or
// several in one argument separated by spaces (as OME's runtimes write
// "component=engine ome.io/inferenceservice=$(INFERENCESERVICE_NAME)").
func parseSelector(vals []string) (map[string]string, error) {
	sel := make(map[string]string, len(vals))
	var items []string
	for _, v := range vals {
		items = append(items, strings.Fields(v)...)
	}
	for _, v := range items {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("selector item %q is not key=value", v)
		}
		sel[k] = val
	}
	return sel, nil
}

func parsePort(v string) (int, error) {
	p, err := strconv.Atoi(v)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%q is not a TCP port", v)
	}
	return p, nil
}

func parseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a count", v)
	}
	return n, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
