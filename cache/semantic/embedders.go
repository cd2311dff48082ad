package semantic

import (
	"fmt"
	"strings"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/model/embed"
)

// Embedder kinds a configuration may name (cache.EmbedderConfig.Kind).
const (
	EmbedBuiltin        = "builtin"         // hashed words and n-grams, offline (embed.Hashed)
	EmbedBuiltinGuarded = "builtin-guarded" // the same plus number, identifier and negation features
	EmbedOpenAI         = "openai"          // an OpenAI-compatible /v1/embeddings endpoint (e.g. crab sim-server)
)

// embedders is the registry of embedder kinds: name → constructor, in
// the order help text lists them.
var embedders = []struct {
	kind string
	open func(cache.EmbedderConfig) (Embedder, error)
}{
	{EmbedBuiltin, func(c cache.EmbedderConfig) (Embedder, error) {
		return embed.NewHashed(embed.HashedConfig{Dim: c.Dim})
	}},
	{EmbedBuiltinGuarded, func(c cache.EmbedderConfig) (Embedder, error) {
		return embed.NewHashed(embed.HashedConfig{Dim: c.Dim, Guards: true})
	}},
	{EmbedOpenAI, func(c cache.EmbedderConfig) (Embedder, error) {
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
func OpenEmbedder(c cache.EmbedderConfig) (Embedder, error) {
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

// newLayer is the registered constructor of the semantic kind.
func newLayer(lc cache.LayerConfig) (cache.Layer, error) {
	emb, err := OpenEmbedder(lc.Embedder)
	if err != nil {
		return nil, err
	}
	return New(Config{
		Fields: lc.Config.Fields, Threshold: lc.Threshold, CheckOnHit: lc.Config.CheckOnHit,
		TTL: lc.Config.TTL, Now: lc.Config.Now,
	}, emb)
}
