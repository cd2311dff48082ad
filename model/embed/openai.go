package embed

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model/openai"
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
// server down, an HTTP error, an answer over its size bound
// (AnswerLimit), an answer with the wrong number of vectors or of mixed
// lengths — is an error wrapping ErrEmbed; the caller decides what it
// means (the semantic cache serves a miss).
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
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	oc.HTTPClient = boundedDoer{hc}
	return &OpenAI{c: goopenai.NewClientWithConfig(oc), model: cfg.Model, timeout: cfg.Timeout,
		secrets: redact.NewSet(cfg.APIKey).WithURL(cfg.BaseURL)}, nil
}

// Name is "openai:MODEL".
func (o *OpenAI) Name() string { return "openai:" + o.model }

// Embed asks the endpoint for one vector per text, in order, and
// L2-normalises each. An answer longer than AnswerLimit(len(texts))
// bytes is an error wrapping ErrEmbed and openai.ErrAnswerTooLarge, read
// no further.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	b := &bound{max: AnswerLimit(len(texts))}
	ctx = context.WithValue(ctx, boundKey{}, b)
	res, err := o.c.CreateEmbeddings(ctx, goopenai.EmbeddingRequestStrings{Input: texts, Model: goopenai.EmbeddingModel(o.model)})
	if b.over {
		// Whatever error the decoder made of the cut, the cause is the size.
		return nil, fmt.Errorf("%w: %w (%d bytes for %d texts)", ErrEmbed, openai.ErrAnswerTooLarge, b.max, len(texts))
	}
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

// maxVectorBytes is what one vector of an embeddings answer may take: 8192
// dimensions (more than any embedding model's) written as JSON numbers of
// up to 32 characters each.
const maxVectorBytes = 8192 * 32

// AnswerLimit is the most bytes an embeddings answer for n texts may hold:
// the bound of a chat answer (openai.DefaultMaxAnswerBytes), or, for a
// batch whose vectors need more, maxVectorBytes per text. An upstream that
// sends more, or never stops, is at fault, and costs a bounded amount of
// memory.
func AnswerLimit(n int) int64 {
	return max(openai.DefaultMaxAnswerBytes, int64(n)*maxVectorBytes)
}

// boundKey carries a call's *bound through the context to boundedDoer,
// since go-openai builds the HTTP request itself.
type boundKey struct{}

// bound is one call's answer limit, and whether the answer went over it.
type bound struct {
	max, read int64
	over      bool
}

// boundedDoer makes every answer's body fail once it is over the call's
// bound (an error answer's too: go-openai reads it whole for its message).
type boundedDoer struct{ c *http.Client }

func (d boundedDoer) Do(r *http.Request) (*http.Response, error) {
	res, err := d.c.Do(r)
	if err != nil {
		return res, err
	}
	b, _ := r.Context().Value(boundKey{}).(*bound)
	if b == nil {
		b = &bound{max: AnswerLimit(1)}
	}
	res.Body = &boundedBody{ReadCloser: res.Body, b: b}
	return res, nil
}

// boundedBody reads its body until the bound is passed, then fails; the
// one byte over the bound tells an answer that is too large from one that
// is exactly at it.
type boundedBody struct {
	io.ReadCloser
	b *bound
}

func (r *boundedBody) Read(p []byte) (int, error) {
	b := r.b
	if b.over {
		return 0, openai.ErrAnswerTooLarge
	}
	if left := b.max - b.read + 1; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := r.ReadCloser.Read(p)
	if b.read += int64(n); b.read > b.max {
		b.over = true
		return 0, openai.ErrAnswerTooLarge
	}
	return n, err
}
