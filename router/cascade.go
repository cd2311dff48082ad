package router

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/crab-testbed/crab/model"
)

// ErrBadConfidence is a cascade confidence threshold outside [0,1] or NaN.
var ErrBadConfidence = errors.New("router: cascade confidence must be in [0,1]")

// CascadeConfig configures the cascade router of one arm.
//
// The small model answers every request first. The request is escalated to
// the large model when that call fails — the answer breaks the contract
// (the contract layer below returns an error), the backend errs after its
// retries — or when the answer's confidence (model.Response.Confidence) is
// below Confidence. An answer that reports no confidence (0) is escalated
// whenever Confidence > 0. Confidence 0 therefore escalates only failed
// answers; 1 escalates every answer not fully confident.
type CascadeConfig struct {
	Small      string  `yaml:"small"`      // asked first
	Large      string  `yaml:"large"`      // asked after a failed or unconfident small answer
	Confidence float64 `yaml:"confidence"` // in [0,1]; e.g. 0.6

	// Now reads the clock that times the cascade's own decisions
	// (Trace.RouteDur); nil means time.Now.
	Now func() time.Time `yaml:"-"`
}

// Validate reports the first problem with c, wrapping ErrBadConfidence or
// ErrNoModel.
func (c CascadeConfig) Validate() error {
	if math.IsNaN(c.Confidence) || c.Confidence < 0 || c.Confidence > 1 {
		return fmt.Errorf("%w, got %v", ErrBadConfidence, c.Confidence)
	}
	return checkModels(c.Small, c.Large)
}

// Escalate reports whether a small answer with the given outcome (ok: it
// came back and met the contract) and confidence is escalated. A tuner
// replaying cascade decisions should call it, so it decides exactly as the
// middleware does.
func (c CascadeConfig) Escalate(ok bool, confidence float64) bool {
	return !ok || confidence < c.Confidence
}

// NewCascade returns the cascade router middleware (see CascadeConfig).
//
// Both calls count for the request: the response returned after an
// escalation carries the usage, attempts, model time and validation time of
// the small call added to the large one's (model.Accumulate), and its trace
// has Escalated = true. When the large call fails without a response, the
// response returned beside its error carries the small call's cost and no
// answer. The cascade writes only its own trace fields. The trace is marked Routed with RouteModel the model
// whose answer is returned and RouteScore the small answer's doubt,
// 1 − confidence (1 when the small call failed), so that, as with the
// threshold router, a higher score means a harder request. A call ended by
// the request's own context (deadline, cancellation) is not escalated.
//
// A request that already names a model passes through unchanged. The
// caller's request is never modified.
func NewCascade(cfg CascadeConfig) (model.Middleware, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return func(next model.Model) model.Model {
		return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			if req.Model != "" {
				return next.Complete(ctx, req)
			}
			r := req.Clone()
			r.Model = cfg.Small
			first, err := next.Complete(ctx, r)
			start := now()
			ok := err == nil && first != nil
			conf := 0.0
			if first != nil {
				conf = first.Confidence
			}
			doubt := 1.0
			if ok {
				doubt = 1 - min(max(conf, 0), 1)
			}
			if ctx.Err() != nil || !cfg.Escalate(ok, conf) {
				if first != nil {
					mark(&first.Trace, doubt, cfg.Small, now().Sub(start))
				}
				return first, err
			}
			dur := now().Sub(start)
			r2 := req.Clone()
			r2.Model = cfg.Large
			second, err := next.Complete(ctx, r2)
			escCost := 0.0
			if second != nil {
				escCost = second.Usage.Cost
			}
			if second == nil && first != nil {
				// The large call left no response. The small answer is not
				// what failed, so it is not returned (nor its contract
				// result): a response of its own carries only what the small
				// call cost.
				second = &model.Response{}
			}
			out := model.Accumulate(first, second)
			if out != nil {
				mark(&out.Trace, doubt, cfg.Large, dur)
				out.Trace.Escalated = true
				out.Trace.EscalationCost += escCost
			}
			return out, err
		})
	}, nil
}

func mark(t *model.Trace, score float64, name string, dur time.Duration) {
	t.Routed = true
	t.RouteScore = score
	t.RouteModel = name
	t.RouteDur = dur
}
