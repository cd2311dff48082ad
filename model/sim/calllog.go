package sim

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"sort"
	"sync"
	"time"
)

// Call is one call a simulated model received, as its call log keeps it:
// when it arrived, who sent it, what it weighed and how long it waited
// for a slot (see Capacity).
type Call struct {
	At      time.Time `json:"at"`
	Model   string    `json:"model"`
	Caller  string    `json:"caller"` // the request's Caller: the arm
	TaskID  string    `json:"task_id"`
	Attempt int       `json:"attempt"`
	// TokensIn and TokensOut are the plan's: what the call bills when it
	// is answered (TokensOut 0 for a server error, hang or refusal by a
	// full queue).
	TokensIn  int `json:"tokens_in"`
	TokensOut int `json:"tokens_out"`
	// Wait is the time spent queued for a slot, TTFT and Total the call's
	// time to first content and to its end, the wait included, as waited
	// (scaled by the time scale).
	Wait  time.Duration `json:"wait_ns"`
	TTFT  time.Duration `json:"ttft_ns"`
	Total time.Duration `json:"total_ns"`
	// Running is the sequences decoding when it started, itself
	// included; 0 without a capacity model.
	Running int    `json:"running"`
	Fault   string `json:"fault,omitempty"` // see Plan.Fault
}

// CallLog records the calls of the simulated models it is given to (see
// Config.CallLog), in memory or as JSON lines on a writer. It is safe for
// concurrent use; its zero value keeps calls in memory.
type CallLog struct {
	mu    sync.Mutex
	calls []Call
	w     *bufio.Writer
	enc   *json.Encoder
	err   error
	close []func() error
}

// OnClose has Close call f after flushing (e.g. to close the log's file).
func (l *CallLog) OnClose(f func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.close = append(l.close, f)
}

// NewCallLogWriter returns a log that writes each call as one line of
// JSON to w and keeps none in memory. Close flushes it.
func NewCallLogWriter(w io.Writer) *CallLog {
	bw := bufio.NewWriter(w)
	return &CallLog{w: bw, enc: json.NewEncoder(bw)}
}

// Add records c.
func (l *CallLog) Add(c Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.enc == nil {
		l.calls = append(l.calls, c)
		return
	}
	if err := l.enc.Encode(c); err != nil && l.err == nil {
		l.err = err
	}
}

// Calls returns the calls kept in memory, in the order they were added.
func (l *CallLog) Calls() []Call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Call(nil), l.calls...)
}

// Close flushes a writer's log and returns its first write error.
func (l *CallLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil {
		if err := l.w.Flush(); err != nil && l.err == nil {
			l.err = err
		}
	}
	for _, f := range l.close {
		if err := f(); err != nil && l.err == nil {
			l.err = err
		}
	}
	l.close = nil
	return l.err
}

// Load is the load one caller offered a model over a call log.
type Load struct {
	Caller string
	Model  string
	Calls  int
	// Span is from the caller's first call to its last.
	Span time.Duration
	// CallsPerSec is (Calls − 1) / Span, the arrival rate over the span;
	// TokensOutPerSec is the output tokens of those calls at that rate
	// (mean output tokens per call times CallsPerSec). Both are NaN with
	// fewer than two calls or a zero span.
	CallsPerSec     float64
	TokensOutPerSec float64
	// MeanWait is the mean time its calls queued for a slot.
	MeanWait time.Duration
}

// OfferedLoad is the load each caller put on each model in calls, sorted
// by model then caller.
func OfferedLoad(calls []Call) []Load {
	type key struct{ model, caller string }
	type acc struct {
		n           int
		first, last time.Time
		out         int
		wait        time.Duration
	}
	by := map[key]*acc{}
	for _, c := range calls {
		k := key{c.Model, c.Caller}
		a := by[k]
		if a == nil {
			a = &acc{first: c.At, last: c.At}
			by[k] = a
		}
		a.n++
		a.out += c.TokensOut
		a.wait += c.Wait
		if c.At.Before(a.first) {
			a.first = c.At
		}
		if c.At.After(a.last) {
			a.last = c.At
		}
	}
	out := make([]Load, 0, len(by))
	for k, a := range by {
		l := Load{Caller: k.caller, Model: k.model, Calls: a.n, Span: a.last.Sub(a.first),
			CallsPerSec: math.NaN(), TokensOutPerSec: math.NaN(), MeanWait: a.wait / time.Duration(a.n)}
		if a.n > 1 && l.Span > 0 {
			l.CallsPerSec = float64(a.n-1) / l.Span.Seconds()
			l.TokensOutPerSec = float64(a.out) / float64(a.n) * l.CallsPerSec
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Model != out[j].Model {
			return out[i].Model < out[j].Model
		}
		return out[i].Caller < out[j].Caller
	})
	return out
}
