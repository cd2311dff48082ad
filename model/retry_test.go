package model_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// statusErr is a backend error with an HTTP status and a Retry-After.
type statusErr struct {
	status int
	after  time.Duration
}

func (e *statusErr) Error() string             { return fmt.Sprintf("%v: HTTP %d", model.ErrBackend, e.status) }
func (e *statusErr) Unwrap() error             { return model.ErrBackend }
func (e *statusErr) HTTPStatus() int           { return e.status }
func (e *statusErr) RetryAfter() time.Duration { return e.after }

func TestRetryable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"network", fmt.Errorf("%w: small: connection refused", model.ErrBackend), true},
		{"408", &statusErr{status: http.StatusRequestTimeout}, true},
		{"429", &statusErr{status: http.StatusTooManyRequests}, true},
		{"500", &statusErr{status: 500}, true},
		{"503", &statusErr{status: 503}, true},
		{"599", &statusErr{status: 599}, true},
		{"400", &statusErr{status: 400}, false},
		{"401", &statusErr{status: 401}, false},
		{"403", &statusErr{status: 403}, false},
		{"404", &statusErr{status: 404}, false},
		{"422", &statusErr{status: 422}, false},
		{"wrapped 401", fmt.Errorf("call: %w", &statusErr{status: 401}), false},
		{"unknown model", fmt.Errorf("%w: %q", model.ErrUnknownModel, "x"), false},
		{"unknown model as backend error", fmt.Errorf("%w: %w", model.ErrBackend, model.ErrUnknownModel), false},
		{"not a backend error", errors.New("something else"), false},
		{"deadline", context.DeadlineExceeded, false},
		{"cancelled", context.Canceled, false},
		{"nil", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := model.Retryable(tc.err); got != tc.want {
				t.Errorf("Retryable(%v) = %v; want %v", tc.err, got, tc.want)
			}
		})
	}
}

// flaky fails with errs in turn, then answers; it counts its calls.
type flaky struct {
	errs  []error
	calls int
	seen  []int // Request.Attempt of each call
}

func (f *flaky) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	f.calls++
	f.seen = append(f.seen, req.Attempt)
	resp := &model.Response{Content: "ok", Usage: model.Usage{TokensIn: 10, Cost: 1}}
	resp.Trace.Attempts = 1
	if i := f.calls - 1; i < len(f.errs) {
		return resp, f.errs[i]
	}
	return resp, nil
}

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	net := fmt.Errorf("%w: reset", model.ErrBackend)
	tests := []struct {
		name      string
		errs      []error
		attempts  int
		wantCalls int
		wantErr   bool
		wantWaits []time.Duration
	}{
		{"no error", nil, 3, 1, false, nil},
		{"network then ok", []error{net}, 3, 2, false, []time.Duration{10 * time.Millisecond}},
		{"503 twice then ok", []error{&statusErr{status: 503}, &statusErr{status: 503}}, 3, 3, false,
			[]time.Duration{10 * time.Millisecond, 20 * time.Millisecond}},
		{"gives up after max attempts", []error{net, net, net, net}, 3, 3, true,
			[]time.Duration{10 * time.Millisecond, 20 * time.Millisecond}},
		{"401 is permanent", []error{&statusErr{status: 401}}, 3, 1, true, nil},
		{"400 is permanent", []error{&statusErr{status: 400}}, 3, 1, true, nil},
		{"unknown model is permanent", []error{model.ErrUnknownModel}, 3, 1, true, nil},
		{"429 honours Retry-After", []error{&statusErr{status: 429, after: 2 * time.Second}}, 3, 2, false, []time.Duration{2 * time.Second}},
		{"Retry-After is capped", []error{&statusErr{status: 429, after: time.Hour}}, 3, 2, false, []time.Duration{5 * time.Second}},
		{"backoff beats a shorter Retry-After", []error{&statusErr{status: 503, after: time.Millisecond}}, 3, 2, false, []time.Duration{10 * time.Millisecond}},
		{"408 is retried", []error{&statusErr{status: 408}}, 2, 2, false, []time.Duration{10 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &flaky{errs: tc.errs}
			var waits []time.Duration
			m := model.Chain(f, model.Retry(model.RetryPolicy{
				MaxAttempts: tc.attempts, Backoff: 10 * time.Millisecond, MaxRetryAfter: 5 * time.Second,
				Wait: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
			}))
			resp, err := m.Complete(context.Background(), &model.Request{Text: "x", Attempt: 0})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v; want error %v", err, tc.wantErr)
			}
			if f.calls != tc.wantCalls {
				t.Errorf("calls = %d; want %d", f.calls, tc.wantCalls)
			}
			if resp == nil || resp.Trace.Attempts != tc.wantCalls || resp.Usage.Cost != float64(tc.wantCalls) {
				t.Errorf("response = %+v; want %d attempts and cost %d counted", resp, tc.wantCalls, tc.wantCalls)
			}
			for i, a := range f.seen {
				if a != i {
					t.Errorf("call %d had Attempt %d; want %d", i, a, i)
				}
			}
			if fmt.Sprint(waits) != fmt.Sprint(tc.wantWaits) {
				t.Errorf("waits = %v; want %v", waits, tc.wantWaits)
			}
		})
	}
}

func TestRetryNeverOutwaitsTheDeadline(t *testing.T) {
	t.Parallel()
	f := &flaky{errs: []error{&statusErr{status: 429, after: 10 * time.Second}}}
	waited := false
	m := model.Chain(f, model.Retry(model.RetryPolicy{MaxAttempts: 3, MaxRetryAfter: time.Minute,
		Wait: func(context.Context, time.Duration) error { waited = true; return nil }}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := m.Complete(ctx, &model.Request{Text: "x"})
	var se *statusErr
	if !errors.As(err, &se) || se.status != 429 || waited || f.calls != 1 {
		t.Errorf("err = %v, waited %v, calls %d; want the 429 at once, no wait, 1 call", err, waited, f.calls)
	}
}

// hangs blocks until its context ends, the first n calls; then answers.
type hangs struct {
	n     int
	calls int
}

func (h *hangs) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	h.calls++
	if h.calls <= h.n {
		<-ctx.Done()
		return &model.Response{Trace: model.Trace{Attempts: 1}}, ctx.Err()
	}
	return &model.Response{Content: "ok", Trace: model.Trace{Attempts: 1}}, nil
}

func TestRetryAttemptTimeout(t *testing.T) {
	t.Parallel()
	h := &hangs{n: 1}
	m := model.Chain(h, model.Retry(model.RetryPolicy{MaxAttempts: 2, AttemptTimeout: 20 * time.Millisecond}))
	resp, err := m.Complete(context.Background(), &model.Request{Text: "x"})
	if err != nil || h.calls != 2 || resp.Trace.Attempts != 2 {
		t.Fatalf("err = %v, calls %d, attempts %d; want the second attempt's answer after 2 calls", err, h.calls, resp.Trace.Attempts)
	}

	// Every attempt times out: the last attempt's timeout is returned as
	// a deadline, which callers map to the timeout outcome.
	h = &hangs{n: 5}
	m = model.Chain(h, model.Retry(model.RetryPolicy{MaxAttempts: 2, AttemptTimeout: 10 * time.Millisecond}))
	_, err = m.Complete(context.Background(), &model.Request{Text: "x"})
	if !errors.Is(err, context.DeadlineExceeded) || h.calls != 2 {
		t.Errorf("err = %v, calls %d; want a deadline after 2 calls", err, h.calls)
	}

	// The request's own deadline is never retried.
	h = &hangs{n: 5}
	m = model.Chain(h, model.Retry(model.RetryPolicy{MaxAttempts: 3}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = m.Complete(ctx, &model.Request{Text: "x"})
	if !errors.Is(err, context.DeadlineExceeded) || h.calls != 1 {
		t.Errorf("err = %v, calls %d; want the request's deadline after 1 call", err, h.calls)
	}
}

func TestRetryWaitEndsWithTheRequest(t *testing.T) {
	t.Parallel()
	f := &flaky{errs: []error{&statusErr{status: 503}}}
	ctx, cancel := context.WithCancel(context.Background())
	m := model.Chain(f, model.Retry(model.RetryPolicy{MaxAttempts: 3, Backoff: time.Second,
		Wait: func(ctx context.Context, _ time.Duration) error { cancel(); <-ctx.Done(); return ctx.Err() }}))
	resp, err := m.Complete(ctx, &model.Request{Text: "x"})
	if !errors.Is(err, context.Canceled) || f.calls != 1 || resp == nil || resp.Trace.Attempts != 1 {
		t.Errorf("err = %v, calls %d, resp %+v; want cancelled after 1 call with its attempt counted", err, f.calls, resp)
	}
}

func TestAccumulate(t *testing.T) {
	t.Parallel()
	if model.Accumulate(nil, nil) != nil {
		t.Error("Accumulate(nil, nil) != nil")
	}
	a := &model.Response{Usage: model.Usage{TokensIn: 1, TokensOut: 2, Cost: 3}, Trace: model.Trace{Attempts: 1, ModelDur: time.Second}}
	b := &model.Response{Usage: model.Usage{TokensIn: 10, TokensOut: 20, Cost: 30}, Trace: model.Trace{Attempts: 2, ModelDur: 2 * time.Second}}
	got := model.Accumulate(a, b)
	if got != b || got.Usage != (model.Usage{TokensIn: 11, TokensOut: 22, Cost: 33}) || got.Trace.Attempts != 3 || got.Trace.ModelDur != 3*time.Second {
		t.Errorf("Accumulate = %+v; want the latest with both attempts summed", got)
	}
	if model.Accumulate(a, nil) != a {
		t.Error("Accumulate(a, nil) != a")
	}
}
