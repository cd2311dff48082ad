package router

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// fakeBackends answers per model name with a fixed confidence and error,
// counting calls; the cost of a call is 1 (small) or 10 (large).
type fakeBackends struct {
	mu    sync.Mutex
	calls []string
	conf  float64
	fail  error // the small model's error
	large error // the large model's error
}

func (f *fakeBackends) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req.Model)
	f.mu.Unlock()
	resp := &model.Response{Model: req.Model, Content: "answer of " + req.Model}
	resp.Trace.Attempts = 1
	resp.Trace.ModelDur = 100 * time.Millisecond
	resp.Trace.Validated, resp.Trace.ContractOK = true, true
	switch req.Model {
	case "small":
		if f.fail == errNilSmall {
			return nil, f.fail
		}
		resp.Usage = model.Usage{TokensIn: 10, TokensOut: 5, Cost: 1}
		resp.Confidence = f.conf
		if f.fail != nil {
			resp.Trace.ContractOK = false
			return resp, f.fail
		}
	case "large":
		resp.Usage = model.Usage{TokensIn: 10, TokensOut: 50, Cost: 10}
		resp.Trace.ModelDur = time.Second
		resp.Confidence = 0.97
		if f.large != nil {
			return nil, f.large
		}
	}
	return resp, nil
}

var (
	errContract = errors.New("contract: answer violates the contract: /category: enum")
	errNilSmall = errors.New("small: connection refused") // the small model returns no response at all
)

func TestCascade(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		conf      float64
		threshold float64
		fail      error
		largeErr  error
		wantCalls []string
		wantModel string
		wantCost  float64
		wantDur   time.Duration
		escalated bool
		wantErr   bool
		wantScore float64
	}{
		{"confident answer stays small", 0.9, 0.6, nil, nil, []string{"small"}, "small", 1, 100 * time.Millisecond, false, false, 0.1},
		{"unconfident answer escalates", 0.5, 0.6, nil, nil, []string{"small", "large"}, "large", 11, 1100 * time.Millisecond, true, false, 0.5},
		{"unknown confidence escalates", 0, 0.6, nil, nil, []string{"small", "large"}, "large", 11, 1100 * time.Millisecond, true, false, 1},
		{"threshold 0 keeps unknown confidence", 0, 0, nil, nil, []string{"small"}, "small", 1, 100 * time.Millisecond, false, false, 1},
		{"contract failure escalates", 0.9, 0, errContract, nil, []string{"small", "large"}, "large", 11, 1100 * time.Millisecond, true, false, 1},
		{"small answers nothing", 0, 0.6, errNilSmall, nil, []string{"small", "large"}, "large", 10, time.Second, true, false, 1},
		{"large fails too", 0.9, 0.6, errContract, model.ErrBackend, []string{"small", "large"}, "large", 1, 100 * time.Millisecond, true, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeBackends{conf: tc.conf, fail: tc.fail, large: tc.largeErr}
			mw, err := NewCascade(CascadeConfig{Small: "small", Large: "large", Confidence: tc.threshold})
			if err != nil {
				t.Fatal(err)
			}
			req := &model.Request{Text: "ticket"}
			resp, err := model.Chain(f, mw).Complete(context.Background(), req)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v; want error %v", err, tc.wantErr)
			}
			if req.Model != "" {
				t.Errorf("caller's request changed: Model %q", req.Model)
			}
			if len(f.calls) != len(tc.wantCalls) || f.calls[0] != tc.wantCalls[0] || f.calls[len(f.calls)-1] != tc.wantCalls[len(tc.wantCalls)-1] {
				t.Errorf("calls %v; want %v", f.calls, tc.wantCalls)
			}
			tr := &resp.Trace
			if !tr.Routed || tr.RouteModel != tc.wantModel || tr.Escalated != tc.escalated {
				t.Errorf("trace routed %v model %q escalated %v; want true %q %v", tr.Routed, tr.RouteModel, tr.Escalated, tc.wantModel, tc.escalated)
			}
			if resp.Usage.Cost != tc.wantCost || tr.ModelDur != tc.wantDur {
				t.Errorf("cost %v model time %v; want %v %v (both calls count)", resp.Usage.Cost, tr.ModelDur, tc.wantCost, tc.wantDur)
			}
			if math.Abs(tr.RouteScore-tc.wantScore) > 1e-12 {
				t.Errorf("route score %v; want %v", tr.RouteScore, tc.wantScore)
			}
			if tc.escalated && !tc.wantErr && tc.fail != errNilSmall && tr.Attempts != 2 {
				t.Errorf("attempts %d; want 2", tr.Attempts)
			}
			if tc.largeErr != nil && (resp.Content != "" || tr.Validated || tr.ContractOK || len(tr.Violations) > 0) {
				t.Errorf("failed escalation returned content %q, validated %v, contract ok %v; want no answer and no contract result", resp.Content, tr.Validated, tr.ContractOK)
			}
			wantEsc := 0.0
			if tc.escalated && tc.largeErr == nil {
				wantEsc = 10
			}
			if tr.EscalationCost != wantEsc {
				t.Errorf("escalation cost %v; want %v (the large call)", tr.EscalationCost, wantEsc)
			}
		})
	}
}

func TestCascadeNoEscalationAfterDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	f := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		cancel()
		return &model.Response{Model: req.Model}, ctx.Err()
	})
	mw, _ := NewCascade(CascadeConfig{Small: "small", Large: "large", Confidence: 0.5})
	calls := 0
	counted := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		calls++
		return f(ctx, req)
	})
	resp, err := model.Chain(counted, mw).Complete(ctx, &model.Request{})
	if !errors.Is(err, context.Canceled) || calls != 1 || resp.Trace.Escalated {
		t.Errorf("got err %v, %d calls, escalated %v; want context.Canceled, 1 call, no escalation", err, calls, resp.Trace.Escalated)
	}
}

func TestCascadePassThroughAndConfig(t *testing.T) {
	t.Parallel()
	f := &fakeBackends{conf: 0.1}
	mw, _ := NewCascade(CascadeConfig{Small: "small", Large: "large", Confidence: 0.9})
	resp, err := model.Chain(f, mw).Complete(context.Background(), &model.Request{Model: "large"})
	if err != nil || len(f.calls) != 1 || resp.Trace.Routed {
		t.Errorf("explicit model: err %v calls %v routed %v; want one call, not routed", err, f.calls, resp.Trace.Routed)
	}
	for _, tc := range []struct {
		cfg  CascadeConfig
		want error
	}{
		{CascadeConfig{Small: "s", Large: "l", Confidence: -0.1}, ErrBadConfidence},
		{CascadeConfig{Small: "s", Large: "l", Confidence: 1.1}, ErrBadConfidence},
		{CascadeConfig{Small: "s", Large: "l", Confidence: math.NaN()}, ErrBadConfidence},
		{CascadeConfig{Large: "l"}, ErrNoModel},
	} {
		if _, err := NewCascade(tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("%+v: got %v; want %v", tc.cfg, err, tc.want)
		}
	}
}
