// Package openai is crab's backend for OpenAI-compatible chat completion
// servers (vLLM, Ollama, llama.cpp's server, hosted APIs, and crab's own
// sim-server), built on github.com/sashabaranov/go-openai.
//
// A Backend sends one model.Request as one chat completion call: the
// request's System (plus an instruction for a shortened output mode) as the
// system message, its Text as the user message, its Contract as a strict
// json_schema response_format, its MaxTokens, Temperature and Seed. It
// streams by default, so that the time to first token is measured where the
// first content arrives.
//
// Besides the standard body, every call carries crab's scope and call
// identity in X-Crab-* headers (HeaderTenant, HeaderPermission, HeaderLang,
// HeaderDocVersion, HeaderRequestID, HeaderAttempt, HeaderMode,
// HeaderCaller). Servers that do not know them ignore them; crab's sim-server uses them to build an
// answer for the request's scope and to draw the same simulated luck as an
// in-process simulated model would. Config.NoCrabHeaders turns them off,
// e.g. for a hosted API that should not learn tenant names.
//
// A call's body is written, and its answer read (a streamed answer event
// by event), by a lean codec of crab's own that gives go-openai's bytes
// and values (tests compare the two) and hands any request, answer or
// chunk outside the shapes it knows to go-openai: a cache miss behind
// crab serve is one such call, and go-openai's reflection was about a
// sixth of serve's CPU per non-streamed miss and a fifth per streamed one
// (docs/performance.md, "The OpenAI client's codec").
//
// An answer is checked before any of it is used (Backend.Complete): token
// counts in range, a finish reason the protocol knows, no configured
// credential in the content, and no more than Config.MaxAnswerBytes; an
// answer that fails is the server's fault, an error wrapping
// model.ErrBackend, and none of its figures count.
//
// The backend makes exactly one attempt per call; retries and re-asks are the
// stack's job (model.Retry, the contract layer), and every attempt is
// recorded in the trace they accumulate.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/model"
)

// Headers of crab's extension of the OpenAI wire protocol. A Backend sends
// the request headers; crab sim-server reads them; crab serve reads
// HeaderLang, HeaderDocVersion and HeaderMode from its clients (never the
// tenant or permission, which come from the API key) and writes the
// response headers.
const (
	HeaderTenant     = "X-Crab-Tenant"      // Scope.Tenant
	HeaderPermission = "X-Crab-Permission"  // Scope.Permission
	HeaderLang       = "X-Crab-Lang"        // Scope.Lang
	HeaderDocVersion = "X-Crab-Doc-Version" // Scope.DocVersion
	HeaderRequestID  = "X-Crab-Request-Id"  // Request.TaskID: identifies the call
	HeaderAttempt    = "X-Crab-Attempt"     // Request.Attempt: 0 first, counted up by retries and re-asks
	HeaderMode       = "X-Crab-Mode"        // Request.Mode: full, short or over_short
	HeaderCaller     = "X-Crab-Caller"      // Request.Caller: the arm that sends the call

	// HeaderConfidence is a response header: the server's confidence in
	// its answer, in (0,1] (model.Response.Confidence).
	HeaderConfidence = "X-Crab-Confidence"

	// Response headers of crab serve.
	HeaderCache      = "X-Crab-Cache"       // HIT, MISS or BYPASS
	HeaderModel      = "X-Crab-Model"       // backend that produced the answer
	HeaderRouteScore = "X-Crab-Route-Score" // router score, or "none" when the router did not score the request
	HeaderContract   = "X-Crab-Contract"    // ok, fail or none
)

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("openai: invalid config")

// Config describes one OpenAI-compatible backend.
type Config struct {
	// Name is the backend name reported in model.Response.Model, i.e. the
	// model's name in the experiment. Empty means Model.
	Name string
	// BaseURL is the API root the paths /chat/completions and /models are
	// appended to, e.g. http://127.0.0.1:8000/v1 (vLLM),
	// http://127.0.0.1:11434/v1 (Ollama) or https://api.openai.com/v1.
	BaseURL string
	// Model is the model name sent to the server, e.g. "Qwen/Qwen2.5-7B-Instruct".
	Model string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// Secrets is every credential the process was configured with (other
	// upstreams' keys, the store's password, ...): masked, with APIKey, in
	// every error text the server sends back, and refused in an answer's
	// content (see ErrSecretInAnswer). Nil: APIKey alone.
	Secrets *redact.Set
	// NoStream makes non-streaming calls. The time to first token is then
	// the time the whole answer arrived, which hides what streaming shows.
	NoStream bool
	// NoCrabHeaders leaves out the X-Crab-* request headers.
	NoCrabHeaders bool
	// PriceIn and PriceOut are the prices of one input and one output
	// token; Usage.Cost = tokensIn*PriceIn + tokensOut*PriceOut.
	PriceIn, PriceOut float64
	// MaxConns is how many idle keep-alive connections to the server are
	// kept; set it to at least the number of calls in flight (an
	// experiment's concurrency), or connections are re-opened under load.
	// 0 means 64.
	MaxConns int
	// MaxAnswerBytes bounds one answer as it arrives: a non-streamed
	// answer's body; a streamed answer's content, each line of the stream,
	// and the lines that are neither events nor blank (the events' framing,
	// most of a stream's bytes and none of it kept, does not count). An
	// answer over it is the upstream's fault (ErrAnswerTooLarge), so a
	// server that never stops answering costs a few times this much memory
	// per call at most; one that streams empty events for ever is ended by
	// the call's deadline. 0 means DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// HTTPClient replaces the tuned default client (tests). Its Timeout
	// should be zero: the deadline comes from each call's context.
	HTTPClient *http.Client
	// Now is the clock of the trace; nil means time.Now.
	Now func() time.Time
}

// Backend is a model.Model that calls an OpenAI-compatible server. It is
// safe for concurrent use.
type Backend struct {
	cfg     Config
	client  *goopenai.Client
	http    *http.Client
	now     func() time.Time
	secrets *redact.Set // cfg.Secrets, the API key and the base URL's password
	lean    *leanCall   // calls without go-openai; nil: every call through go-openai
	schemas schemaCache
}

var _ model.Model = (*Backend)(nil)

// New validates cfg and returns the backend. The default HTTP client has
// no overall timeout (each call's deadline comes from its context) and a
// transport tuned for many concurrent calls to one host: keep-alive,
// MaxConns idle connections per host, no compression (streams are not
// buffered by a decompressor).
func New(cfg Config) (*Backend, error) {
	if strings.TrimSpace(cfg.BaseURL) == "" {
		return nil, fmt.Errorf("%w: base_url is required", ErrConfig)
	}
	if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
		return nil, fmt.Errorf("%w: base_url %q: want an http:// or https:// URL", ErrConfig, redact.URL(cfg.BaseURL))
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("%w: model is required", ErrConfig)
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Model
	}
	if cfg.MaxConns < 0 {
		return nil, fmt.Errorf("%w: max_conns %d is negative", ErrConfig, cfg.MaxConns)
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 64
	}
	if cfg.MaxAnswerBytes < 0 {
		return nil, fmt.Errorf("%w: max_answer_bytes %d is negative", ErrConfig, cfg.MaxAnswerBytes)
	}
	if cfg.MaxAnswerBytes == 0 {
		cfg.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if math.IsNaN(cfg.PriceIn) || math.IsInf(cfg.PriceIn, 0) || math.IsInf(cfg.PriceOut, 0) || math.IsNaN(cfg.PriceOut) || cfg.PriceIn < 0 || cfg.PriceOut < 0 {
		return nil, fmt.Errorf("%w: prices must not be negative", ErrConfig)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: NewTransport(cfg.MaxConns)}
	}
	oc := goopenai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = headerDoer{c: hc, max: cfg.MaxAnswerBytes}
	b := &Backend{cfg: cfg, client: goopenai.NewClientWithConfig(oc), http: hc, now: cfg.Now,
		secrets: cfg.Secrets.With(cfg.APIKey).WithURL(cfg.BaseURL)}
	if b.now == nil {
		b.now = time.Now
	}
	b.lean = probeLean(oc, cfg.Model, !cfg.NoStream)
	return b, nil
}

// NewTransport returns an HTTP transport for many concurrent calls to one
// server: keep-alive with maxConns idle connections per host, bounded dial
// and TLS handshake times, HTTP/2 when the server offers it, and no
// transparent compression.
func NewTransport(maxConns int) *http.Transport {
	if maxConns <= 0 {
		maxConns = 64
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxConns * 2,
		MaxIdleConnsPerHost:   maxConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// Name is the backend name reported in Response.Model.
func (b *Backend) Name() string { return b.cfg.Name }

// Config returns the backend's configuration with defaults filled in. The
// API key is left out.
func (b *Backend) Config() Config {
	c := b.cfg
	c.APIKey, c.Secrets = "", nil
	return c
}

// Close releases idle connections.
func (b *Backend) Close() { b.http.CloseIdleConnections() }

// Complete makes one chat completion call for req.
//
// The trace holds one attempt: ModelDur is the wall time of the call, TTFT
// the time from the start of the call to the first chunk that carries
// content (a role-only or empty chunk does not count; without streaming, to
// the arrival of the whole answer) and FirstByteAt that moment's wall-clock
// time. Usage comes from the server's usage report (in a stream, the last
// usage chunk, requested with stream_options.include_usage; a server that
// repeats usage on every chunk is not summed) and is priced with the
// configured prices; a server that reports no usage bills zero tokens, and
// one whose report is out of range fails the call (ErrBadUsage).
// Scope is req.Scope: the answer was built for the request's scope.
//
// A refusal (the message's refusal field, or finish reason
// content_filter) is returned without error as content with
// model.FinishRefusal; judging it is the contract layer's job.
//
// Errors: an HTTP error status returns a *StatusError (wrapping
// model.ErrBackend) with the status, the server's message (credentials
// masked, at most 512 bytes) and the Retry-After it asked for; a broken
// connection, a stream that ends before its finish reason, and an answer
// that fails a check (ErrBadUsage, ErrBadFinish, ErrSecretInAnswer,
// ErrAnswerTooLarge) wrap model.ErrBackend; when ctx ends first, ctx.Err()
// is returned. A failed
// call still returns a response carrying its trace.
func (b *Backend) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	creq := b.request(req)
	extra := extraFields(&creq, req)
	resp := &model.Response{Model: b.cfg.Name, Scope: req.Scope}
	resp.Trace.Attempts = 1
	start := b.now()
	var retryAfter string
	var body answerBody
	var err error
	handled := false
	switch {
	case b.lean == nil:
	case b.cfg.NoStream:
		handled, err = b.onceLean(ctx, req, &creq, extra, resp, start, &body)
	default:
		handled, err = b.streamLean(ctx, req, &creq, extra, resp, start, &body)
	}
	if !handled {
		if !b.cfg.NoCrabHeaders {
			ctx = context.WithValue(ctx, headersKey{}, crabHeaders(req))
		}
		ctx = context.WithValue(ctx, retryAfterKey{}, &retryAfter)
		ctx = context.WithValue(ctx, answerKey{}, &body)
		if len(extra) > 0 {
			ctx = context.WithValue(ctx, extraKey{}, extra)
		}
		if b.cfg.NoStream {
			err = b.once(ctx, creq, resp, start)
		} else {
			err = b.stream(ctx, creq, resp, start)
		}
	}
	resp.Trace.ModelDur = b.now().Sub(start)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return resp, cerr
		}
		if body.tooLarge.Load() {
			resp.Content = ""
			return resp, fmt.Errorf("%w: %s: %w (%d bytes)", model.ErrBackend, b.cfg.Name, ErrAnswerTooLarge, b.cfg.MaxAnswerBytes)
		}
		var se *StatusError
		if errors.As(err, &se) {
			se.Backend = b.cfg.Name
			if se.Wait == 0 {
				se.Wait = parseRetryAfter(retryAfter, b.now())
			}
			// The server's words go into records and logs: a server that
			// echoes the credential it received must not put it there.
			// Masked before cut short, so a cut through a secret keeps
			// no piece of it.
			se.Type, se.Code = b.mask(se.Type), b.mask(se.Code)
			se.Message = redact.Truncate(b.mask(se.Message), maxErrorMessage)
			return resp, se
		}
		return resp, fmt.Errorf("%w: %s: %s", model.ErrBackend, b.cfg.Name, redact.Truncate(b.mask(err.Error()), maxErrorBody))
	}
	if err := b.check(resp); err != nil {
		// An answer that breaks the protocol is the upstream's fault: it
		// is neither served, stored nor recorded, and none of its figures
		// are counted.
		resp.Content, resp.FinishReason, resp.Usage = "", "", model.Usage{}
		return resp, fmt.Errorf("%w: %s: %w", model.ErrBackend, b.cfg.Name, err)
	}
	resp.Usage.Cost = float64(resp.Usage.TokensIn)*b.cfg.PriceIn + float64(resp.Usage.TokensOut)*b.cfg.PriceOut
	if math.IsInf(resp.Usage.Cost, 0) {
		// Prices near the largest float times tokens in range: no record
		// or counter could hold the product.
		resp.Content, resp.FinishReason, resp.Usage = "", "", model.Usage{}
		return resp, fmt.Errorf("%w: %s: %w (its cost at the configured prices is not finite)", model.ErrBackend, b.cfg.Name, ErrBadUsage)
	}
	return resp, nil
}

// DefaultMaxAnswerBytes is the default of Config.MaxAnswerBytes: some
// million tokens of content, far more than any model's output budget,
// and little enough that a few dozen endless answers at once cost a few
// hundred MB.
const DefaultMaxAnswerBytes = 4 << 20

// MaxUsageTokens bounds each token count a server reports for one call:
// a larger one is no model's, and would make a cost no budget can hold.
const MaxUsageTokens = 1 << 27

// Errors of answers that break the protocol; each is wrapped, with
// model.ErrBackend, by the error of the call that got it.
var (
	// ErrSecretInAnswer: the answer holds a configured secret (or a piece
	// of one of 8 bytes or more); the content is withheld.
	ErrSecretInAnswer = errors.New("the answer holds a configured credential (content withheld)")
	// ErrAnswerTooLarge: the answer grew past Config.MaxAnswerBytes.
	ErrAnswerTooLarge = errors.New("the answer is over max_answer_bytes")
	// ErrBadUsage: a token count of the usage report is negative or over
	// MaxUsageTokens.
	ErrBadUsage = errors.New("the usage report is out of range")
	// ErrBadFinish: the finish reason is not one the protocol knows.
	ErrBadFinish = errors.New("the finish reason is not one the protocol knows")
)

// check validates what a server said about a call before any of it is
// used: token counts in [0, MaxUsageTokens], a known finish reason, and
// no configured secret in the content.
func (b *Backend) check(resp *model.Response) error {
	u := resp.Usage
	if u.TokensIn < 0 || u.TokensOut < 0 || u.TokensIn > MaxUsageTokens || u.TokensOut > MaxUsageTokens {
		return fmt.Errorf("%w (prompt_tokens %d, completion_tokens %d)", ErrBadUsage, u.TokensIn, u.TokensOut)
	}
	if !knownFinish[resp.FinishReason] {
		return fmt.Errorf("%w (%d bytes)", ErrBadFinish, len(resp.FinishReason))
	}
	if b.secrets.Found(resp.Content) {
		return ErrSecretInAnswer
	}
	return nil
}

// knownFinish is every finish reason a call may end with, once
// finishReason has mapped the wire's: "" for a non-streamed answer whose
// finish_reason is null.
var knownFinish = map[string]bool{
	"": true, model.FinishStop: true, model.FinishLength: true, model.FinishRefusal: true,
	string(goopenai.FinishReasonToolCalls): true, string(goopenai.FinishReasonFunctionCall): true,
}

// mask masks credentials in a server's text: every configured secret and
// every credential pattern.
func (b *Backend) mask(s string) string { return b.secrets.String(s) }

// request builds the chat completion request.
func (b *Backend) request(req *model.Request) goopenai.ChatCompletionRequest {
	system := req.System
	if ins := req.ModeInstruction(); ins != "" {
		if system != "" {
			system += "\n\n"
		}
		system += ins
	}
	msgs := make([]goopenai.ChatCompletionMessage, 0, 2+len(req.History))
	if system != "" {
		msgs = append(msgs, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: system})
	}
	for _, m := range req.History {
		msgs = append(msgs, goopenai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	msgs = append(msgs, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: req.Text})
	c := goopenai.ChatCompletionRequest{
		Model:       b.cfg.Model,
		Messages:    msgs,
		Temperature: float32(req.Temperature),
		User:        req.User,
	}
	if c.Temperature == 0 {
		// go-openai leaves a zero temperature out, and servers then sample
		// at their default (often 1). Stand in the smallest one for the
		// reasoning check below; the body then says 0 (see extraFields).
		c.Temperature = math.SmallestNonzeroFloat32
	}
	if req.Seed != 0 {
		seed := int(req.Seed)
		c.Seed = &seed
	}
	if len(req.Contract) > 0 {
		c.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
			Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
				Name: "crab_contract", Schema: json.RawMessage(req.Contract), Strict: true,
			},
		}
	}
	if !b.cfg.NoStream {
		c.Stream = true
		c.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	}
	fitModel(&c, req.MaxTokens)
	return c
}

// once makes a non-streaming call.
func (b *Backend) once(ctx context.Context, creq goopenai.ChatCompletionRequest, resp *model.Response, start time.Time) error {
	out, err := b.client.CreateChatCompletion(ctx, creq)
	if err != nil {
		return statusError(err)
	}
	at := b.now()
	resp.Trace.TTFT = at.Sub(start)
	resp.Trace.FirstByteAt = at
	resp.Confidence = confidence(out.Header())
	if len(out.Choices) == 0 {
		return errors.New("answer without choices")
	}
	msg := &out.Choices[0].Message
	resp.Content = msg.Content
	resp.FinishReason = finishReason(out.Choices[0].FinishReason)
	if resp.Content == "" && msg.Refusal != "" {
		resp.Content = msg.Refusal
		resp.FinishReason = model.FinishRefusal
	}
	resp.Usage = model.Usage{TokensIn: out.Usage.PromptTokens, TokensOut: out.Usage.CompletionTokens}
	return nil
}

// finishReason maps the wire's finish reason to crab's; the names some
// servers use for the standard reasons (Hugging Face TGI's eos_token and
// stop_sequence, Anthropic-style end_turn and max_tokens) are mapped to
// them. What it returns is checked against knownFinish.
func finishReason(f goopenai.FinishReason) string {
	switch f {
	case goopenai.FinishReasonContentFilter:
		return model.FinishRefusal
	case goopenai.FinishReasonNull:
		return ""
	case "eos", "eos_token", "stop_sequence", "end_turn":
		return model.FinishStop
	case "max_tokens":
		return model.FinishLength
	}
	return string(f)
}

func confidence(h http.Header) float64 {
	v, err := strconv.ParseFloat(h.Get(HeaderConfidence), 64)
	if err != nil || math.IsNaN(v) || v <= 0 || v > 1 {
		return 0
	}
	return v
}
