// Package simserver serves crab's simulated models over the OpenAI chat
// completion protocol (POST /v1/chat/completions, streaming and not, and
// GET /v1/models), so that the real-model path — the openai backend, crab
// serve, any OpenAI client — can be exercised with nothing installed.
//
// Each answer is the simulated model's own (sim.Model.Plan) and is paced as
// a real server paces it: a streamed answer sends its role chunk at once,
// its first content after the simulated prefill time, then the remaining
// tokens evenly at the decode rate until the simulated total time, then the
// finish reason, the usage chunk (when stream_options.include_usage asks
// for it) and [DONE]. A non-streamed answer arrives whole after the total
// time. The simulated model's faults (server error, hang, refusal and the
// content faults) behave as in process; Faults adds what only a network
// does: HTTP 429, HTTP 503, a connection closed mid-answer and an answer
// that stalls.
//
// # Scope and call identity
//
// The answer is built for the scope given by the request headers
// X-Crab-Tenant, X-Crab-Permission, X-Crab-Lang and X-Crab-Doc-Version (or,
// without them, the metadata keys tenant, permission, lang and
// doc_version). The random draws of a call (jitter, slow tail, faults) are
// seeded from the request id (X-Crab-Request-Id), the attempt
// (X-Crab-Attempt), the body's seed, the text and the scope, exactly as an
// in-process simulated model seeds them, so an experiment run through
// crab's openai backend meets the same answers and faults as one run in
// process. A request without X-Crab-Request-Id is numbered by arrival, so
// that a client's retry draws anew. The output mode comes from X-Crab-Mode
// or from the mode instruction the openai backend appends to the system
// prompt (removed before the prompt is billed).
//
// # Varying answers and capacity
//
// A model whose answers vary (sim.Vary) draws each call of a varying task
// from the call's identity: the request id, the attempt, the body's seed,
// the caller (X-Crab-Caller, the arm, when the client sends it), the text
// and the scope, as in process. Calls the server cannot tell apart by
// these (two arms that send no caller, a client that repeats itself) are
// numbered in order of arrival, each number its own draw, so every call
// still varies on its own. A model with capacity (sim.Capacity) admits
// each call at its arrival into one pool per model for the whole process:
// the queue wait delays its first content and its end, and a call refused
// by a full queue is answered HTTP 503 at once. Each model's call log, if
// it has one, gets every call that reaches it.
package simserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/openai"
	"github.com/crab-testbed/crab/model/sim"
)

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("simserver: invalid config")

// Config configures a Server.
type Config struct {
	// Models are served under their names (sim.Model.Name). Their own
	// configuration sets latency, time scale, prices, seed and faults.
	Models []*sim.Model
	// Faults are the network faults.
	Faults Faults
	// Seed seeds the network fault draws.
	Seed int64
	// MaxBodyBytes bounds a request body; 0 means 4 MiB.
	MaxBodyBytes int64
	// Now is the server's clock for pacing; nil means time.Now.
	Now func() time.Time
}

// Server is an http.Handler serving the simulated models. It is safe for
// concurrent use.
type Server struct {
	cfg     Config
	models  map[string]*sim.Model
	names   []string
	now     func() time.Time
	created int64
	seq     atomic.Uint64
	// dec reads request bodies, remembering the schema they repeat.
	dec openaiwire.RequestDecoder
	st  stats
	// wait waits until a moment of the plan; false when ctx ended first.
	// Tests replace it to step a fake clock instead of sleeping.
	wait func(ctx context.Context, until time.Time) bool
	// first is the time of the first call (Unix ns, 0 before it): pauses
	// and outages are timed from it.
	first atomic.Int64
	// nonces numbers the calls of varying tasks that share an identity.
	nonces nonceCounter
}

// HeaderCaller names who sends a call (the arm of an experiment): calls of
// two callers are two calls, each with its own draw of a varying answer,
// and the call log keeps it.
const HeaderCaller = "X-Crab-Caller"

// nonceCounter counts calls by identity. Only calls of varying tasks are
// counted, so it holds one entry per distinct such call.
type nonceCounter struct {
	mu sync.Mutex
	n  map[uint64]uint64
}

// next is the number of earlier calls with identity key k.
func (c *nonceCounter) next(k uint64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[uint64]uint64{}
	}
	n := c.n[k]
	c.n[k] = n + 1
	return n
}

// identity hashes what tells one call from another for the varying draw.
func identity(m string, r *model.Request) uint64 {
	var d xxhash.Digest
	d.Reset()
	for _, s := range []string{m, r.TaskID, r.Caller, r.Text, r.Scope.Tenant, r.Scope.Permission, r.Scope.Lang, r.Scope.DocVersion,
		strconv.FormatInt(r.Seed, 10), strconv.Itoa(r.Attempt)} {
		d.WriteString(strconv.Itoa(len(s)))
		d.WriteString(":")
		d.WriteString(s)
	}
	return d.Sum64()
}

var _ http.Handler = (*Server)(nil)

// New validates cfg and returns the server.
func New(cfg Config) (*Server, error) {
	if len(cfg.Models) == 0 {
		return nil, fmt.Errorf("%w: no models", ErrConfig)
	}
	s := &Server{cfg: cfg, models: make(map[string]*sim.Model, len(cfg.Models)), now: cfg.Now}
	for _, m := range cfg.Models {
		if m == nil {
			return nil, fmt.Errorf("%w: nil model", ErrConfig)
		}
		if _, dup := s.models[m.Name()]; dup {
			return nil, fmt.Errorf("%w: two models named %q", ErrConfig, m.Name())
		}
		s.models[m.Name()] = m
		s.names = append(s.names, m.Name())
	}
	sort.Strings(s.names)
	for _, f := range []struct {
		name string
		v    float64
	}{{"rate_limit", cfg.Faults.RateLimit}, {"server_error", cfg.Faults.ServerError}, {"disconnect", cfg.Faults.Disconnect}, {"stall", cfg.Faults.Stall}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return nil, fmt.Errorf("%w: fault %s: %v is outside [0, 1]", ErrConfig, f.name, f.v)
		}
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("%w: max body bytes %d is negative", ErrConfig, cfg.MaxBodyBytes)
	}
	if s.cfg.MaxBodyBytes == 0 {
		s.cfg.MaxBodyBytes = 4 << 20
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.created = s.now().Unix()
	s.wait = s.timerWait
	return s, nil
}

// Names lists the served models, sorted.
func (s *Server) Names() []string { return append([]string(nil), s.names...) }

// ServeHTTP routes /v1/chat/completions, /v1/models and /healthz.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			openaiwire.WriteError(w, http.StatusMethodNotAllowed, openaiwire.ErrTypeInvalidRequest, "method_not_allowed", "", "use POST")
			return
		}
		s.complete(w, r)
	case "/v1/embeddings", "/embeddings":
		s.serveEmbeddings(w, r)
	case "/v1/models", "/models":
		openaiwire.WriteModels(w, s.names, s.created)
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	default:
		openaiwire.WriteError(w, http.StatusNotFound, openaiwire.ErrTypeNotFound, "not_found", "", "no such endpoint: "+r.URL.Path)
	}
}

// call is one decoded chat completion call.
type call struct {
	m            *sim.Model
	req          *model.Request
	stream       bool
	includeUsage bool
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	s.st.requests.Add(1)
	c, status, code, param, err := s.decode(r)
	if err != nil {
		s.st.rejected.Add(1)
		typ := openaiwire.ErrTypeInvalidRequest
		if status == http.StatusNotFound {
			typ = openaiwire.ErrTypeNotFound
		}
		openaiwire.WriteError(w, status, typ, code, param, err.Error())
		return
	}
	var nonce uint64
	if c.m.Varies(c.req) {
		nonce = s.nonces.next(identity(c.m.Name(), c.req))
	}
	p, err := c.m.PlanCall(c.req, nonce)
	if err != nil {
		s.st.rejected.Add(1)
		code, param := "invalid_mode", ""
		if errors.Is(err, sim.ErrContract) {
			code, param = "invalid_response_format", "response_format"
		}
		openaiwire.WriteError(w, http.StatusBadRequest, openaiwire.ErrTypeInvalidRequest, code, param, err.Error())
		return
	}
	if s.inOutage() {
		s.st.serverErrors.Add(1)
		openaiwire.WriteError(w, http.StatusServiceUnavailable, openaiwire.ErrTypeServer, "overloaded", "", "simulated outage: the server is down")
		return
	}
	if !s.pauseWait(r.Context()) {
		return
	}
	nf := s.netFault(c)
	switch nf {
	case faultRateLimit:
		s.st.rateLimited.Add(1)
		w.Header().Set("Retry-After", "1")
		openaiwire.WriteError(w, http.StatusTooManyRequests, openaiwire.ErrTypeRateLimit, "rate_limit_exceeded", "", "simulated rate limit: slow down")
		return
	case faultServerError:
		s.st.serverErrors.Add(1)
		openaiwire.WriteError(w, http.StatusServiceUnavailable, openaiwire.ErrTypeServer, "overloaded", "", "simulated overload: the server is busy")
		return
	}
	c.m.Admit(c.req, &p, start)
	ctx := r.Context()
	switch p.Fault {
	case sim.FaultOverload:
		s.st.overloaded.Add(1)
		openaiwire.WriteError(w, http.StatusServiceUnavailable, openaiwire.ErrTypeServer, "overloaded", "", "simulated overload: the queue of model "+p.Model+" is full")
		return
	case sim.FaultError:
		s.st.modelErrors.Add(1)
		if !s.sleepUntil(ctx, start.Add(p.Total), p.Sleep) {
			return
		}
		openaiwire.WriteError(w, http.StatusInternalServerError, openaiwire.ErrTypeServer, "simulated_error", "", "simulated server error in model "+p.Model)
		return
	case sim.FaultHang:
		s.st.hangs.Add(1)
		<-ctx.Done()
		return
	}
	if p.Confidence > 0 {
		w.Header().Set(openai.HeaderConfidence, strconv.FormatFloat(p.Confidence, 'g', -1, 64))
	}
	switch nf {
	case faultDisconnect:
		s.st.disconnects.Add(1)
	case faultStall:
		s.st.stalls.Add(1)
	}
	id := "chatcmpl-sim-" + strconv.FormatUint(s.seq.Add(1), 10)
	if c.stream {
		s.st.streams.Add(1)
		s.stream(ctx, w, c, &p, nf, id, start)
		return
	}
	s.whole(ctx, w, &p, nf, id, start)
}

// decode reads the request into a call, or says what is wrong with it:
// HTTP status, error code and parameter.
func (s *Server) decode(r *http.Request) (c call, status int, code, param string, err error) {
	creq, err := s.dec.ReadRequest(r, s.cfg.MaxBodyBytes)
	if err != nil {
		if errors.Is(err, openaiwire.ErrTooLarge) {
			return c, http.StatusRequestEntityTooLarge, "request_too_large", "", err
		}
		return c, http.StatusBadRequest, "invalid_request", "", err
	}
	m, ok := s.models[creq.Model]
	if !ok {
		return c, http.StatusNotFound, "model_not_found", "model", fmt.Errorf("model %q does not exist (served: %s)", creq.Model, strings.Join(s.names, ", "))
	}
	system, history, text, err := openaiwire.Prompt(creq.Messages)
	if err != nil {
		return c, http.StatusBadRequest, "invalid_request", "messages", err
	}
	system, mode := openai.SplitMode(system)
	h := r.Header
	if v := h.Get(openai.HeaderMode); v != "" {
		switch v {
		case model.ModeFull, model.ModeShort, model.ModeOverShort:
			mode = v
		default:
			return c, http.StatusBadRequest, "invalid_mode", openai.HeaderMode, fmt.Errorf("%s %q: want full, short or over_short", openai.HeaderMode, v)
		}
	}
	attempt := 0
	if v := h.Get(openai.HeaderAttempt); v != "" {
		if attempt, err = strconv.Atoi(v); err != nil || attempt < 0 {
			return c, http.StatusBadRequest, "invalid_attempt", openai.HeaderAttempt, fmt.Errorf("%s %q: want a non-negative integer", openai.HeaderAttempt, v)
		}
	}
	id := h.Get(openai.HeaderRequestID)
	if id == "" {
		id = "arrival-" + strconv.FormatUint(s.seq.Add(1), 10)
	}
	scope := func(header, key string) string {
		if v := h.Get(header); v != "" {
			return v
		}
		return creq.Metadata[key]
	}
	req := &model.Request{
		TaskID: id, Text: text, System: system, History: history, User: creq.User, Caller: h.Get(HeaderCaller),
		Scope: model.Scope{
			Tenant: scope(openai.HeaderTenant, "tenant"), Permission: scope(openai.HeaderPermission, "permission"),
			Lang: scope(openai.HeaderLang, "lang"), DocVersion: scope(openai.HeaderDocVersion, "doc_version"),
		},
		Mode: mode, MaxTokens: openaiwire.MaxTokens(creq), Temperature: float64(creq.Temperature),
		Contract: openaiwire.Schema(creq), Attempt: attempt,
	}
	if creq.Seed != nil {
		req.Seed = int64(*creq.Seed)
	}
	c = call{m: m, req: req, stream: creq.Stream}
	c.includeUsage = creq.StreamOptions != nil && creq.StreamOptions.IncludeUsage
	return c, 0, "", "", nil
}

// stream sends the answer as server-sent events, paced by the plan.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, c call, p *sim.Plan, nf int, id string, start time.Time) {
	st := openaiwire.NewStream(w, id, s.created, p.Model)
	if st.Role() != nil {
		return
	}
	pieces := Pieces(p.Content)
	n := len(pieces)
	cut := n
	if nf == faultDisconnect || nf == faultStall {
		cut = n / 2
	}
	decode := p.Total - p.TTFT
	due := func(i int) time.Time {
		return start.Add(p.TTFT + time.Duration(int64(decode)*int64(i)/int64(max(n, 1))))
	}
	refusal := p.FinishReason == model.FinishRefusal
	var chunk strings.Builder
	for i := 0; i < cut; {
		if !s.sleepUntil(ctx, due(i), p.Sleep) {
			return
		}
		now := s.now()
		j := i + 1
		for j < cut && !due(j).After(now) {
			j++
		}
		chunk.Reset()
		for _, piece := range pieces[i:j] {
			chunk.WriteString(piece)
		}
		if st.Content(chunk.String(), refusal) != nil {
			return
		}
		i = j
	}
	switch nf {
	case faultDisconnect:
		panic(http.ErrAbortHandler) // net/http closes the connection without ending the stream
	case faultStall:
		<-ctx.Done()
		return
	}
	if !s.sleepUntil(ctx, start.Add(p.Total), p.Sleep) {
		return
	}
	finish := p.FinishReason
	if refusal {
		finish = model.FinishStop // a refusal arrives in the refusal field, not as a finish reason
	}
	if st.Finish(finish) != nil {
		return
	}
	if c.includeUsage && st.Usage(p.Usage.TokensIn, p.Usage.TokensOut) != nil {
		return
	}
	st.Done()
}

// whole sends a non-streamed answer after the plan's total time.
func (s *Server) whole(ctx context.Context, w http.ResponseWriter, p *sim.Plan, nf int, id string, start time.Time) {
	finish := p.FinishReason
	refusal := finish == model.FinishRefusal
	if refusal {
		finish = model.FinishStop
	}
	comp := openaiwire.Completion{
		ID: id, Model: p.Model, Created: s.created, Content: p.Content, Refusal: refusal,
		FinishReason: finish, TokensIn: p.Usage.TokensIn, TokensOut: p.Usage.TokensOut,
	}
	if nf == faultDisconnect || nf == faultStall {
		// Headers promise the whole body; half of it arrives half-way.
		rec := &bufferWriter{h: http.Header{}}
		openaiwire.WriteCompletion(rec, comp)
		body := rec.buf
		if !s.sleepUntil(ctx, start.Add(p.Total/2), p.Sleep) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body[:len(body)/2])
		http.NewResponseController(w).Flush()
		if nf == faultDisconnect {
			panic(http.ErrAbortHandler)
		}
		<-ctx.Done()
		return
	}
	if !s.sleepUntil(ctx, start.Add(p.Total), p.Sleep) {
		return
	}
	openaiwire.WriteCompletion(w, comp)
}

// sleepUntil waits until t; false when ctx ended first (the client left).
func (s *Server) sleepUntil(ctx context.Context, t time.Time, sleep bool) bool {
	if !sleep {
		return s.pauseWait(ctx)
	}
	return s.wait(ctx, t) && s.pauseWait(ctx)
}

// since is the time from the first call to now, starting the clock at the
// first call.
func (s *Server) since() time.Duration {
	now := s.now().UnixNano()
	s.first.CompareAndSwap(0, now)
	return time.Duration(now - s.first.Load())
}

// Pieces splits an answer into token-sized pieces the way the simulated
// models count tokens (sim.Tokens): four characters of alphabetic text, or
// one CJK character, per piece. Joined, the pieces are the answer.
func Pieces(s string) []string {
	out := make([]string, 0, len(s)/4+1)
	start, latin := 0, 0
	for i := 0; i < len(s); {
		r, sz := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, sz = utf8.DecodeRuneInString(s[i:])
		}
		if isWide(r) {
			if i > start {
				out = append(out, s[start:i])
			}
			out = append(out, s[i:i+sz])
			i += sz
			start, latin = i, 0
			continue
		}
		i += sz
		if latin++; latin == 4 {
			out = append(out, s[start:i])
			start, latin = i, 0
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// isWide reports a CJK character, one token each (the ranges sim.Tokens
// counts as CJK).
func isWide(r rune) bool {
	return r >= 0x2E80 && r <= 0x9FFF || r >= 0xF900 && r <= 0xFAFF || r >= 0xFF00 && r <= 0xFFEF
}

// bufferWriter collects a response body in memory.
type bufferWriter struct {
	h   http.Header
	buf []byte
}

func (b *bufferWriter) Header() http.Header         { return b.h }
func (b *bufferWriter) WriteHeader(int)             {}
func (b *bufferWriter) Write(p []byte) (int, error) { b.buf = append(b.buf, p...); return len(p), nil }

// Stats counts what a server did.
type Stats struct {
	Requests     uint64 `json:"requests"`      // chat completion requests received
	Rejected     uint64 `json:"rejected"`      // bad requests (4xx before any answer)
	Streams      uint64 `json:"streams"`       // answers streamed
	RateLimited  uint64 `json:"rate_limited"`  // HTTP 429 injected
	ServerErrors uint64 `json:"server_errors"` // HTTP 503 injected
	ModelErrors  uint64 `json:"model_errors"`  // simulated model errors (HTTP 500)
	Hangs        uint64 `json:"hangs"`         // simulated model hangs
	Disconnects  uint64 `json:"disconnects"`   // connections closed mid-answer
	Stalls       uint64 `json:"stalls"`        // answers stalled mid-way
	Overloaded   uint64 `json:"overloaded"`    // calls refused by a model's full queue (HTTP 503)
}

type stats struct {
	requests, rejected, streams, rateLimited, serverErrors, modelErrors, hangs, disconnects, stalls, overloaded atomic.Uint64
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	return Stats{
		Requests: s.st.requests.Load(), Rejected: s.st.rejected.Load(), Streams: s.st.streams.Load(),
		RateLimited: s.st.rateLimited.Load(), ServerErrors: s.st.serverErrors.Load(), ModelErrors: s.st.modelErrors.Load(),
		Hangs: s.st.hangs.Load(), Disconnects: s.st.disconnects.Load(), Stalls: s.st.stalls.Load(), Overloaded: s.st.overloaded.Load(),
	}
}

// String renders the counters as one line of JSON, for logs.
func (st Stats) String() string {
	b, _ := json.Marshal(st)
	return string(b)
}
