// Package modelmeta learns a model's metadata from the model's own files, as
// OME's model agent does: the format from the file listing, the architecture,
// type, dtype, quantization, framework version and context length from
// config.json, and the exact parameter count from the safetensors headers,
// read with byte-range requests so that the weights are never downloaded.
//
// It is pure apart from the I/O its sources do: standard library only (plus
// the API types for ToAPI), no client-go. The reconciler runs Discover and
// writes Metadata.ToAPI() into a model's status; `berth model inspect`
// prints it.
//
// Download (download.go) is the other use of a Source: every listed file
// into a directory, for `berth model download` (the model-downloader init
// container). Nothing is skipped: what a repository holds is what
// KServe's storage initializer would fetch. Files are fetched
// DownloadOptions.Concurrency at a time (default 4) with one ranged read
// each, written under a temporary name (.<name>.part-*) in their
// directory, checked against the listed size and, for the Hub's LFS files,
// the listed sha256 (HF.SHA256), then renamed; a file already present
// with the listed size is kept, so a re-run resumes. Listed paths that are
// absolute or leave the directory are refused.
//
// # Sources
//
// A Source (source.go) lists a model's files (path relative to the model's
// root, size) and opens a byte range of one of them; Describe names what was
// read without credentials. Sources:
//
//   - hf.go: NewHF("hf://org/repo[@revision]", HFOptions{Endpoint, Token,
//     Client, Timeout, MaxAPIBody}) speaks the Hugging Face Hub's HTTP API
//     (see "The Hub" below).
//   - s3.go: NewS3("s3://bucket/prefix", S3Options{Endpoint, Region,
//     PathStyle, Credentials}) on any S3-compatible API (AWS, MinIO, OCI).
//   - local.go: NewLocal(root, dir, LocalOptions) over a directory confined
//     to root, for pvc:// and local paths.
//
// Their rules and knobs, and the JSON contract of `berth model inspect`
// (InspectResult, the pvc:// inspection Job's termination message), are in
// doc_sources.go.
//
// A Source reports a missing model or file as an *Error with Reason NotFound
// and refused credentials as Unauthorized (use Errorf); any other error
// becomes Unavailable. ReadRange must never buffer more than the length asked
// for: Discover's memory bound relies on it.
//
// # What Discover reads
//
// Only files at the model's root count: config.json, the weights and
// model.safetensors.index.json. Subdirectories (Meta's original/*.pth, a
// stray sub/config.json) are ignored, except that the index may name shards
// anywhere.
//
//   - Format, from the root's files, first match wins:
//     *.safetensors -> "safetensors", version "1.0.0" (OME's convention);
//     *.gguf -> "gguf", version the GGUF header's version number (read from
//     the first 8 bytes of the first file by name);
//     *.bin (not training_args.bin), *.pt, *.pth -> "pytorch", no version.
//     No weight file at all is NotFound.
//   - config.json is required (ConfigMissing without it) except for a GGUF
//     model, which usually ships none. From it: architectures[0] ->
//     Architecture; model_type -> ModelType; torch_dtype, else dtype (the
//     key newer transformers write) -> DType; max_position_embeddings ->
//     MaxTokens; quantization_config, else compression_config (early
//     compressed-tensors checkpoints) -> Quantization (table below). A
//     multimodal config's text_config fills whichever of dtype,
//     max_position_embeddings and the quantization block the top level
//     lacks. Every field is optional; a field of the wrong type, or a
//     config.json that is not a JSON object, is HeaderMalformed.
//   - Framework is "transformers" when config.json has transformers_version.
//     FrameworkVersion is that version cut to major.minor.patch (missing
//     parts are 0, PEP 440 suffixes dropped: "4.43.0.dev0" -> "4.43.0",
//     "4.45" -> "4.45.0"), FrameworkVersionRaw keeps it as written.
//   - ParameterCount (safetensors only): with model.safetensors.index.json,
//     the shards are the distinct values of its weight_map, every one must
//     be listed (else NotFound naming it), every shard's header must hold
//     the tensors the index places in it (else HeaderMalformed; tensors the
//     index does not list are counted too), and root *.safetensors the
//     index does not name are not read; without an index, every root
//     *.safetensors is read.
//     The count is the sum over all tensors of their parameters (next
//     section), with checked arithmetic.
//   - WeightsBytes: the sum of the weight files' sizes (for safetensors,
//     8 + header + data, which the listing's size must equal; for GGUF,
//     every root *.gguf, so a repository holding several quantizations
//     counts them all).
//   - DownloadBytes: the sum of every listed file's size, subdirectories
//     and non-weight files included (files of unknown size count 0): what
//     a downloader fetches. merge sizes the download volume from it.
//   - Source: Source.Describe() after listing, e.g. hf://org/repo@<sha>.
//
// # Counting parameters
//
// A tensor counts its elements (the product of its shape; 1 for a scalar)
// whatever its dtype: BF16, FP8 (F8_E4M3) weights, scales, zero points,
// g_idx and biases all count one per element. The exception is a packed
// quantized weight: a tensor whose name ends in ".qweight" (AWQ, GPTQ) or
// ".weight_packed" (compressed-tensors pack-quantized) when the config gives
// a weight width narrower than the tensor's dtype (bits, w_bit,
// load_in_4bit/8bit, or num_bits shared by every compressed-tensors config
// group). It counts elements x dtype bits / weight bits: an int32 qweight at
// 4 bits is 8 parameters per element; at 3 bits, 32 per 3 elements (a
// remainder is HeaderMalformed). qzeros stay as stored: they are zero points,
// not weights.
//
// So RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8 counts 8,030,261,696: the
// 8,030,261,248 weights of Llama-3.1-8B plus one weight_scale and one
// input_scale for each of its 32 x 7 linear layers.
//
// # Quantization names
//
// quant_method (lower-cased) maps to the names berth's runtimes use in
// supportedModelFormats[].quantization:
//
//	quant_method                        berth
//	(none)                              "" (unquantized)
//	fp8, fbgemm_fp8, mxfp4              as written
//	compressed-tensors                  by the weights of every config group:
//	                                    float 8 bits -> fp8, float 4 -> nvfp4,
//	                                    int 4 -> int4, int 8 -> int8,
//	                                    otherwise compressed-tensors
//	awq, gptq, awq_marlin, gptq_marlin,
//	marlin, bitsandbytes, hqq, eetq,
//	quanto                              int4 or int8 by the weight bits,
//	                                    otherwise the method
//	modelopt                            quant_algo FP8 -> fp8, NVFP4 -> nvfp4,
//	                                    otherwise modelopt
//	anything else                       as written
//
// Metadata.QuantMethodRaw keeps quant_method as written (lower-cased).
//
// # Safetensors headers
//
// A file is an 8-byte little-endian length N, N bytes of JSON, then the
// data. ParseHeader checks, in order:
//
//   - N is at most the cap (Options.MaxHeaderBytes, default 16 MiB, never
//     above the specification's 100 MiB): TooLarge otherwise; N >= 2; and
//     8 + N fits in the file when its size is known.
//   - The N bytes arrive (a short file is HeaderMalformed) and are a JSON
//     object, trailing spaces allowed (writers pad to 8 bytes).
//   - "__metadata__", when present, maps strings to strings.
//   - Every other entry has dtype, shape and data_offsets. dtype is one of
//     BOOL, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32,
//     U32, F32, I64, U64, F64, C64, F4, F6_E2M3, F6_E3M2. shape has at most
//     MaxTensorRank (16) dimensions, none negative, whose product fits in an
//     int64. data_offsets is [begin, end] with 0 <= begin <= end and
//     end - begin = elements x dtype bits / 8 exactly (sub-byte dtypes must
//     fill whole bytes).
//   - The tensors tile the data section from offset 0 without gaps or
//     overlaps, and, when the file's size is known, the data ends exactly at
//     the end of the file.
//
// Reading: Discover asks for the first bytes of each shard in one request
// sized from the index (its tensor names plus 128 bytes each, plus 1 KiB;
// 64 KiB without an index), and makes a second request only for a header
// longer than that. A sharded 405B checkpoint takes 3 + 191 requests.
//
// # Errors
//
// Discover returns either Metadata or an *Error (errors.go) whose Reason is
// one of Unauthorized, NotFound, ConfigMissing, HeaderMalformed, TooLarge and
// Unavailable, and whose message names the source and the file. ReasonOf
// gives the Reason of any error. Only Unavailable (network, 429, 5xx, a
// cancelled context) is worth retrying without a change to the model or its
// credentials. Discover never panics on any input (FuzzSafetensorsHeader).
//
// # Caps (Options)
//
//   - A safetensors header longer than Options.MaxHeaderBytes (default
//     16 MiB) is TooLarge; no option raises it past 100 MiB.
//   - config.json is capped at MaxConfigBytes (default 1 MiB) and the shard
//     index at MaxIndexBytes (default 16 MiB); neither above 64 MiB.
//   - At most MaxShards (default 4096) safetensors files are read.
//
// Every read goes through io.LimitReader with its cap, and buffers grow with
// the bytes that actually arrive, never with a length a file claims, so
// memory stays bounded by the caps whatever a source or a file says.
//
// # The Hub
//
// HF uses two routes of the Hub's HTTP API, under a configurable endpoint
// (default https://huggingface.co; a mirror such as https://hf-mirror.com,
// with or without a path prefix, works the same):
//
//	GET {endpoint}/api/models/{org}/{name}/revision/{revision}?blobs=true
//	GET {endpoint}/{org}/{name}/resolve/{sha}/{path}   with Range: bytes=a-b
//
// The first gives the commit sha and the files with their sizes (blobs=true
// is what adds the sizes); every later read uses that sha, so all files come
// from one commit. The revision (default main; a branch, tag, commit or
// refs/pr/N) is one escaped path segment. The Hub redirects large files to
// its CDN: the Range header follows, the token (Authorization: Bearer, only
// when HFOptions.Token is set) does not leave the endpoint's host. A server
// that ignores Range has its leading bytes skipped and the body cut at the
// length asked for; a 416 is an empty read.
//
// Status mapping: 401 and 403 are Unauthorized ("the repo is private or
// gated, or does not exist: set a token"; the Hub answers 401 for a missing
// repository when no token is sent), 404 NotFound, anything else
// Unavailable. Each request has a timeout (HFOptions.Timeout, default 30s,
// when no Client is given) and the model-info JSON is capped
// (HFOptions.MaxAPIBody, default 16 MiB, TooLarge beyond). The token never
// appears in Describe or in an error.
//
// internal/hubtest is a local Hub that speaks exactly this subset and serves
// three real models for tests.
package modelmeta
