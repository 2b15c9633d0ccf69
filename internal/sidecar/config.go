package sidecar

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Engine kinds.
const (
	EngineSGLang = "sglang"
	EngineVLLM   = "vllm"
)

// Topology (router) kinds: TOPO_TYPE.
const (
	// TopoSGLang registers the worker with the SGLang router's worker API.
	TopoSGLang = "sglang"
	// TopoNone registers nowhere (an engine without a router, LoRA only).
	TopoNone = "none"
)

// Worker types of instance info.
const (
	WorkerRegular = "regular"
	WorkerPrefill = "prefill"
	WorkerDecode  = "decode"
)

// Config is the sidecar's whole configuration: each field has a flag and an
// environment variable (the flag wins), in the style of KEP-92's engine
// runtime profiles.
type Config struct {
	Engine          string        // --engine, ENGINE_TYPE: sglang or vllm
	EngineURL       string        // --engine-url, ENGINE_URL; default http://127.0.0.1:<instance port>
	EngineHealth    string        // --engine-health-path, ENGINE_HEALTH_PATH
	EngineTimeout   time.Duration // --engine-ready-timeout, ENGINE_READY_TIMEOUT
	Topo            string        // --topo-type, TOPO_TYPE: sglang or none
	RouterURL       string        // --router-url, SGL_ROUTER_URL
	Instance        InstanceInfo  // --instance-info, INSTANCE_INFO
	PodIP           string        // --pod-ip, POD_IP: the worker's address the router dials
	Heartbeat       time.Duration // --heartbeat, HEARTBEAT_INTERVAL
	UnregisterWait  time.Duration // --unregister-timeout, UNREGISTER_TIMEOUT
	Listen          string        // --listen, SIDECAR_LISTEN
	AdaptersFile    string        // --adapters-file, LORA_ADAPTERS_FILE
	AdaptersRefresh time.Duration // --adapters-interval, LORA_ADAPTERS_INTERVAL
}

// InstanceInfo is KEP-92's instance info:
// {"data":{"port":8000,"worker_type":"prefill","bootstrap_port":34000}}.
type InstanceInfo struct {
	Port          int    `json:"port"`
	WorkerType    string `json:"worker_type"`
	BootstrapPort int    `json:"bootstrap_port,omitempty"`
}

// Defaults.
const (
	DefaultListen          = ":8091"
	DefaultEngineTimeout   = 180 * time.Second
	DefaultHeartbeat       = 5 * time.Second
	DefaultUnregisterWait  = 10 * time.Second
	DefaultAdaptersRefresh = 2 * time.Second
)

// ParseConfig reads the command line (args, without the program name) over
// the environment (getenv).
func ParseConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
	var instance string
	fs := flag.NewFlagSet("berth-engine-sidecar", flag.ContinueOnError)
	fs.SetOutput(stderr)
	str := func(p *string, name, env, def, usage string) {
		fs.StringVar(p, name, or(getenv(env), def), usage+" (env "+env+")")
	}
	dur := func(p *time.Duration, name, env string, def time.Duration, usage string, errs *[]error) {
		d := def
		if v := getenv(env); v != "" {
			var err error
			if d, err = time.ParseDuration(v); err != nil {
				*errs = append(*errs, fmt.Errorf("%s=%q: %v", env, v, err))
			}
		}
		fs.DurationVar(p, name, d, usage+" (env "+env+")")
	}
	var envErrs []error
	str(&c.Engine, "engine", "ENGINE_TYPE", EngineSGLang, "the engine: sglang or vllm")
	str(&c.EngineURL, "engine-url", "ENGINE_URL", "", "the engine's base URL (default http://127.0.0.1:<instance info port>)")
	str(&c.EngineHealth, "engine-health-path", "ENGINE_HEALTH_PATH", "/health", "the engine's health endpoint")
	dur(&c.EngineTimeout, "engine-ready-timeout", "ENGINE_READY_TIMEOUT", DefaultEngineTimeout, "how long to wait for the engine's health endpoint before exiting", &envErrs)
	str(&c.Topo, "topo-type", "TOPO_TYPE", TopoSGLang, "the router to register with: sglang or none")
	str(&c.RouterURL, "router-url", "SGL_ROUTER_URL", "", "the router's base URL, e.g. http://<service>.<namespace>.svc")
	str(&instance, "instance-info", "INSTANCE_INFO", "", `the worker: {"data":{"port":8000,"worker_type":"prefill","bootstrap_port":8998}}`)
	str(&c.PodIP, "pod-ip", "POD_IP", "", "the pod's IP, which the router dials (downward API status.podIP)")
	dur(&c.Heartbeat, "heartbeat", "HEARTBEAT_INTERVAL", DefaultHeartbeat, "how often to check the registration and re-register", &envErrs)
	dur(&c.UnregisterWait, "unregister-timeout", "UNREGISTER_TIMEOUT", DefaultUnregisterWait, "how long unregistering may take on SIGTERM", &envErrs)
	str(&c.Listen, "listen", "SIDECAR_LISTEN", DefaultListen, "address of /healthz, /readyz, /metrics and /adapters")
	str(&c.AdaptersFile, "adapters-file", "LORA_ADAPTERS_FILE", "", "the LoRA adapters to keep loaded (a JSON list of {name, source}); empty: no LoRA management")
	dur(&c.AdaptersRefresh, "adapters-interval", "LORA_ADAPTERS_INTERVAL", DefaultAdaptersRefresh, "how often to read the adapters file and compare with the engine", &envErrs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(envErrs) > 0 {
		return c, errors.Join(envErrs...)
	}
	var err error
	if c.Instance, err = parseInstance(instance); err != nil {
		return c, err
	}
	return c, c.finish()
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseInstance accepts KEP-92's {"data":{...}} or the bare object.
func parseInstance(s string) (InstanceInfo, error) {
	if strings.TrimSpace(s) == "" {
		return InstanceInfo{}, errors.New(`--instance-info (INSTANCE_INFO) is required: {"data":{"port":<engine port>,"worker_type":"regular|prefill|decode"}}`)
	}
	var wrapped struct {
		Data *InstanceInfo `json:"data"`
	}
	if err := json.Unmarshal([]byte(s), &wrapped); err != nil {
		return InstanceInfo{}, fmt.Errorf("--instance-info: %v", err)
	}
	if wrapped.Data != nil {
		return *wrapped.Data, nil
	}
	var bare InstanceInfo
	if err := json.Unmarshal([]byte(s), &bare); err != nil {
		return InstanceInfo{}, fmt.Errorf("--instance-info: %v", err)
	}
	return bare, nil
}

// finish checks the configuration and fills what derives from it.
func (c *Config) finish() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf(f, a...)) }
	if c.Engine != EngineSGLang && c.Engine != EngineVLLM {
		bad("--engine %q: want sglang or vllm", c.Engine)
	}
	if c.Instance.Port < 1 || c.Instance.Port > 65535 {
		bad("--instance-info: port %d is not a TCP port", c.Instance.Port)
	}
	if c.Instance.WorkerType == "" {
		c.Instance.WorkerType = WorkerRegular
	}
	switch c.Instance.WorkerType {
	case WorkerRegular, WorkerDecode:
		if c.Instance.BootstrapPort != 0 {
			bad("--instance-info: bootstrap_port is for prefill workers, not %s", c.Instance.WorkerType)
		}
	case WorkerPrefill:
		if c.Instance.BootstrapPort < 0 || c.Instance.BootstrapPort > 65535 {
			bad("--instance-info: bootstrap_port %d is not a TCP port", c.Instance.BootstrapPort)
		}
	default:
		bad("--instance-info: worker_type %q: want regular, prefill or decode", c.Instance.WorkerType)
	}
	if c.EngineURL == "" && c.Instance.Port > 0 {
		c.EngineURL = "http://127.0.0.1:" + strconv.Itoa(c.Instance.Port)
	}
	if err := checkBaseURL(c.EngineURL); err != nil {
		bad("--engine-url: %v", err)
	}
	switch c.Topo {
	case TopoNone:
	case TopoSGLang:
		if err := checkBaseURL(c.RouterURL); err != nil {
			bad("--router-url (SGL_ROUTER_URL): %v (TOPO_TYPE=sglang registers with a router)", err)
		}
		if net.ParseIP(c.PodIP) == nil {
			bad("--pod-ip (POD_IP) %q: want the pod's IP (downward API status.podIP); the router dials the worker there", c.PodIP)
		}
	default:
		bad("--topo-type (TOPO_TYPE) %q: want sglang or none", c.Topo)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"--engine-ready-timeout", c.EngineTimeout}, {"--heartbeat", c.Heartbeat},
		{"--unregister-timeout", c.UnregisterWait}, {"--adapters-interval", c.AdaptersRefresh}} {
		if d.d <= 0 {
			bad("%s %s: want a positive duration", d.name, d.d)
		}
	}
	return errors.Join(errs...)
}

func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want http://host[:port]", raw)
	}
	return nil
}

// WorkerURL is the address the router sends requests to.
func (c Config) WorkerURL() string {
	return "http://" + net.JoinHostPort(c.PodIP, strconv.Itoa(c.Instance.Port))
}
