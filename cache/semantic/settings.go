package semantic

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crab-testbed/crab/cache"
)

// Settings are the semantic layer's own keys of a cache configuration.
// They are written inline, beside the keys every cache kind shares (key,
// ttl, check_on_hit), so experiment and serve files keep one flat cache
// block:
//
//	cache: {kind: semantic, threshold: 0.93, embedder: builtin-guarded}
type Settings struct {
	// Threshold (required) is the least cosine similarity, in (0, 1], for
	// a hit; choose it with crab tune on labelled pairs of the workload.
	Threshold float64 `yaml:"threshold" json:",omitempty"`
	// Embedder: builtin-guarded (default, offline), builtin (offline,
	// words and n-grams only) or openai (an OpenAI-compatible
	// /v1/embeddings endpoint, e.g. crab sim-server).
	Embedder string `yaml:"embedder" json:",omitempty"`
	// EmbedBaseURL, EmbedModel and EmbedAPIKeyEnv reach the endpoint of
	// embedder openai (API root, model name, environment variable holding
	// the API key).
	EmbedBaseURL   string `yaml:"embed_base_url" json:",omitempty"`
	EmbedModel     string `yaml:"embed_model" json:",omitempty"`
	EmbedAPIKeyEnv string `yaml:"embed_api_key_env" json:",omitempty"`
}

// FieldError is one invalid key of Settings: Field is its YAML name
// (e.g. "embed_model"), so a loader can name the file's line.
type FieldError struct {
	Field, Msg string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Set lists the YAML names of the keys that are set, in file order: a
// cache of another kind rejects each of them.
func (s Settings) Set() []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"threshold", s.Threshold != 0}, {"embedder", s.Embedder != ""}, {"embed_base_url", s.EmbedBaseURL != ""},
		{"embed_model", s.EmbedModel != ""}, {"embed_api_key_env", s.EmbedAPIKeyEnv != ""}} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// Validate checks the settings and fills the default embedder. It returns
// every problem found, in file order; nil means a layer can be built.
func (s *Settings) Validate() []*FieldError {
	var l []*FieldError
	add := func(field, format string, args ...any) {
		l = append(l, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if !(s.Threshold > 0 && s.Threshold <= 1) {
		add("threshold", "required for kind %s: a cosine similarity in (0, 1], got %v", cache.KindSemantic, s.Threshold)
	}
	if s.Embedder == "" {
		s.Embedder = EmbedBuiltinGuarded
	} else if !slices.Contains(EmbedderKinds(), s.Embedder) {
		add("embedder", "unknown embedder %q (want %s)", s.Embedder, strings.Join(EmbedderKinds(), ", "))
		return l
	}
	if s.Embedder == EmbedOpenAI {
		if strings.TrimSpace(s.EmbedBaseURL) == "" {
			add("embed_base_url", "required for embedder %s", EmbedOpenAI)
		}
		if strings.TrimSpace(s.EmbedModel) == "" {
			add("embed_model", "required for embedder %s", EmbedOpenAI)
		}
		return l
	}
	for _, f := range (Settings{EmbedBaseURL: s.EmbedBaseURL, EmbedModel: s.EmbedModel, EmbedAPIKeyEnv: s.EmbedAPIKeyEnv}).Set() {
		add(f, "only used with embedder %s", EmbedOpenAI)
	}
	return l
}

// EmbedderConfig is the embedder the settings name; getenv reads the
// API key's environment variable (nil reads none).
func (s Settings) EmbedderConfig(getenv func(string) string) EmbedderConfig {
	c := EmbedderConfig{Kind: s.Embedder, BaseURL: s.EmbedBaseURL, Model: s.EmbedModel}
	if getenv != nil && s.EmbedAPIKeyEnv != "" {
		c.APIKey = getenv(s.EmbedAPIKeyEnv)
	}
	return c
}
