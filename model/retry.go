package model

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// RetryPolicy says which failed model calls are tried again, how often and
// after how long. It is the one retry policy of crab: crab run and crab
// serve build it from the same spec.
//
// A call is retried only when another attempt can succeed (see Retryable):
// a network error, an attempt that ran out of AttemptTimeout, or an HTTP
// status 408, 429 or 5xx. Everything else — 400, 401, 403, 404, an unknown
// model, a malformed request, the request's own deadline or cancellation —
// is permanent and returned at once: repeating it would only add attempts
// and cost to the record.
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts, the first included; 0
	// or 1 means no retry.
	MaxAttempts int
	// Backoff is the wait before the second attempt, doubled after each
	// further one.
	Backoff time.Duration
	// AttemptTimeout bounds one attempt; an attempt that runs out of it is
	// retried while the request's own deadline allows. 0 sets none (an
	// attempt may take the request's whole budget).
	AttemptTimeout time.Duration
	// MaxRetryAfter caps the wait a server asks for with Retry-After (on
	// 429 or 503): the wait before the next attempt is the larger of the
	// backoff and the server's ask, at most MaxRetryAfter. A wait that
	// would outlast the request's deadline is not started: the error is
	// returned at once. 0 means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// Wait waits d or until ctx ends (then returns ctx.Err()); nil waits
	// on a timer. Tests inject it to observe the waits without sleeping.
	Wait func(ctx context.Context, d time.Duration) error
}

// DefaultMaxRetryAfter is the cap of a server's Retry-After when the policy
// sets none.
const DefaultMaxRetryAfter = 10 * time.Second

// HTTPStatusError is implemented by backend errors that carry the HTTP
// status of the server's answer (the openai backend's StatusError). The
// retry policy reads the status through it.
type HTTPStatusError interface {
	error
	HTTPStatus() int
}

// RetryAfterError is implemented by backend errors that carry the delay a
// server asked for before the next call (the Retry-After header); 0 when it
// asked for none.
type RetryAfterError interface {
	error
	RetryAfter() time.Duration
}

// errAttemptTimeout marks an attempt that ran out of the policy's
// AttemptTimeout while the request's own deadline had not passed.
var errAttemptTimeout = errors.New("model: attempt timed out")

// Retryable reports whether another attempt of a call that failed with err
// can succeed: a backend error (wrapping ErrBackend) without an HTTP status
// — a refused or broken connection, a stream cut short — or with status
// 408, 429 or 5xx. It is false for everything else: other statuses (400,
// 401, 403, 404, 422), ErrUnknownModel, errors that are not backend errors,
// and the end of the request's context (its deadline is spent). A per-attempt
// timeout is judged by Retry, which alone knows the attempt's deadline.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrUnknownModel) || !errors.Is(err, ErrBackend) {
		return false
	}
	var se HTTPStatusError
	if !errors.As(err, &se) {
		return true // no status: the network or the connection failed
	}
	switch s := se.HTTPStatus(); {
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests, s >= 500 && s <= 599:
		return true
	}
	return false
}

// retryAfter is the delay the server asked for, 0 when none.
func retryAfter(err error) time.Duration {
	var ra RetryAfterError
	if errors.As(err, &ra) {
		return max(ra.RetryAfter(), 0)
	}
	return 0
}

// Retry returns a middleware that repeats a call that failed with a
// retryable error (see RetryPolicy). Every attempt's usage, attempts and
// model time are added to the response that is finally returned, so a retry
// costs what it cost.
func Retry(p RetryPolicy) Middleware {
	wait := p.Wait
	if wait == nil {
		wait = Sleep
	}
	maxAfter := p.MaxRetryAfter
	if maxAfter <= 0 {
		maxAfter = DefaultMaxRetryAfter
	}
	return func(next Model) Model {
		if p.MaxAttempts <= 1 && p.AttemptTimeout <= 0 {
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
				resp, err := p.once(ctx, next, r)
				resp = Accumulate(spent, resp)
				if err == nil || attempt+1 >= max(p.MaxAttempts, 1) || ctx.Err() != nil {
					return resp, err
				}
				if !errors.Is(err, errAttemptTimeout) && !Retryable(err) {
					return resp, err
				}
				spent = resp
				d := max(backoff, min(retryAfter(err), maxAfter))
				if dl, ok := ctx.Deadline(); ok && d > 0 && time.Until(dl) <= d {
					return resp, err // the wait would outlast the request: give up now
				}
				if d > 0 {
					if werr := wait(ctx, d); werr != nil {
						return spent, werr
					}
				}
				backoff *= 2
			}
		})
	}
}

// once makes one attempt, under the policy's attempt timeout when it has
// one. An attempt cut by that timeout (not by the request's own deadline)
// returns an error matching both errAttemptTimeout and
// context.DeadlineExceeded.
func (p RetryPolicy) once(ctx context.Context, next Model, req *Request) (*Response, error) {
	if p.AttemptTimeout <= 0 {
		return next.Complete(ctx, req)
	}
	actx, cancel := context.WithTimeoutCause(ctx, p.AttemptTimeout, errAttemptTimeout)
	defer cancel()
	resp, err := next.Complete(actx, req)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptTimeout) {
		return resp, attemptTimeout{err}
	}
	return resp, err
}

// attemptTimeout is an attempt's error after its attempt timeout passed.
type attemptTimeout struct{ err error }

func (e attemptTimeout) Error() string { return errAttemptTimeout.Error() + ": " + e.err.Error() }

func (e attemptTimeout) Unwrap() []error {
	return []error{errAttemptTimeout, context.DeadlineExceeded, e.err}
}

// Sleep waits d or until ctx ends, whichever comes first, and returns
// ctx's error when it ended first: the wait of a retry's backoff, of a
// simulated model's latency and of a replayed call's recorded time.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
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
