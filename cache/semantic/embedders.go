package semantic

import (
	"fmt"
	"strings"

	"github.com/crab-testbed/crab/model/embed"
)

// EmbedderConfig names a semantic layer's embedder and how to reach it.
type EmbedderConfig struct {
	// Kind is one of the embedder kinds below ("" means builtin-guarded).
	Kind string
	// BaseURL, Model and APIKey reach an OpenAI-compatible /v1/embeddings
	// endpoint (kind openai).
	BaseURL, Model, APIKey string
	// Dim is the built-in embedders' vector length (0: their default).
	Dim int
}

// Embedder kinds a configuration may name (EmbedderConfig.Kind).
const (
	EmbedBuiltin        = "builtin"         // hashed words and n-grams, offline (embed.Hashed)
	EmbedBuiltinGuarded = "builtin-guarded" // the same plus number, identifier and negation features
	EmbedOpenAI         = "openai"          // an OpenAI-compatible /v1/embeddings endpoint (e.g. crab sim-server)
)

// embedders is the table of embedder kinds: name → constructor, in
// the order help text lists them.
var embedders = []struct {
	kind string
	open func(EmbedderConfig) (Embedder, error)
}{
	{EmbedBuiltin, func(c EmbedderConfig) (Embedder, error) {
		return embed.NewHashed(embed.HashedConfig{Dim: c.Dim})
	}},
	{EmbedBuiltinGuarded, func(c EmbedderConfig) (Embedder, error) {
		return embed.NewHashed(embed.HashedConfig{Dim: c.Dim, Guards: true})
	}},
	{EmbedOpenAI, func(c EmbedderConfig) (Embedder, error) {
		return embed.NewOpenAI(embed.OpenAIConfig{BaseURL: c.BaseURL, Model: c.Model, APIKey: c.APIKey})
	}},
}

// EmbedderKinds lists the embedder kinds, the default first.
func EmbedderKinds() []string {
	out := make([]string, len(embedders))
	for i, e := range embedders {
		out[i] = e.kind
	}
	return out
}

// OpenEmbedder builds the embedder a configuration names ("" means
// builtin-guarded).
func OpenEmbedder(c EmbedderConfig) (Embedder, error) {
	if c.Kind == "" {
		c.Kind = EmbedBuiltinGuarded
	}
	for _, e := range embedders {
		if e.kind == c.Kind {
			return e.open(c)
		}
	}
	return nil, fmt.Errorf("%w: unknown embedder %q (want %s)", ErrBadConfig, c.Kind, strings.Join(EmbedderKinds(), ", "))
}
