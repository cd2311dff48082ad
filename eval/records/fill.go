package records

import (
	"context"
	"errors"
	"time"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/model"
)

// Fill copies a stack response's trace and usage into rec, whose
// IntendedAt, DoneAt and Outcome are set: the segment timings, cache
// status and leak, model and routing, attempts, tokens, cost (unmeasured
// when a call went to a model without a price) and contract result, and
// the answer (Output) of an ok request. resp may be nil (the stack failed
// before any layer answered). crab run and crab serve build
// their records through it, so both write the same fields the same way.
func Fill(rec *Record, resp *model.Response) {
	rec.E2EMs = Ms(rec.DoneAt.Sub(rec.IntendedAt))
	rec.FirstByteAt = rec.DoneAt
	if resp == nil {
		rec.TTFTMs = rec.E2EMs
		return
	}
	tr := &resp.Trace
	if !tr.FirstByteAt.IsZero() && !tr.FirstByteAt.After(rec.DoneAt) {
		rec.FirstByteAt = tr.FirstByteAt
	}
	rec.TTFTMs = Ms(rec.FirstByteAt.Sub(rec.IntendedAt))
	rec.CacheMs, rec.RouteMs, rec.ModelMs, rec.ValidateMs = Ms(tr.CacheDur), Ms(tr.RouteDur), Ms(tr.ModelDur), Ms(tr.ValidateDur)
	rec.Cache, rec.Leak, rec.ScopeMismatch = tr.Cache, tr.Leak, tr.ScopeMismatch
	if tr.Cache == model.CacheHit {
		rec.Similarity, rec.CacheOrigin = tr.Similarity, tr.Origin
	}
	rec.Model, rec.RouteScore, rec.Routed, rec.RouteFallback, rec.Escalated, rec.Attempts = resp.Model, tr.RouteScore, tr.Routed, tr.RouteFallback, tr.Escalated, tr.Attempts
	rec.TokensIn, rec.TokensOut, rec.Cost = resp.Usage.TokensIn, resp.Usage.TokensOut, resp.Usage.Cost
	rec.EscalationCost = tr.EscalationCost
	if resp.Usage.Unpriced {
		// A call went to a model without a declared price: what the
		// priced calls cost is not the request's cost.
		rec.Cost, rec.EscalationCost = 0, 0
		rec.MarkUnmeasured(FigureCost)
	}
	rec.ContractOK = tr.Validated && tr.ContractOK
	rec.Violations = tr.Violations
	if rec.Outcome == OutcomeOK {
		rec.Output = resp.Content
	}
}

// OutcomeOf maps a stack error to a record outcome: parent is the
// request's own context (its end without a deadline is a cancellation),
// timedOut that the request's deadline passed.
func OutcomeOf(parent context.Context, err error, timedOut bool) string {
	switch {
	case err == nil:
		return OutcomeOK
	case parent.Err() != nil && errors.Is(err, context.Canceled):
		return OutcomeCancelled
	case timedOut || errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.Is(err, contract.ErrViolation):
		return OutcomeContractFail
	}
	return OutcomeError
}

// Ms is a duration in a record's milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
