package embed

import (
	"context"
	"fmt"
	"github.com/crab-testbed/crab/internal/redact"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
)

// OpenAIConfig configures OpenAI.
type OpenAIConfig struct {
	// BaseURL is the API root, e.g. http://127.0.0.1:8000/v1. Required.
	BaseURL string
	// Model is the embedding model name sent. Required.
	Model string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// Timeout bounds one call (default 10s); the caller's context may end
	// it sooner.
	Timeout time.Duration
	// HTTPClient replaces the default client (tests).
	HTTPClient *http.Client
}

// OpenAI embeds texts through an OpenAI-compatible /v1/embeddings
// endpoint (github.com/sashabaranov/go-openai). Every failure — the
// server down, an HTTP error, an answer with the wrong number of vectors
// or of mixed lengths — is an error wrapping ErrEmbed; the caller decides
// what it means (the semantic cache serves a miss).
type OpenAI struct {
	c       *goopenai.Client
	model   string
	timeout time.Duration
	secrets *redact.Set // the API key and the base URL's password
}

// NewOpenAI validates cfg and returns the client.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if strings.TrimSpace(cfg.BaseURL) == "" || strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("embed: openai embeddings need a base URL and a model")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	oc := goopenai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.HTTPClient != nil {
		oc.HTTPClient = cfg.HTTPClient
	}
	return &OpenAI{c: goopenai.NewClientWithConfig(oc), model: cfg.Model, timeout: cfg.Timeout,
		secrets: redact.NewSet(cfg.APIKey).WithURL(cfg.BaseURL)}, nil
}

// Name is "openai:MODEL".
func (o *OpenAI) Name() string { return "openai:" + o.model }

// Embed asks the endpoint for one vector per text, in order, and
// L2-normalises each.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res, err := o.c.CreateEmbeddings(ctx, goopenai.EmbeddingRequestStrings{Input: texts, Model: goopenai.EmbeddingModel(o.model)})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("%w: %w", ErrEmbed, cerr)
		}
		// The server's words may echo the credential it was sent.
		return nil, fmt.Errorf("%w: %s", ErrEmbed, redact.Truncate(o.secrets.String(err.Error()), 512))
	}
	if len(res.Data) != len(texts) {
		return nil, fmt.Errorf("%w: %d vectors for %d texts", ErrEmbed, len(res.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	dim := -1
	for _, d := range res.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("%w: bad or repeated index %d", ErrEmbed, d.Index)
		}
		if dim < 0 {
			dim = len(d.Embedding)
		}
		if len(d.Embedding) == 0 || len(d.Embedding) != dim {
			return nil, fmt.Errorf("%w: vectors of lengths %d and %d", ErrEmbed, dim, len(d.Embedding))
		}
		v := append([]float32(nil), d.Embedding...)
		normalize(v)
		out[d.Index] = v
	}
	return out, nil
}
