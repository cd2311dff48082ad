package model

import (
	"context"
	"errors"
	"time"
)

// RetryPolicy says how often a failed model call is tried again. Timeouts and
// cancellations are never retried: the request's deadline is already spent.
type RetryPolicy struct {
	MaxAttempts int           // total attempts including the first; 0 or 1 means no retry
	Backoff     time.Duration // wait before the second attempt, doubled after each further one
}

// Retry returns a middleware that repeats a call that failed with a backend
// error. Every attempt's usage, attempts and model time are added to the
// response that is finally returned, so a retry costs what it cost.
func Retry(p RetryPolicy) Middleware {
	return func(next Model) Model {
		if p.MaxAttempts <= 1 {
			return next
		}
		return ModelFunc(func(ctx context.Context, req *Request) (*Response, error) {
			var spent *Response
			backoff := p.Backoff
			for attempt := 0; ; attempt++ {
				r := req
				if attempt > 0 {
					r = req.Clone()
					r.Attempt = req.Attempt + attempt
				}
				resp, err := next.Complete(ctx, r)
				resp = Accumulate(spent, resp)
				if err == nil || attempt+1 >= p.MaxAttempts || !retryable(ctx, err) {
					return resp, err
				}
				spent = resp
				if backoff > 0 {
					t := time.NewTimer(backoff)
					select {
					case <-ctx.Done():
						t.Stop()
						return spent, ctx.Err()
					case <-t.C:
					}
					backoff *= 2
				}
			}
		})
	}
}

func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	return true
}

// Accumulate folds the usage, attempt count and model time of earlier
// attempts (spent) into the latest attempt's response and returns it. Either
// may be nil; the result is nil only when both are.
func Accumulate(spent, latest *Response) *Response {
	if spent == nil {
		return latest
	}
	if latest == nil {
		return spent
	}
	latest.Usage.Add(spent.Usage)
	latest.Trace.Attempts += spent.Trace.Attempts
	latest.Trace.ModelDur += spent.Trace.ModelDur
	latest.Trace.ValidateDur += spent.Trace.ValidateDur
	return latest
}
