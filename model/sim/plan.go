package sim

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/crab-testbed/crab/model"
)

// Faults of a whole call, reported in Plan.Fault. Content faults (refusal,
// malformed JSON, missing field, wrong enum, empty evidence, truncation)
// are already in Plan.Content and Plan.FinishReason.
const (
	// FaultError: the call fails after Plan.Total with a server error
	// (model.ErrBackend in process, HTTP 500 from crab sim-server).
	FaultError = "error"
	// FaultHang: the call never answers; only the caller's deadline or
	// cancellation ends it.
	FaultHang = "hang"
	// FaultOverload: the model's queue is full (Capacity.MaxQueue); the
	// call fails at once with a server error (HTTP 503 from crab
	// sim-server). Set by Admit, never by Plan.
	FaultOverload = "overload"
)

// Plan is what one call of a simulated model does, decided before any
// waiting: Complete waits it out in process, and crab sim-server paces it
// over HTTP (first content after TTFT, then the rest of the tokens evenly
// until Total), so that both give the same answer with the same timing.
type Plan struct {
	Model        string  // the model's name
	Content      string  // the answer; empty for FaultError and FaultHang
	FinishReason string  // model.FinishStop, FinishLength or FinishRefusal
	Confidence   float64 // see model.Response.Confidence; 0 for a refusal
	// Usage is billed when the answer is delivered.
	Usage model.Usage
	// InputUsage (input tokens only) is billed when the call is cut short
	// by a hang or a cancellation.
	InputUsage model.Usage
	// TTFT is the time from the start of the call to its first content,
	// and Total to its end (to the error, for FaultError): the simulated
	// durations with jitter and slow tail, times Config.TimeScale (or
	// nominal with Config.NoSleep).
	TTFT, Total time.Duration
	// Sleep says whether TTFT and Total are to be waited (false with
	// Config.NoSleep, where they are only reported).
	Sleep bool
	// Fault is "", FaultError, FaultHang or FaultOverload.
	Fault string
	// Wait is the time queued for a slot of the model's capacity, already
	// in TTFT and Total (scaled like them); Running the sequences running
	// when the call started, itself included (0 without capacity). Both
	// are set by Admit.
	Wait    time.Duration
	Running int
}

// Admit puts the call planned as p, arriving at at, into the model's
// capacity (see Capacity), shared by every caller of the model: the wait
// for a slot is added to p's TTFT and Total, and its decode slowed by the
// sequences running beside it; a call refused by a full queue becomes
// FaultOverload. Server errors and hangs take no slot, and a plan that is
// not waited (Plan.Sleep false, or time-scale 0) is left as it is. The
// call goes to the model's call log, if it has one. Complete admits every
// call itself; crab sim-server admits each call at its arrival.
func (m *Model) Admit(req *model.Request, p *Plan, at time.Time) {
	if m.pool != nil && p.Fault == "" && p.Sleep && p.Total > 0 {
		decode := p.Total - p.TTFT
		slot, ok := m.pool.admit(at, p.TTFT, decode)
		if !ok {
			*p = Plan{Model: p.Model, Sleep: p.Sleep, Fault: FaultOverload, InputUsage: p.InputUsage}
		} else {
			p.Wait, p.Running = slot.Wait, slot.Running
			p.TTFT += slot.Wait
			p.Total = p.TTFT + time.Duration(float64(decode)*slot.Factor)
		}
	}
	if l := m.cfg.CallLog; l != nil {
		l.Add(Call{At: at, Model: p.Model, Caller: req.Caller, TaskID: req.TaskID, Attempt: req.Attempt,
			TokensIn: p.InputUsage.TokensIn, TokensOut: p.Usage.TokensOut, Wait: p.Wait, TTFT: p.TTFT, Total: p.Total,
			Running: p.Running, Fault: p.Fault})
	}
}

// Plan decides what a call with req does: its answer, finish reason,
// usage, timing and faults, from the same seeded draws Complete uses, so
// Complete(ctx, req) delivers exactly this plan when the model has no
// capacity limit (see Admit). It does not wait. An unknown output mode
// returns an error wrapping ErrMode.
func (m *Model) Plan(req *model.Request) (Plan, error) { return m.PlanCall(req, 0) }

// PlanCall is Plan for the call numbered nonce among calls the model
// cannot tell apart: a varying answer (see Vary) is drawn anew for each
// nonce. crab sim-server numbers the calls that carry no caller and no
// request id this way; in process every call has nonce 0.
func (m *Model) PlanCall(req *model.Request, nonce uint64) (Plan, error) {
	mode, ok := parseMode(req.Mode)
	if !ok {
		return Plan{}, fmt.Errorf("%w: %q", ErrMode, req.Mode)
	}
	var u [numDraws]float64
	g := m.rngFor(req)
	for i := range u {
		u[i] = g.Float64()
	}
	cfg := &m.cfg
	mult := 1 + cfg.Jitter*(2*u[drawJitter]-1)
	if u[drawTail] < cfg.TailRate {
		mult *= cfg.TailFactor
	}
	tin := Tokens(req.System) + Tokens(req.Text) + m.sized.size(req.Contract)/8
	for _, h := range req.History {
		tin += Tokens(h.Content)
	}
	p := Plan{Model: cfg.Name, Sleep: !cfg.NoSleep}
	p.InputUsage = model.Usage{TokensIn: tin, Cost: float64(tin) * cfg.PriceIn}

	if u[drawError] < cfg.ErrorRate {
		p.Fault = FaultError
		p.Total = scaleDur(cfg.Base, mult*m.scale())
		return p, nil
	}
	if u[drawHang] < cfg.HangRate {
		p.Fault = FaultHang
		return p, nil
	}

	finish := model.FinishStop
	var content string
	if u[drawRefusal] < cfg.RefusalRate {
		content = refusal
		finish = model.FinishRefusal
	} else {
		var err error
		content, p.Confidence, err = m.answer(req, mode, &u, nonce)
		if err != nil {
			return Plan{}, err
		}
		if u[drawMalformed] < cfg.MalformedRate && len(content) > 1 {
			// prose before the object and the closing brace lost: not JSON
			content = "Here is the answer:\n" + content[:len(content)-1]
		}
	}
	budget := req.MaxTokens
	if budget <= 0 {
		budget = cfg.MaxTokens
	}
	tout := Tokens(content)
	if tout > budget {
		content = cutTokens(content, budget)
		tout = Tokens(content)
		finish = model.FinishLength
	}

	pre := cfg.Base + time.Duration(tin)*cfg.PrefillPerToken
	total := pre + time.Duration(tout)*cfg.DecodePerToken
	p.TTFT = scaleDur(pre, mult*m.scale())
	p.Total = scaleDur(total, mult*m.scale())
	p.Content = content
	p.FinishReason = finish
	p.Usage = model.Usage{TokensIn: tin, TokensOut: tout, Cost: float64(tin)*cfg.PriceIn + float64(tout)*cfg.PriceOut}
	return p, nil
}

// sizedContract is a contract and its jsonSize.
type sizedContract struct {
	text []byte
	size int
}

// contractSizer remembers the last contract sized. Its zero value is ready
// to use and it is safe for concurrent use.
type contractSizer struct {
	last atomic.Pointer[sizedContract]
}

// size is jsonSize(c), remembered for the last contract seen.
func (z *contractSizer) size(c []byte) int {
	if len(c) < 256 {
		return jsonSize(c)
	}
	if last := z.last.Load(); last != nil && bytes.Equal(last.text, c) {
		return last.size
	}
	n := jsonSize(c)
	if len(c) <= 64<<10 {
		z.last.Store(&sizedContract{text: bytes.Clone(c), size: n})
	}
	return n
}

// jsonSize is the size of a JSON text as sent on the wire in compact form:
// its bytes without the whitespace between tokens, with the HTML-safe
// escapes \u003c, \u003e and \u0026 counted as the one character they
// stand for. A contract is billed by this size, so the same schema costs
// the same whether it is read from an indented file in process or received
// compacted (and HTML-escaped by encoding/json) over HTTP. Bytes that are
// not JSON are counted as they are.
func jsonSize(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		case '"':
		default:
			n++
			i++
			continue
		}
		// A string: every byte counts but an HTML-safe escape, which
		// counts as one; an escaped quote does not end it.
		n++
		i++
		for i < len(b) {
			q := bytes.IndexByte(b[i:], '"')
			seg := b[i:]
			if q >= 0 {
				seg = seg[:q]
			}
			if k := bytes.IndexByte(seg, '\\'); k >= 0 {
				n += k
				i += k
				switch {
				case i+5 < len(b) && b[i+1] == 'u' && b[i+2] == '0' && b[i+3] == '0' && isHTMLEscape(b[i+4], b[i+5]):
					n++
					i += 6
				case i+1 < len(b):
					n += 2
					i += 2
				default:
					n++
					i++
				}
				continue
			}
			n += len(seg)
			i += len(seg)
			if q >= 0 {
				n++ // the closing quote
				i++
			}
			break
		}
	}
	return n
}

func isHTMLEscape(a, b byte) bool {
	switch {
	case a == '3' && (b == 'c' || b == 'C' || b == 'e' || b == 'E'):
		return true
	case a == '2' && b == '6':
		return true
	}
	return false
}
