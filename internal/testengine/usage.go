package testengine

// Usage is the test engine's -h.
const Usage = `berth-test-engine: berth's stand-in for vLLM, SGLang and the SGLang router in tests.
It is NOT an inference engine: it reads a model directory's config.json, runs no
model, and answers every completion with a fixed text naming itself, the model
and the pod. Replies carry the header X-Berth-Test-Engine: stand-in.

Usage (the basename of argv[0] decides; the image installs the binary as
berth-test-engine, python3, vllm and ray):
  python3 -m sglang.launch_server --model-path DIR [--host H] [--port 8080]
      [--served-model-name N] [--disaggregation-mode prefill|decode]
      [--disaggregation-bootstrap-port 8998] [--enable-lora] [--lora-paths name=path ...]
      [--max-loaded-loras N] [--max-running-requests N] ...
  python3 -m sglang_router.launch_router [--host H] [--port 8080] [--policy P]
      [--worker-urls URL ...] [--pd-disaggregation [--prefill URL [BOOTSTRAP_PORT|none]]... [--decode URL]...]
      [--service-discovery --service-discovery-namespace NS --service-discovery-port P
       (--selector k=v ... | --prefill-selector k=v ... --decode-selector k=v ...)
       [--bootstrap-port-annotation sglang.ai/bootstrap-port] [--kubeconfig FILE]]
  vllm serve DIR [--host H] [--port 8000] [--served-model-name N ...] [--enable-lora]
      [--lora-modules name=path ...] [--max-loras N] [--max-num-seqs N] ...
  python3 -m vllm.entrypoints.openai.api_server --model DIR ...
  ray start [--head] [--block] ...   (does nothing; --block waits for SIGTERM)
  berth-test-engine sglang|sglang-router|vllm|ray ARGS   (vllm takes "serve DIR ...", ray "start ...")
  berth-test-engine python3 -m MODULE ARGS

Every other --flag is accepted and logged once as ignored. A positional
argument where none belongs is an error.

Environment: POD_NAME (the pod named in replies; else the hostname),
POD_NAMESPACE (the router's default discovery namespace),
VLLM_ALLOW_RUNTIME_LORA_UPDATING=True (vLLM's /v1/load_lora_adapter),
BERTH_TEST_ENGINE_DELAY (e.g. 200ms, added to every generation),
BERTH_TEST_ENGINE_LOAD_DELAY (/health answers 503 this long after start),
BERTH_TEST_ENGINE_KV_WAIT (how long a decode waits for a room's KV; 10s).

Exit codes: 0 after SIGTERM (drained) or -h, 1 when it cannot start (no
config.json, port taken, no ServiceAccount), 2 for a bad command line.
See docs/test-engine.md for the endpoints.
`
