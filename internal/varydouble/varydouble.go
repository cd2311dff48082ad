// Package varydouble is an OpenAI-compatible test double whose answers
// vary from call to call, as a real model's do at temperature > 0 or on a
// batching engine: a seeded share of the tasks answer wrongly on a call
// with some probability, the rest answer the same way every time. crab's
// quality gate is checked against it end to end (tests and bench/vary).
//
// Tasks are multiple-choice: the right answer is {"answer":"A"} and a
// wrong one {"answer":"B"}, so the double needs no table of tasks: it
// recognises a task by its prompt (the last message's text).
package varydouble

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crab-testbed/crab/internal/openaiwire"
	"github.com/crab-testbed/crab/internal/splitmix"
)

// Config is the double's behaviour.
type Config struct {
	// Seed chooses which tasks vary and which a model gets wrong, and
	// every call's draw.
	Seed int64
	// VaryShare of the tasks answer wrongly on a call with probability
	// Flip (e.g. 0.1 and 0.5); the others answer as they always do.
	VaryShare, Flip float64
	// WrongShare of the steady tasks every model gets wrong on every
	// call: the baseline's failures.
	WrongShare float64
	// Models by the name requests carry.
	Models map[string]Model
}

// Model is one model the double serves.
type Model struct {
	// LatencyMs is the median time to answer; each call's is that times
	// exp(N(0, Jitter)).
	LatencyMs, Jitter float64
	// LossShare of the steady tasks the others answer right this model
	// always answers wrongly: a real loss of quality.
	LossShare float64
	// OutTokens is the answer's completion tokens (cost follows them).
	OutTokens int
}

// Server is the double's handler with its per-call state.
type Server struct {
	cfg   Config
	mu    sync.Mutex
	calls map[string]uint64 // calls so far per model and prompt
	names []string
}

// New returns the double for cfg.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, calls: map[string]uint64{}}
	for name := range cfg.Models {
		s.names = append(s.names, name)
	}
	slices.Sort(s.names)
	return s
}

// uniform is a draw in [0, 1) fixed by the seed and the labels.
func (s *Server) uniform(labels ...string) float64 {
	return splitmix.Labelled(s.cfg.Seed, strings.Join(labels, "\x00")).Float64()
}

// Right reports whether model answers prompt rightly on its n-th call
// (from 0).
func (s *Server) Right(model, prompt string, n uint64) bool {
	m := s.cfg.Models[model]
	if s.uniform("vary", prompt) < s.cfg.VaryShare {
		return s.uniform("call", model, prompt, fmt.Sprint(n)) >= s.cfg.Flip
	}
	if s.uniform("wrong", prompt) < s.cfg.WrongShare {
		return false
	}
	// A loss is drawn among the steady tasks the baseline gets right, so
	// that LossShare of those (about LossShare × (1 − VaryShare −
	// WrongShare) of all tasks) turn from pass to fail.
	return s.uniform("loss", prompt) >= m.LossShare
}

// ServeHTTP answers /v1/models and /v1/chat/completions.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/models") {
		openaiwire.WriteModels(w, s.names, 0)
		return
	}
	req, err := openaiwire.ReadRequest(r, 1<<20)
	if err != nil {
		openaiwire.WriteError(w, http.StatusBadRequest, openaiwire.ErrTypeInvalidRequest, "", "", err.Error())
		return
	}
	m, ok := s.cfg.Models[req.Model]
	if !ok {
		openaiwire.WriteError(w, http.StatusNotFound, openaiwire.ErrTypeNotFound, "model_not_found", "model", "unknown model "+req.Model)
		return
	}
	prompt := req.Messages[len(req.Messages)-1].Content
	s.mu.Lock()
	key := req.Model + "\x00" + prompt
	n := s.calls[key]
	s.calls[key] = n + 1
	s.mu.Unlock()
	answer := `{"answer":"B"}`
	if s.Right(req.Model, prompt, n) {
		answer = `{"answer":"A"}`
	}
	call := fmt.Sprint(n)
	z := normal(s.uniform("latency", req.Model, prompt, call), s.uniform("latency2", req.Model, prompt, call))
	select {
	case <-time.After(time.Duration(m.LatencyMs * math.Exp(m.Jitter*z) * float64(time.Millisecond))):
	case <-r.Context().Done():
		return
	}
	in, out := len(prompt)/4+1, max(m.OutTokens, 1)
	if !req.Stream {
		openaiwire.WriteCompletion(w, openaiwire.Completion{ID: "vary", Model: req.Model, Content: answer, FinishReason: "stop", TokensIn: in, TokensOut: out})
		return
	}
	st := openaiwire.NewStream(w, "vary", 0, req.Model)
	st.Role()
	st.Content(answer, false)
	st.Finish("stop")
	st.Usage(in, out)
	st.Done()
}

// normal is a standard normal draw from two uniforms (Box–Muller).
func normal(u1, u2 float64) float64 {
	return math.Sqrt(-2*math.Log(1-u1)) * math.Cos(2*math.Pi*u2)
}

// Contract is the JSON Schema of the double's answers.
const Contract = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"additionalProperties":false,"required":["answer"],"properties":{"answer":{"type":"string","enum":["A","B","C","D"]}}}`

// Tasks is n tasks in crab's JSONL task format whose right answer is A.
func Tasks(n int) string {
	var b strings.Builder
	for i := range n {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("q%04d", i), "text": fmt.Sprintf("Question %d: which answer is right?", i),
			"tenant": "t", "user": "u", "permission": "agent", "lang": "en", "doc_version": "v1", "group": "all",
			"expected": map[string]string{"answer": "A"}})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// Standard is the double of crab's end-to-end checks: 10% of tasks flip
// their answer with probability 0.5 on each call and 10% are always
// wrong; base answers in about 40 ms, fast in 20 ms with the same
// answers, and worse in 20 ms with 6 points of pass rate lost.
func Standard(seed int64) Config {
	return Config{Seed: seed, VaryShare: 0.1, Flip: 0.5, WrongShare: 0.1, Models: map[string]Model{
		"base":  {LatencyMs: 40, Jitter: 0.3, OutTokens: 20},
		"fast":  {LatencyMs: 20, Jitter: 0.3, OutTokens: 20},
		"worse": {LatencyMs: 20, Jitter: 0.3, OutTokens: 20, LossShare: 0.06 / 0.8},
	}}
}

// Experiment is a crab experiment against the Standard double at
// baseURL (".../v1"): the baseline on base with its identical twin
// (control: twin), faster on fast at a lower price, worse on worse; tasks
// and contract are file names beside it.
func Experiment(baseURL string, seed int64, repeats int) string {
	return fmt.Sprintf(`name: vary
tasks: tasks.jsonl
contract: answer.schema.json
seed: %d
repeats: %d
order: paired
arrival: {pattern: poisson, rate: 200}
concurrency: 256
timeout: 10s
retry: {max_attempts: 1}
control: twin
models:
  - {name: base, backend: openai, base_url: %[3]s, model: base, price_in_per_mtok: 2.5, price_out_per_mtok: 10}
  - {name: fast, backend: openai, base_url: %[3]s, model: fast, price_in_per_mtok: 1.5, price_out_per_mtok: 6}
  - {name: worse, backend: openai, base_url: %[3]s, model: worse, price_in_per_mtok: 1.5, price_out_per_mtok: 6}
arms:
  - {name: baseline, model: base}
  - {name: faster, model: fast}
  - {name: worse, model: worse}
`, seed, repeats, baseURL)
}
