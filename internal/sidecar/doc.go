// Package sidecar is berth's engine runtime sidecar (cmd/berth-engine-sidecar),
// the container a ClusterEngineRuntimeProfile adds next to an inference
// engine (KEP-92's engine runtime): it keeps the router's view of the
// engine's pod in sync and keeps the engine's LoRA adapters equal to what
// the InferenceService declares. docs/engine-sidecar.md is its user guide.
//
// Rules of the package:
//
//   - Configuration is flags over environment variables (ParseConfig), in
//     the profile style: TOPO_TYPE, SGL_ROUTER_URL, INSTANCE_INFO
//     ({"data":{"port","worker_type","bootstrap_port"}}), POD_IP. A bad
//     configuration exits 2 naming every wrong value at once.
//   - It waits for the engine's health endpoint with exponential backoff
//     (200ms to 5s) for at most --engine-ready-timeout, then exits 1 (the
//     kubelet restarts it).
//   - Registration: once healthy, the worker is registered (Router.Register)
//     and on every heartbeat the sidecar asks the router whether it still
//     lists the worker, registering again when not: a restarted router
//     learns its workers within one heartbeat of answering. An unhealthy
//     engine is unregistered until it is healthy again. On SIGTERM or
//     SIGINT the worker is unregistered within --unregister-timeout
//     (keep it under the pod's terminationGracePeriodSeconds), then the
//     program exits 0.
//   - The router is an interface of three calls (Register, Unregister,
//     Registered); SGLangRouter speaks the SGLang model gateway's worker
//     API (POST /workers, GET /workers, DELETE /workers/{url}).
//   - /readyz answers 200 only while the router listed the worker at the
//     last heartbeat (with TOPO_TYPE=none: while the engine is healthy);
//     /healthz answers 200 while the process serves; /metrics is
//     Prometheus; /adapters is the LoRA state as JSON.
//   - LoRA: the adapters file (a JSON list of {name, source}, a downward
//     API projection of the pod annotation berth writes) is compared with
//     the engine's adapters, the entries of its GET /v1/models that have a
//     parent, every --adapters-interval: missing adapters are loaded
//     (again after an engine restart), unwanted ones unloaded, through the
//     engine's own endpoints (vLLM /v1/load_lora_adapter and
//     /v1/unload_lora_adapter, SGLang /load_lora_adapter and
//     /unload_lora_adapter). A failed load is reported with the engine's
//     reason and tried again on the next pass; it never unloads the
//     others. A file that does not parse changes nothing.
//   - Small: no Kubernetes client, bounded answers (1 MiB), one static
//     binary.
package sidecar
