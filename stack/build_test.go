package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
)

// validAnswer meets the embedded triage contract.
const validAnswer = `{"category":"billing","reason":"Charged twice.","evidence":["charged twice"],"risk_flags":[],"suggested_action":"Refund one charge.","needs_human_review":false,"background":null}`

// recorder is a fake backend set: every call is recorded by model name,
// and each model answers by a function of its call count.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) model(name string, answer func(n int) (*model.Response, error)) model.Model {
	var n atomic.Int64
	return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		r.mu.Lock()
		r.calls = append(r.calls, name)
		r.mu.Unlock()
		resp, err := answer(int(n.Add(1)))
		if resp != nil {
			resp.Model = name
			resp.Trace.Attempts = 1
		}
		return resp, err
	})
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func ok(conf float64) func(int) (*model.Response, error) {
	return func(int) (*model.Response, error) {
		return &model.Response{Content: validAnswer, FinishReason: model.FinishStop, Confidence: conf}, nil
	}
}

// scored counts the router's scoring calls, to show which requests reach
// the router.
var scored atomic.Int64

// testTable is Builtin with the counting scorer added, as any program
// adds a scorer: one entry of its own table.
func testTable() *Table {
	tbl := Builtin()
	tbl.Scorers = append(tbl.Scorers, ScorerKind{Name: "stack-test-counting", Help: "counts its calls", New: func() (router.Scorer, error) {
		return router.ScorerFunc(func(*model.Request) router.Score {
			scored.Add(1)
			return router.Score{Value: 0.9}
		}), nil
	}})
	return tbl
}

func loadContract(t *testing.T) *contract.Contract {
	t.Helper()
	path := filepath.Join("..", "fixtures", "triage.schema.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := contract.Load(path, raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func validated(t *testing.T, models []ModelSpec, arm ArmSpec) ArmSpec {
	t.Helper()
	arms := []ArmSpec{arm}
	if errs := testTable().Validate(models, arms); len(errs) > 0 {
		t.Fatalf("Validate: %v", errs)
	}
	return arms[0]
}

var simModels = []ModelSpec{{Name: "small", Kind: "small"}, {Name: "large", Kind: "large"}}

func request(id string) *model.Request {
	return &model.Request{TaskID: id, Text: "My invoice was charged twice.", Scope: model.Scope{Tenant: "acme", Permission: "agent"}, Mode: model.ModeFull}
}

// TestBuildCacheHitSkipsLayers: a hit is answered by the cache alone; the
// router, contract and backend see only the miss.
func TestBuildCacheHitSkipsLayers(t *testing.T) {
	rec := &recorder{}
	backends := map[string]model.Model{"small": rec.model("small", ok(1)), "large": rec.model("large", ok(1))}
	spec := validated(t, simModels, ArmSpec{Name: "a", Cache: &CacheSpec{}, Router: &RouterSpec{Small: "small", Large: "large", Threshold: 0.5, Scorer: "stack-test-counting"}})
	arm, err := testTable().Build(spec, backends, Options{Contract: loadContract(t), WaitForStore: true})
	if err != nil {
		t.Fatal(err)
	}
	defer arm.Close()
	before := scored.Load()
	first, err := arm.Model.Complete(context.Background(), request("t1"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Trace.Cache != model.CacheMiss || !first.Trace.Routed || !first.Trace.Validated {
		t.Fatalf("first: cache %q routed %v validated %v; want a routed, validated miss", first.Trace.Cache, first.Trace.Routed, first.Trace.Validated)
	}
	second, err := arm.Model.Complete(context.Background(), request("t2"))
	if err != nil {
		t.Fatal(err)
	}
	if second.Trace.Cache != model.CacheHit {
		t.Fatalf("second: cache %q; want %q", second.Trace.Cache, model.CacheHit)
	}
	if got := rec.got(); len(got) != 1 || got[0] != "large" {
		t.Errorf("backend calls %v; want [large]", got)
	}
	if got := scored.Load() - before; got != 1 {
		t.Errorf("router scored %d requests; want 1 (the hit skips the router)", got)
	}
	if arm.Judge == nil {
		t.Error("Judge is nil for a router arm")
	}
	if m := arm.CacheMetrics(); m == nil || m.Cache.Hits != 1 {
		t.Errorf("CacheMetrics %+v; want one hit", m)
	}
}

// TestBuildCascade: cascade mode builds the cascade (small first, large on
// an unconfident answer) and no threshold router.
func TestBuildCascade(t *testing.T) {
	rec := &recorder{}
	backends := map[string]model.Model{"small": rec.model("small", ok(0.5)), "large": rec.model("large", ok(1))}
	spec := validated(t, simModels, ArmSpec{Name: "c", Router: &RouterSpec{Mode: router.PolicyCascade, Small: "small", Large: "large", Confidence: 0.8}})
	arm, err := Build(spec, backends, Options{Contract: loadContract(t)})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := arm.Model.Complete(context.Background(), request("t1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.got(); len(got) != 2 || got[0] != "small" || got[1] != "large" {
		t.Errorf("backend calls %v; want [small large]", got)
	}
	if !resp.Trace.Escalated || resp.Model != "large" {
		t.Errorf("escalated %v model %q; want an escalation to large", resp.Trace.Escalated, resp.Model)
	}
}

// TestBuildRetry: retry repeats a failed backend call up to MaxAttempts,
// below the contract, and counts every attempt; a permanent error is not
// repeated.
func TestBuildRetry(t *testing.T) {
	down := fmt.Errorf("%w: backend down", model.ErrBackend)
	for _, tc := range []struct {
		name      string
		attempts  int
		failFirst int
		err       error
		wantCalls int
		wantErr   bool
	}{
		{name: "no retry", attempts: 1, failFirst: 1, err: down, wantCalls: 1, wantErr: true},
		{name: "retry succeeds", attempts: 3, failFirst: 2, err: down, wantCalls: 3},
		{name: "retries exhausted", attempts: 2, failFirst: 5, err: down, wantCalls: 2, wantErr: true},
		{name: "permanent error", attempts: 3, failFirst: 5, err: model.ErrUnknownModel, wantCalls: 1, wantErr: true},
		{name: "not a backend error", attempts: 3, failFirst: 5, err: errors.New("bad request"), wantCalls: 1, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			flaky := func(n int) (*model.Response, error) {
				if n <= tc.failFirst {
					return &model.Response{}, tc.err // a failed call still reports its attempt
				}
				return ok(1)(n)
			}
			backends := map[string]model.Model{"large": rec.model("large", flaky)}
			spec := validated(t, []ModelSpec{{Name: "large", Kind: "large"}}, ArmSpec{Name: "r", Model: "large"})
			arm, err := Build(spec, backends, Options{Contract: loadContract(t), Retry: RetrySpec{MaxAttempts: tc.attempts}})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := arm.Model.Complete(context.Background(), request("t1"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v; want error %v", err, tc.wantErr)
			}
			if got := len(rec.got()); got != tc.wantCalls {
				t.Errorf("backend calls %d; want %d", got, tc.wantCalls)
			}
			if !tc.wantErr && resp.Trace.Attempts != tc.wantCalls {
				t.Errorf("Trace.Attempts %d; want %d", resp.Trace.Attempts, tc.wantCalls)
			}
		})
	}
}

// TestBuildDeadlineAndCap: the deadline covers the wait for a backend slot,
// and the wait is reported as queue time.
func TestBuildDeadlineAndCap(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	slow := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		started <- struct{}{}
		select {
		case <-release:
			return &model.Response{Content: validAnswer, Model: "large", Trace: model.Trace{Attempts: 1}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	spec := validated(t, []ModelSpec{{Name: "large", Kind: "large"}}, ArmSpec{Name: "d", Model: "large"})
	arm, err := Build(spec, map[string]model.Model{"large": slow}, Options{Timeout: 50 * time.Millisecond, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := arm.Model.Complete(context.Background(), request("holder"))
		done <- err
	}()
	<-started
	ctx, info := WithInfo(context.Background())
	_, err = arm.Model.Complete(ctx, request("waiter"))
	if !errors.Is(err, context.DeadlineExceeded) || !info.TimedOut {
		t.Errorf("waiter: err %v timed out %v; want the deadline to pass while queued", err, info.TimedOut)
	}
	close(release)
	<-done
}

// TestBuildStoreRegistry: the cache spec's store kind is opened through the
// cache registry.
func TestBuildStoreRegistry(t *testing.T) {
	spec := validated(t, []ModelSpec{{Name: "large", Kind: "large"}}, ArmSpec{Name: "s", Model: "large", Cache: &CacheSpec{Store: cache.StoreRistretto}})
	arm, err := Build(spec, map[string]model.Model{"large": (&recorder{}).model("large", ok(1))}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer arm.Close()
	if _, isRistretto := arm.Store.(*cache.Ristretto); !isRistretto {
		t.Errorf("store %T; want *cache.Ristretto", arm.Store)
	}
}

// BenchmarkBuild measures the stack's own overhead per request over a
// backend that answers at once: a cache hit, and a routed, validated miss.
func BenchmarkBuild(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "fixtures", "triage.schema.json"))
	if err != nil {
		b.Fatal(err)
	}
	c, err := contract.Load("triage.schema.json", raw)
	if err != nil {
		b.Fatal(err)
	}
	answer := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Content: validAnswer, Model: "large", FinishReason: model.FinishStop, Confidence: 1, Trace: model.Trace{Attempts: 1}}, nil
	})
	backends := map[string]model.Model{"small": answer, "large": answer}
	for _, v := range []struct {
		name  string
		cache *CacheSpec
	}{{"hit", &CacheSpec{}}, {"miss", nil}} {
		b.Run(v.name, func(b *testing.B) {
			arms := []ArmSpec{{Name: "a", Cache: v.cache, Router: &RouterSpec{Small: "small", Large: "large", Threshold: 0.5}}}
			if errs := Validate(simModels, arms); errs != nil {
				b.Fatal(errs)
			}
			arm, err := Build(arms[0], backends, Options{Contract: c, Retry: RetrySpec{MaxAttempts: 2}, WaitForStore: true})
			if err != nil {
				b.Fatal(err)
			}
			defer arm.Close()
			if _, err := arm.Model.Complete(context.Background(), request("warm")); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req := request("bench")
				for pb.Next() {
					if _, err := arm.Model.Complete(context.Background(), req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// A semantic cache arm serves a reworded question from the cache and
// records the similarity; its metrics carry the semantic counters.
func TestBuildSemanticCache(t *testing.T) {
	rec := &recorder{}
	backends := map[string]model.Model{"large": rec.model("large", ok(1))}
	spec := validated(t, simModels, ArmSpec{Name: "s", Model: "large", Cache: &CacheSpec{Kind: cache.KindSemantic, Settings: semantic.Settings{Threshold: 0.9}}})
	arm, err := Build(spec, backends, Options{Contract: loadContract(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer arm.Close()
	first := request("t1")
	first.Text = "How do I export all invoices of 2024 as one CSV file?"
	if r, err := arm.Model.Complete(context.Background(), first); err != nil || r.Trace.Cache != model.CacheMiss {
		t.Fatalf("first: %v %v; want a miss", r.Trace.Cache, err)
	}
	second := request("t2")
	second.Text = "Hello, how can I export all invoices of 2024 as one CSV file?"
	r, err := arm.Model.Complete(context.Background(), second)
	if err != nil || r.Trace.Cache != model.CacheHit || r.Trace.Similarity < 0.9 {
		t.Fatalf("paraphrase: %s, similarity %v, %v; want a hit at >= 0.9", r.Trace.Cache, r.Trace.Similarity, err)
	}
	if arm.Store != nil {
		t.Errorf("a semantic arm opened a store")
	}
	if m := arm.CacheMetrics(); m == nil || m.Cache.Hits != 1 || m.Semantic == nil || m.Semantic.SimilarHits != 1 {
		t.Fatalf("metrics %+v; want one similar hit", m)
	}
	if got := rec.got(); len(got) != 1 {
		t.Errorf("backend calls %v; want one", got)
	}
}
