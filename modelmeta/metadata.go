package modelmeta

// Metadata is what Discover learns from a model's files. A field the files
// do not tell is left zero.
type Metadata struct {
	// Format of the weights: safetensors, gguf or pytorch (see doc.go).
	Format string
	// FormatVersion: "1.0.0" for safetensors (OME's convention), "" otherwise.
	FormatVersion string
	// Framework is "transformers" when config.json has transformers_version.
	Framework string
	// FrameworkVersion is transformers_version normalised to
	// major.minor.patch; FrameworkVersionRaw is as written.
	FrameworkVersion    string
	FrameworkVersionRaw string
	// ModelType is config.json's model_type, e.g. llama, qwen2.
	ModelType string
	// Architecture is config.json's architectures[0], e.g. LlamaForCausalLM.
	Architecture string
	// Quantization is berth's name for quantization_config.quant_method
	// (see the table in doc.go); "" for an unquantized model.
	Quantization string
	// QuantMethodRaw is quantization_config.quant_method as written.
	QuantMethodRaw string
	// DType is config.json's torch_dtype (or dtype), e.g. bfloat16.
	DType string
	// ParameterCount is the exact count from the safetensors headers (see
	// doc.go for packed tensors); 0 when the model has no safetensors.
	ParameterCount int64
	// MaxTokens is config.json's max_position_embeddings.
	MaxTokens int32
	// WeightsBytes is the sum of the weight files' sizes.
	WeightsBytes int64
	// DownloadBytes is the sum of the sizes of every file Source.List
	// returned (files of unknown size count 0): what a downloader fetches.
	DownloadBytes int64
	// Source is Source.Describe() after listing, e.g. hf://org/repo@<sha>.
	Source string
}
