package testengine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Model is what the test engine learned from a model directory.
type Model struct {
	Path         string
	Architecture string // config.json architectures[0], else model_type, else "unknown architecture"
	ModelType    string
	MaxLength    int      // config.json max_position_embeddings, 0 when absent
	Tokenizer    []string // tokenizer files found, for the start-up log
}

var unexpanded = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// LoadModel reads dir/config.json (required, as a real engine requires it)
// and notes the tokenizer files. It never reads weights.
func LoadModel(dir string) (Model, error) {
	if m := unexpanded.FindStringSubmatch(dir); m != nil {
		return Model{}, fmt.Errorf("model path %q holds $(%s), which Kubernetes leaves as written when the container has no env %s", dir, m[1], m[1])
	}
	cfgPath := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return Model{}, fmt.Errorf("model %s: cannot read %s: %w", dir, cfgPath, unwrapPathError(err))
	}
	var cfg struct {
		Architectures []string `json:"architectures"`
		ModelType     string   `json:"model_type"`
		MaxPos        int      `json:"max_position_embeddings"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return Model{}, fmt.Errorf("model %s: %s is not valid JSON: %w", dir, cfgPath, err)
	}
	m := Model{Path: dir, ModelType: cfg.ModelType, MaxLength: cfg.MaxPos}
	switch {
	case len(cfg.Architectures) > 0 && strings.TrimSpace(cfg.Architectures[0]) != "":
		m.Architecture = cfg.Architectures[0]
	case cfg.ModelType != "":
		m.Architecture = cfg.ModelType
	default:
		m.Architecture = "unknown architecture"
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json", "tokenizer.model"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil && st.Mode().IsRegular() {
			m.Tokenizer = append(m.Tokenizer, f)
		}
	}
	return m, nil
}

// checkAdapterDir is the test engine's check of a LoRA adapter: a readable
// directory holding adapter_config.json that parses as JSON.
func checkAdapterDir(path string) error {
	if path == "" {
		return fmt.Errorf("lora_path is empty")
	}
	cfgPath := filepath.Join(path, "adapter_config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return fmt.Errorf("LoRA adapter at %s: cannot read %s: %w", path, cfgPath, unwrapPathError(err))
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("LoRA adapter at %s: %s is not valid JSON: %w", path, cfgPath, err)
	}
	return nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
