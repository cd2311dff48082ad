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

// fakeClock advances by step on every reading.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// recorder is the model under the router: it remembers the request it got.
type recorder struct {
	got  *model.Request
	resp *model.Response // returned (cloned) when non-nil
	err  error
}

func (r *recorder) Complete(_ context.Context, req *model.Request) (*model.Response, error) {
	r.got = req
	if r.resp == nil {
		return nil, r.err
	}
	return r.resp.Clone(), r.err
}

func constScorer(v float64, calls *int) Scorer {
	return ScorerFunc(func(*model.Request) Score {
		if calls != nil {
			*calls++
		}
		return Score{Value: v}
	})
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  Config
		want error
	}{
		{"ok", Config{Threshold: 0.5, Small: "small", Large: "large"}, nil},
		{"threshold 0 is all large", Config{Threshold: 0, Small: "small", Large: "large"}, nil},
		{"threshold 1 is allowed", Config{Threshold: 1, Small: "small", Large: "large"}, nil},
		{"same model twice is allowed", Config{Threshold: 0.5, Small: "m", Large: "m"}, nil},
		{"negative threshold", Config{Threshold: -0.01, Small: "small", Large: "large"}, ErrBadThreshold},
		{"threshold above 1", Config{Threshold: 1.01, Small: "small", Large: "large"}, ErrBadThreshold},
		{"NaN threshold", Config{Threshold: math.NaN(), Small: "small", Large: "large"}, ErrBadThreshold},
		{"no small", Config{Threshold: 0.5, Large: "large"}, ErrNoModel},
		{"blank large", Config{Threshold: 0.5, Small: "small", Large: "  "}, ErrNoModel},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if !errors.Is(err, tc.want) {
				t.Fatalf("Validate() = %v; want %v", err, tc.want)
			}
			mw, nerr := New(tc.cfg, constScorer(0, nil))
			if !errors.Is(nerr, tc.want) {
				t.Fatalf("New() error = %v; want %v", nerr, tc.want)
			}
			if (mw == nil) != (tc.want != nil) {
				t.Errorf("New() middleware nil = %v; want %v", mw == nil, tc.want != nil)
			}
		})
	}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		threshold float64
		score     float64
		wantModel string
		wantScore float64
	}{
		{"below threshold goes small", 0.5, 0.49, "small", 0.49},
		{"at threshold goes large", 0.5, 0.5, "large", 0.5},
		{"above threshold goes large", 0.5, 0.9, "large", 0.9},
		{"threshold 0 sends score 0 large", 0, 0, "large", 0},
		{"threshold 1 keeps 0.999 small", 1, 0.999, "small", 0.999},
		{"threshold 1 sends a certain 1 large", 1, 1, "large", 1},
		{"negative score clamps to 0", 0.2, -3, "small", 0},
		{"score above 1 clamps to 1", 0.99, 7, "large", 1},
		{"NaN score counts as 1", 0.99, math.NaN(), "large", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{t: time.Unix(1700000000, 0), step: 3 * time.Millisecond}
			mw, err := New(Config{Threshold: tc.threshold, Small: "small", Large: "large", Now: clock.Now}, constScorer(tc.score, nil))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			next := &recorder{resp: &model.Response{Content: "{}", Trace: model.Trace{Attempts: 1}}}
			req := &model.Request{TaskID: "t1", Text: "anything", Scope: model.Scope{Lang: "en"}}
			resp, err := model.Chain(next, mw).Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if next.got == nil || next.got.Model != tc.wantModel {
				t.Fatalf("next saw model %v; want %q", next.got, tc.wantModel)
			}
			if req.Model != "" {
				t.Errorf("caller's req.Model = %q after the call; want unchanged \"\"", req.Model)
			}
			if next.got == req {
				t.Error("next got the caller's request; want a copy")
			}
			if next.got.Text != req.Text || next.got.TaskID != req.TaskID || next.got.Scope != req.Scope {
				t.Errorf("copy differs from the request beyond Model: %+v", next.got)
			}
			tr := resp.Trace
			if !tr.Routed || tr.RouteModel != tc.wantModel || tr.RouteScore != tc.wantScore || tr.RouteDur != 3*time.Millisecond {
				t.Errorf("trace Routed=%v RouteModel=%q RouteScore=%v RouteDur=%v; want true %q %v 3ms",
					tr.Routed, tr.RouteModel, tr.RouteScore, tr.RouteDur, tc.wantModel, tc.wantScore)
			}
			if tr.Attempts != 1 || resp.Content != "{}" {
				t.Errorf("router changed fields it does not own: attempts=%d content=%q", tr.Attempts, resp.Content)
			}
		})
	}
}

func TestChooseMatchesMiddleware(t *testing.T) {
	t.Parallel()
	cfg := Config{Threshold: 0.55, Small: "s", Large: "l"}
	for _, v := range []float64{-1, 0, 0.3, 0.5499999, 0.55, 0.8, 1, 2, math.NaN()} {
		mw, err := New(cfg, constScorer(v, nil))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		next := &recorder{resp: &model.Response{}}
		if _, err := mw(next).Complete(context.Background(), &model.Request{Text: "x"}); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if got, want := next.got.Model, cfg.Choose(v); got != want {
			t.Errorf("score %v: middleware chose %q; Choose says %q", v, got, want)
		}
	}
}

func TestExplicitModelRespected(t *testing.T) {
	t.Parallel()
	calls := 0
	mw, err := New(Config{Threshold: 0.5, Small: "small", Large: "large"}, constScorer(0.9, &calls))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	next := &recorder{resp: &model.Response{}}
	req := &model.Request{Text: "refund please", Model: "small"}
	resp, err := mw(next).Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if next.got.Model != "small" {
		t.Errorf("next saw model %q; want the explicit \"small\"", next.got.Model)
	}
	if req.Model != "small" {
		t.Errorf("caller's req.Model = %q; want \"small\"", req.Model)
	}
	if calls != 0 {
		t.Errorf("scorer called %d times; want 0 for an explicit model", calls)
	}
	if tr := resp.Trace; tr.Routed || tr.RouteModel != "" || tr.RouteScore != 0 || tr.RouteDur != 0 {
		t.Errorf("trace %+v; want no routing recorded", tr)
	}
}

func TestTraceFilledOnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("backend exploded")
	cases := []struct {
		name     string
		resp     *model.Response
		wantResp bool
	}{
		{"error with partial response", &model.Response{Usage: model.Usage{Cost: 1.5}, Trace: model.Trace{Attempts: 2}}, true},
		{"error without response", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mw, err := New(Config{Threshold: 0.5, Small: "small", Large: "large"}, constScorer(0.7, nil))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			next := &recorder{resp: tc.resp, err: model.ErrBackend}
			if tc.resp == nil {
				next.err = boom
			}
			resp, err := mw(next).Complete(context.Background(), &model.Request{Text: "x"})
			if !errors.Is(err, next.err) {
				t.Fatalf("error = %v; want %v passed through", err, next.err)
			}
			if (resp != nil) != tc.wantResp {
				t.Fatalf("response = %v; want non-nil %v", resp, tc.wantResp)
			}
			if resp == nil {
				return
			}
			if !resp.Trace.Routed || resp.Trace.RouteModel != "large" || resp.Trace.RouteScore != 0.7 {
				t.Errorf("trace %+v; want routed to large with score 0.7", resp.Trace)
			}
			if resp.Usage.Cost != 1.5 || resp.Trace.Attempts != 2 {
				t.Errorf("usage %+v attempts %d; want the partial response's 1.5 and 2", resp.Usage, resp.Trace.Attempts)
			}
		})
	}
}

// The router in front of a real Mux: the backend that answers is the one
// the router chose, and a nil scorer means the built-in one.
func TestDefaultScorerWithMux(t *testing.T) {
	t.Parallel()
	backend := func(name string) model.Model {
		return model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
			return &model.Response{Content: name + ":" + req.Model}, nil
		})
	}
	mux, err := model.NewMux("large", map[string]model.Model{"small": backend("small"), "large": backend("large")})
	if err != nil {
		t.Fatalf("NewMux: %v", err)
	}
	mw, err := New(Config{Threshold: 0.5, Small: "small", Large: "large"}, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	stack := model.Chain(mux, mw)
	cases := []struct {
		name, lang, text, want string
	}{
		{"easy english", "en", "I was charged twice for my subscription this month.", "small"},
		{"negated", "en", "This is not a billing question: the app crashes on start.", "large"},
		{"chinese", "zh", "我无法登录我的账号。", "large"},
		{"lookup alone", "en", "Can you check the status of order #48213?", "small"},
		{"lookup and a second issue", "en", "Can you check the status of parcel #48213? I was charged twice for it.", "large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, err := stack.Complete(context.Background(), &model.Request{Text: tc.text, Scope: model.Scope{Lang: tc.lang}})
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Model != tc.want || resp.Content != tc.want+":"+tc.want || resp.Trace.RouteModel != tc.want {
				t.Errorf("answered by %q (%q), trace model %q; want %q", resp.Model, resp.Content, resp.Trace.RouteModel, tc.want)
			}
			if resp.Trace.RouteDur < 0 {
				t.Errorf("RouteDur = %v; want >= 0", resp.Trace.RouteDur)
			}
		})
	}
}

func BenchmarkRouter(b *testing.B) {
	mw, err := New(Config{Threshold: 0.5, Small: "small", Large: "large"}, nil)
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	resp := &model.Response{}
	stack := mw(model.ModelFunc(func(context.Context, *model.Request) (*model.Response, error) { return resp, nil }))
	for _, bt := range benchTickets {
		req := &model.Request{Text: bt.text, Scope: model.Scope{Lang: bt.lang}}
		b.Run(bt.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if _, err := stack.Complete(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
