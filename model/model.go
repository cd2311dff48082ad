// Package model defines the request and response types every layer of a crab
// stack speaks, the Model interface with its function adapter, and Chain,
// which composes middleware the way net/http handlers are composed.
package model

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Output modes a request can ask for. The mode changes what is asked of the
// model (a shortened answer is requested, not trimmed afterwards).
const (
	ModeFull      = "full"       // every field, including the optional background
	ModeShort     = "short"      // terse reason, no background, lower token budget
	ModeOverShort = "over_short" // also drops evidence and risk flags: breaks the contract on purpose
)

// Finish reasons a backend reports.
const (
	FinishStop    = "stop"
	FinishLength  = "length"  // the answer hit max tokens and was cut
	FinishRefusal = "refusal" // the model declined to answer
)

// Cache statuses written into a Trace.
const (
	CacheHit    = "hit"
	CacheMiss   = "miss"
	CacheBypass = "bypass"
)

// PrimaryLang is the lower-case primary subtag of the scope's language:
// "en-US", "en_us" and " EN " are all "en"; "zh-Hans-CN" is "zh". Scopes
// with different regions share it, so it suits features (which language a
// ticket is in), never scope equality.
func (s Scope) PrimaryLang() string {
	tag := strings.TrimSpace(s.Lang)
	if i := strings.IndexAny(tag, "-_"); i >= 0 {
		tag = tag[:i]
	}
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(tag)
		}
	}
	return tag
}

// NormalizeLang is the language normalisation of scopes: surrounding space
// trimmed, ASCII letters lowercased, '_' turned into '-', so "en-US",
// "en_us", "EN-us" and " en-US " are one language ("en-us"). Space is
// trimmed because a tag read from a hand-written CSV or YAML file often
// carries it, and an answer must not count as built for another language
// because of it. A bare language and a regional one ("en" and "en-US") stay
// distinct: the answer text or the policy quoted may differ by region, and
// merging them would be a leak an audit could not see; keeping them apart
// only costs cache hit rate.
func NormalizeLang(s string) string {
	s = strings.TrimSpace(s)
	return string(AppendLang(make([]byte, 0, len(s)), s))
}

// AppendLang appends NormalizeLang(s) to dst without allocating more than
// dst's growth; for s without surrounding space it appends len(s) bytes.
func AppendLang(dst []byte, s string) []byte {
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		dst = append(dst, langByte(s[i]))
	}
	return dst
}

// LangEqual reports whether NormalizeLang(a) == NormalizeLang(b), without
// allocating.
func LangEqual(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if langByte(a[i]) != langByte(b[i]) {
			return false
		}
	}
	return true
}

// langByte normalises one byte of a language tag.
func langByte(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	case c == '_':
		return '-'
	}
	return c
}

// Request is one call into a stack. Layers copy it before changing it
// (see Clone); they never mutate the caller's value.
type Request struct {
	// TaskID identifies the request, like a request id. Simulated models
	// use it only to draw per-call faults and jitter; no model or router
	// reads a task's labels (difficulty, expected answer).
	TaskID string
	Text   string // the user's message: the last user turn of a conversation
	System string // system prompt
	// History holds a conversation's earlier turns, oldest first (user and
	// assistant only; the system prompt is System and the last user turn is
	// Text). It is nil for a single-turn request. Backends send it with its
	// roles, and the cache key covers it: the same last message after
	// another history is another question.
	History []Message
	User    string // end user, inside Scope.Tenant
	Scope   Scope

	Model string // backend name; empty means the stack's default, set by a router
	Mode  string // output mode: ModeFull, ModeShort or ModeOverShort
	// Instruction is what a backend appends to the system prompt for a
	// shortened Mode; empty means DefaultInstruction(Mode). See
	// ModeInstruction.
	Instruction string
	MaxTokens   int     // output budget; 0 means the backend default
	Temperature float64 // sampling temperature, part of the cache key

	Contract     []byte // JSON Schema sent as response_format; nil for free text
	ContractHash string // hash of Contract, part of the cache key

	Seed    int64 // per-repeat seed for simulated backends; real backends ignore it
	Attempt int   // 0 for the first call, counted up by retries and re-asks
	// Caller names who sends the call: the arm of an experiment or of
	// crab serve. Two arms asking the same question are two calls to a
	// backend, so a simulated model draws each its own varying answer and
	// logs its load by caller. No cache key or answer depends on it.
	Caller string

	// Params are further chat completion parameters a client sent (stop,
	// top_p, logit_bias, ...), sorted by name, each value the JSON it
	// came as. An OpenAI-compatible backend sends them as top-level
	// fields of its request; simulated backends ignore them. The cache
	// key covers them with the sampling field.
	Params []Param
}

// Param is one chat completion parameter passed through to a backend.
type Param struct {
	Name  string
	Value []byte // JSON
}

// Roles of a conversation turn.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // RoleUser or RoleAssistant inside Request.History
	Content string `json:"content"`
}

// Default instructions for the shortened output modes: generic wording
// that asks for the shorter answer a contract allows (the output is not
// trimmed afterwards). An experiment may set its own per arm.
const (
	DefaultInstructionShort     = "Answer as briefly as the output format allows: keep every required field, write the shortest text each field allows, give the fewest list items it requires and write null wherever null is allowed."
	DefaultInstructionOverShort = "Answer with only the fields that carry your decision; leave out quotations, lists and explanations."
)

// DefaultInstruction is the instruction appended to the system prompt for
// mode when a request sets none: "" for the full mode.
func DefaultInstruction(mode string) string {
	switch mode {
	case ModeShort:
		return DefaultInstructionShort
	case ModeOverShort:
		return DefaultInstructionOverShort
	}
	return ""
}

// ModeInstruction is the instruction a backend appends to the system
// prompt for the request's output mode: Instruction when set, else
// DefaultInstruction(Mode); "" in the full mode.
func (r *Request) ModeInstruction() string {
	if r.Mode == "" || r.Mode == ModeFull {
		return ""
	}
	if r.Instruction != "" {
		return r.Instruction
	}
	return DefaultInstruction(r.Mode)
}

// Clone returns a shallow copy that a layer may change freely.
// Contract bytes and History are shared: no layer writes to them.
func (r *Request) Clone() *Request {
	c := *r
	return &c
}

// Usage is what one or more model attempts consumed.
type Usage struct {
	TokensIn  int     `json:"tokens_in"`
	TokensOut int     `json:"tokens_out"`
	Cost      float64 `json:"cost"`
	// Unpriced is set when an attempt called a model whose price nobody
	// declared: Cost then holds only what the priced attempts cost, and
	// the request's cost is unknown, not that sum.
	Unpriced bool `json:"unpriced,omitempty"`
}

// Add accumulates another attempt's usage.
func (u *Usage) Add(o Usage) {
	u.TokensIn += o.TokensIn
	u.TokensOut += o.TokensOut
	u.Cost += o.Cost
	u.Unpriced = u.Unpriced || o.Unpriced
}

// Trace is what each layer records about one request: where its time and
// money went and what each layer decided. A layer only writes its own
// fields, and never reads or resets another layer's to decide anything: it
// decides from its own call's result (a cache checks an answer against
// the contract itself before storing it), so the order of the layers is
// a choice of the stack, not a rule hidden in them. The runner reads the
// whole trace once the stack has answered. The one copy across layers is
// a cache hit: it serves a stored answer together with the contract
// result recorded with that answer.
type Trace struct {
	// Cache layer.
	Cache         string        // CacheHit, CacheMiss or CacheBypass; empty without a cache
	CacheDur      time.Duration // key building and lookup (and store, on a miss)
	Leak          string        // on a hit: leak kind when the entry was built for another scope
	ScopeMismatch bool          // a hit refused because its stored scope differs
	// Similarity is, on a hit of a semantic cache, the cosine similarity
	// between the request's text and the stored one's (1 for the same
	// text); 0 otherwise.
	Similarity float64
	// EmbedDur is a semantic cache's embedding call, outside CacheDur.
	EmbedDur time.Duration
	// Origin is, on a hit of a semantic cache, the TaskID of the request
	// whose answer was stored and served: a runner that knows both tasks
	// can tell whether the answer was right for this one.
	Origin string

	// Router layer.
	Routed     bool
	RouteScore float64
	// RouteFallback: the scorer failed (a scoring service did not answer
	// in time or answered nonsense) and RouteScore is its fallback score.
	RouteFallback bool
	RouteModel    string
	RouteDur      time.Duration
	Escalated     bool // a cascade or contract policy moved the request to a larger model
	// EscalationCost is the part of Usage.Cost spent after a cascade
	// escalated the request (the larger model's call); 0 otherwise.
	EscalationCost float64

	// Model attempts.
	Attempts int           // model calls made for this request, retries and re-asks included
	ModelDur time.Duration // time spent inside model calls, all attempts
	TTFT     time.Duration // first content byte of the final attempt, from the start of that attempt
	// FirstByteAt is the wall-clock time the final attempt's first content
	// byte arrived (a cache hit sets it to the time the hit was served).
	FirstByteAt time.Time

	// Contract layer.
	Validated   bool          // the contract layer ran
	ContractOK  bool          // the final answer met the contract
	Violations  []string      // "pointer: rule" for each violation of the final answer
	ValidateDur time.Duration // all validations of this request
}

// Response is a model answer plus its provenance and trace.
//
// A Model that fails may return a non-nil Response together with the error:
// it then carries the usage and trace of the attempts made, so that a failed
// request still counts what it cost.
type Response struct {
	Content      string // the answer text (JSON when a contract was sent)
	Model        string // backend that produced Content
	FinishReason string
	Usage        Usage
	Scope        Scope // the scope the answer was built for (provenance)
	// Confidence is how sure the backend is of its answer, in (0,1]; 0
	// means unknown (the backend reports none). A cascade router escalates
	// an answer whose confidence is below its threshold. It is reported
	// beside the answer, never inside Content, so the contract is unchanged.
	Confidence float64
	Trace      Trace
}

// Clone returns a copy whose Trace can be changed without touching the
// original, e.g. when a cached response is served again.
func (r *Response) Clone() *Response {
	c := *r
	c.Trace.Violations = append([]string(nil), r.Trace.Violations...)
	return &c
}

// Model answers a request. Implementations honour ctx cancellation.
type Model interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// ModelFunc adapts a function to Model.
type ModelFunc func(ctx context.Context, req *Request) (*Response, error)

// Complete calls f.
func (f ModelFunc) Complete(ctx context.Context, req *Request) (*Response, error) {
	return f(ctx, req)
}

var _ Model = ModelFunc(nil)

// Middleware wraps a Model with one concern (cache, router, contract, ...).
type Middleware func(next Model) Model

// Chain wraps m with mws; the first middleware listed runs outermost.
func Chain(m Model, mws ...Middleware) Model {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			m = mws[i](m)
		}
	}
	return m
}

// Errors a backend or layer returns. The runner maps them to outcomes.
var (
	ErrUnknownModel = errors.New("model: unknown model")
	ErrBackend      = errors.New("model: backend error")
	ErrMalformed    = errors.New("model: malformed answer")
)
