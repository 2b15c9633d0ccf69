// Package testengine is berth's stand-in for vLLM, SGLang and the SGLang
// router, run as real processes in real pods of the local test cluster so
// that berth's pods, Services, probes, prefill/decode pairing, routers and
// LoRA handling meet something that speaks the engines' HTTP APIs.
//
// Rules of the package:
//
//   - It is not an inference engine and always says so: a start-up log
//     line, owned_by "berth-test-engine" in /v1/models, the header
//     X-Berth-Test-Engine: stand-in on every answer, and reply texts that
//     begin "berth-test-engine (a stand-in for ..., not a model)".
//   - It is not a mock of berth: it knows nothing of berth's API and reads
//     only what a real engine reads (its command line, the model directory,
//     its environment, and, for the router's service discovery, pods).
//   - Command lines are the engines' own (Parse): flags that change what
//     the stand-in does are honoured, every other flag is accepted and
//     logged once as ignored, stray positional arguments are errors.
//   - Replies are deterministic but for ids and timestamps: they name the
//     engine stood in for, the served model, its architecture from
//     config.json, the pod, and echo the prompt's first words. Token counts
//     are whitespace-separated word counts.
//   - A missing or invalid config.json fails the start (exit 1), naming the
//     path, as a real engine fails; weights are never read.
//   - Prefill/decode is real pod-to-pod traffic: a prefill keeps each
//     request room's "KV" (a digest of the prompt and its pod's name) and
//     serves it on its bootstrap port; a decode fetches it over HTTP before
//     answering and refuses a KV made for another prompt.
//   - Service discovery is a pure rule (WorkerFromPod) fed by client-go
//     informers; a failure to list pods is logged loudly and makes the
//     router's /health unhealthy with the reason.
//   - Small: bounded bodies, a bounded room store, no model in memory.
//
// Run (the program's whole life, exit code included) is what
// cmd/berth-test-engine calls.
package testengine
