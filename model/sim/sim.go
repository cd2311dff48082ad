// Package sim provides crab's simulated models: deterministic stand-ins for
// a small and a large LLM that answer any output contract, need no
// network, and behave like real backends where it matters to an
// experiment — latency grows with input and output tokens, a shortened
// answer is cheaper and faster, the small model is fast but misreads hard
// requests, and every fault a contract or retry policy must survive can be
// injected at a rate.
//
// An answer is built from the request's contract (a JSON Schema): every
// required field, enum values, types, lengths, list sizes and number
// ranges come from it, free text quotes the request. Whether an answer is
// right comes from an Oracle (the expected values of each task, the
// simulation's ground truth) and an ErrorModel over features anyone can
// observe in the request (length, asks, negation, numbers and
// identifiers, script and language): a model that misreads a request
// writes other valid values in place of the expected ones. Nothing in the
// package knows a domain or a vocabulary.
//
// The output modes follow from the contract too: short writes the
// smallest valid free text, the fewest list items the contract requires
// and null wherever null is allowed; over_short also leaves out one
// required field, breaking the contract on purpose.
//
// Every answer is built for the request's scope (tenant, permission,
// language, document version) and a full answer's free text names it, so
// an answer served to another scope is detectable both in its provenance
// and in its text.
//
// Every random choice of a call (jitter, slow tail, each fault) is drawn
// from a generator seeded by hashing the model's seed and name with the
// request's seed, attempt, text, scope and mode. Calls therefore give the
// same result in any order and under any concurrency, and a retry (a higher
// Attempt) draws anew.
//
// Two settings make a model behave like a deployed one: Vary makes a share
// of tasks answer differently from call to call (drawn per call from the
// call's identity, so still reproducible), and Capacity limits how many
// calls run at once and slows them with load, shared by every caller of
// the Model, so that latency depends on the load the callers offer (a
// call's wait then depends on when it and the others arrive, the one
// draw that is not the call's own). A CallLog records each call's arrival, caller, tokens and queue wait.
package sim

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/crab-testbed/crab/internal/splitmix"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/crab-testbed/crab/model"
)

// Model is one simulated model. It is safe for concurrent use; New
// prepares everything a call needs, so a call at time-scale 0 allocates
// little more than its answer.
type Model struct {
	cfg   Config
	sleep func(ctx context.Context, d time.Duration) error // real waiting, scaled
	now   func() time.Time
	// sized remembers the size of the last contract this model billed, so
	// that the contract every call of an experiment repeats is scanned once.
	sized contractSizer
	// contracts remembers the last contract compiled for answers.
	contracts contractCache
	// pool is the capacity every caller shares; nil without one.
	pool *pool
}

var _ model.Model = (*Model)(nil)

// New validates cfg and fills its defaults (Name from Kind, the kind's
// error model, TailFactor 1, MaxTokens 1024). Errors wrap ErrConfig and
// name the field at fault.
func New(cfg Config) (*Model, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, sleep: model.Sleep, now: time.Now}
	if cfg.Capacity.Enabled() {
		m.pool = &pool{s: NewScheduler(cfg.Capacity)}
	}
	return m, nil
}

// Name is the backend name the model reports in Response.Model.
func (m *Model) Name() string { return m.cfg.Name }

// Config returns the model's configuration with defaults filled in, e.g.
// for the run manifest.
func (m *Model) Config() Config { return m.cfg }

// Random draws of one call, always taken in this order so that changing
// one rate never shifts another fault's draw.
const (
	drawError = iota
	drawHang
	drawRefusal
	drawMalformed
	drawMissing
	drawMissingWhich
	drawWrong
	drawWrongWhich
	drawEmpty
	drawJitter
	drawTail
	drawConfidence
	numDraws
)

// Complete answers req after the simulated latency (scaled by TimeScale).
//
// The trace holds one attempt and reports wall-clock time, like every other
// backend: Trace.ModelDur is the simulated latency times TimeScale, i.e. the
// time the call waits (zero at time-scale 0, where a run measures crab's own
// overhead; the real time waited when the context ends the call early),
// Trace.TTFT the scaled time to first content and Trace.FirstByteAt the
// wall-clock time that content arrived. With Config.NoSleep nothing is
// slept and ModelDur and TTFT are the nominal durations (time-scale 1).
//
// A simulated server error returns a response carrying the trace (no
// usage: the call is not billed) and an error wrapping model.ErrBackend. A
// hang or a cancellation returns a response carrying the input tokens and
// their cost together with ctx.Err(). A refusal, a truncated answer
// (model.FinishLength) and the content faults are returned without error:
// judging them is the contract layer's job.
func (m *Model) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := m.Plan(req)
	if err != nil {
		return nil, err
	}
	m.Admit(req, &p, m.now())
	resp := &model.Response{Model: p.Model, Scope: req.Scope}
	resp.Trace.Attempts = 1
	switch p.Fault {
	case FaultOverload:
		return resp, fmt.Errorf("%w: %s: simulated HTTP 503: queue full", model.ErrBackend, p.Model)
	case FaultError:
		start := m.now()
		resp.Trace.ModelDur = p.Total
		if err := m.wait(ctx, resp.Trace.ModelDur); err != nil {
			resp.Trace.ModelDur = m.now().Sub(start)
			return resp, err
		}
		return resp, fmt.Errorf("%w: %s: simulated HTTP 500", model.ErrBackend, p.Model)
	case FaultHang:
		start := m.now()
		<-ctx.Done()
		resp.Usage = p.InputUsage
		resp.Trace.ModelDur = m.now().Sub(start)
		return resp, ctx.Err()
	}

	resp.Confidence = p.Confidence
	resp.Trace.TTFT = p.TTFT
	resp.Trace.ModelDur = p.Total
	start := m.now()
	if err := m.wait(ctx, resp.Trace.ModelDur); err != nil {
		resp.Trace.ModelDur = m.now().Sub(start)
		resp.Usage = p.InputUsage
		if resp.Trace.ModelDur < resp.Trace.TTFT {
			resp.Trace.TTFT = 0
		} else {
			resp.Trace.FirstByteAt = start.Add(resp.Trace.TTFT)
		}
		return resp, err
	}
	resp.Trace.FirstByteAt = start.Add(resp.Trace.TTFT)
	resp.Content = p.Content
	resp.FinishReason = p.FinishReason
	resp.Usage = p.Usage
	return resp, nil
}

// parseMode maps Request.Mode to a mode; empty means full.
func parseMode(s string) (int, bool) {
	switch s {
	case "", model.ModeFull:
		return modeFull, true
	case model.ModeShort:
		return modeShort, true
	case model.ModeOverShort:
		return modeOverShort, true
	}
	return 0, false
}

// wait sleeps d, already scaled by TimeScale; a zero d (time-scale 0)
// and Config.NoSleep return at once.
func (m *Model) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 || m.cfg.NoSleep {
		return nil
	}
	return m.sleep(ctx, d)
}

// scale is the factor between nominal and reported durations: TimeScale,
// or 1 with NoSleep (nominal durations reported, nothing slept).
func (m *Model) scale() float64 {
	if m.cfg.NoSleep {
		return 1
	}
	return m.cfg.TimeScale
}

func scaleDur(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * f)
}

// rngFor seeds the call's generator from everything that identifies the
// call, length-prefixed so that no two different calls share an input.
func (m *Model) rngFor(req *model.Request) splitmix.Rand {
	var d xxhash.Digest
	d.Reset()
	hashU64(&d, uint64(m.cfg.Seed))
	hashU64(&d, uint64(req.Seed))
	hashU64(&d, uint64(req.Attempt))
	hashStr(&d, m.cfg.Name)
	// The request id makes each call its own event: two identical questions
	// do not share their faults and jitter. The id is no label; the answer
	// itself follows from the text alone. The output mode is left out on
	// purpose: arms that differ only in mode meet the same faults and jitter
	// on the same request (common random numbers), so a paired comparison
	// shows the effect of the mode, not a different draw of luck.
	hashStr(&d, req.TaskID)
	hashStr(&d, req.Text)
	hashScope(&d, &req.Scope)
	return *splitmix.New(d.Sum64())
}

// truthRNG seeds the draws that decide whether the model misreads the
// request and which expected fields it then gets wrong, from the seeds and
// the request text only. They leave out the model's name and the attempt:
// every model meets the same draw for the same request (so the large model
// fails only where the small one would fail too, at its lower
// probability), and a retry or a re-ask does not read the request afresh.
// They leave out the task id too: a model answers the same question the
// same way every time it is asked, so a cache hit serves the answer the
// model would have given.
func (m *Model) truthRNG(req *model.Request) splitmix.Rand {
	var d xxhash.Digest
	d.Reset()
	hashU64(&d, uint64(m.cfg.Seed))
	hashU64(&d, uint64(req.Seed))
	hashStr(&d, req.Text)
	return *splitmix.New(d.Sum64())
}

func hashU64(d *xxhash.Digest, x uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], x)
	d.Write(b[:])
}

func hashStr(d *xxhash.Digest, s string) {
	hashU64(d, uint64(len(s)))
	d.WriteString(s)
}
