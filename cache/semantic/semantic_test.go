package semantic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/embed"
)

// echo answers with the request's text and scope and counts its calls.
type echo struct{ calls atomic.Int64 }

func (e *echo) Complete(_ context.Context, req *model.Request) (*model.Response, error) {
	e.calls.Add(1)
	return &model.Response{Content: "answer to " + req.Text, Model: "large", FinishReason: model.FinishStop, Scope: req.Scope}, nil
}

func guarded(t testing.TB) Embedder {
	t.Helper()
	h, err := embed.NewHashed(embed.HashedConfig{Guards: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func newStack(t testing.TB, cfg Config, emb Embedder) (*Cache, model.Model, *echo) {
	t.Helper()
	c, err := New(cfg, emb)
	if err != nil {
		t.Fatal(err)
	}
	be := &echo{}
	return c, model.Chain(be, c.Middleware()), be
}

func req(text, tenant string) *model.Request {
	return &model.Request{Text: text, Model: "large", Mode: model.ModeFull,
		Scope: model.Scope{Tenant: tenant, Permission: "agent", Lang: "en", DocVersion: "v1"}}
}

const q = "How do I export all invoices of 2024 as one CSV file?"

func TestParaphraseHitsHardNegativeMisses(t *testing.T) {
	t.Parallel()
	for _, index := range []string{IndexExact, IndexSketch, IndexHNSW, IndexAuto} {
		t.Run(index, func(t *testing.T) {
			t.Parallel()
			c, m, _ := newStack(t, Config{Threshold: 0.9, CheckOnHit: true, Index: index}, guarded(t))
			ctx := context.Background()
			if r, _ := m.Complete(ctx, req(q, "acme")); r.Trace.Cache != model.CacheMiss {
				t.Fatalf("first: %s; want miss", r.Trace.Cache)
			}
			for _, p := range []string{q, "Hi team, how can I export all invoices of 2024 as one CSV file? Thanks!", "How do I exprot all invoices of 2024 as one CSV file?"} {
				r, err := m.Complete(ctx, req(p, "acme"))
				if err != nil || r.Trace.Cache != model.CacheHit || r.Content != "answer to "+q {
					t.Fatalf("%q: %s %q (%v); want a hit with the stored answer", p, r.Trace.Cache, r.Content, err)
				}
				if r.Trace.Similarity < 0.9 || r.Trace.Similarity > 1.0001 {
					t.Errorf("%q: similarity %v; want in [0.9, 1]", p, r.Trace.Similarity)
				}
			}
			for _, n := range []string{
				"How do I export all invoices of 2025 as one CSV file?",
				"How do I not export all invoices of 2024 as one CSV file?",
				"How do I export all invoices of 2024 as one PDF file?",
			} {
				if r, _ := m.Complete(ctx, req(n, "acme")); r.Trace.Cache != model.CacheMiss {
					t.Errorf("hard negative %q: %s (similarity %v); want miss", n, r.Trace.Cache, r.Trace.Similarity)
				}
			}
			if st := c.Counters(); st.SimilarHits != 2 {
				t.Errorf("similar hits %d; want 2", st.SimilarHits)
			}
		})
	}
}

// Scope is a partition: the same text from another tenant, permission,
// system prompt or history never reaches the entry, whatever the check.
func TestPartitionIsHard(t *testing.T) {
	t.Parallel()
	for _, check := range []bool{true, false} {
		c, m, _ := newStack(t, Config{Threshold: 0.5, CheckOnHit: check}, guarded(t))
		ctx := context.Background()
		m.Complete(ctx, req(q, "acme"))
		for _, change := range []func(*model.Request){
			func(r *model.Request) { r.Scope.Tenant = "globex" },
			func(r *model.Request) { r.Scope.Permission = "viewer" },
			func(r *model.Request) { r.Scope.DocVersion = "v2" },
			func(r *model.Request) { r.Scope.Lang = "de" },
			func(r *model.Request) { r.System = "Other." },
			func(r *model.Request) { r.History = []model.Message{{Role: model.RoleUser, Content: "x"}} },
			func(r *model.Request) { r.Mode = model.ModeShort },
		} {
			r := req(q, "acme")
			change(r)
			resp, _ := m.Complete(ctx, r)
			if resp.Trace.Cache != model.CacheMiss || resp.Trace.ScopeMismatch {
				t.Errorf("check %v: %+v: %s (mismatch %v); want a plain miss", check, r, resp.Trace.Cache, resp.Trace.ScopeMismatch)
			}
		}
		if st := c.Stats(); st.Leaks.Total() != 0 || st.ScopeMismatches != 0 {
			t.Errorf("stats %+v; want no leaks, nothing refused", st)
		}
	}
}

// A key without scope fields (audits only) shares one partition: the
// check on hit refuses the other tenant's answer; without it, the hit is
// labelled a leak.
func TestWeakKeyCheckedOnHit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, m, _ := newStack(t, Config{Fields: []string{cache.FieldText}, Threshold: 0.9, CheckOnHit: true}, guarded(t))
	m.Complete(ctx, req(q, "acme"))
	if r, _ := m.Complete(ctx, req(q, "globex")); r.Trace.Cache != model.CacheMiss || !r.Trace.ScopeMismatch {
		t.Fatalf("checked: %s, mismatch %v; want a refused hit", r.Trace.Cache, r.Trace.ScopeMismatch)
	}
	c, m, _ := newStack(t, Config{Fields: []string{cache.FieldText}, Threshold: 0.9}, guarded(t))
	m.Complete(ctx, req(q, "acme"))
	if r, _ := m.Complete(ctx, req(q, "globex")); r.Trace.Cache != model.CacheHit || r.Trace.Leak != cache.LeakCrossTenant {
		t.Fatalf("unchecked: %s, leak %q; want a cross-tenant hit", r.Trace.Cache, r.Trace.Leak)
	}
	if st := c.Stats(); st.Leaks.Get(cache.LeakCrossTenant) != 1 {
		t.Fatalf("leaks %+v; want 1 cross-tenant", st.Leaks)
	}
}

// An embedder that fails is a counted error served as a miss; nothing is
// stored and nothing is ever a hit.
func TestEmbedFailureIsAMiss(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	fail.Store(true)
	h := guarded(t)
	emb := EmbedderFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
		if fail.Load() {
			return nil, fmt.Errorf("%w: HTTP 503", embed.ErrEmbed)
		}
		return h.Embed(ctx, texts)
	})
	c, m, be := newStack(t, Config{Threshold: 0.9, CheckOnHit: true}, emb)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		r, err := m.Complete(ctx, req(q, "acme"))
		if err != nil || r.Trace.Cache != model.CacheMiss || r.Content == "" {
			t.Fatalf("call %d: %s, %v; want a miss answered by the model", i, r.Trace.Cache, err)
		}
	}
	if st := c.Stats(); st.Unavailable != 3 || st.Stored != 0 || st.Hits != 0 || be.calls.Load() != 3 {
		t.Fatalf("stats %+v, model calls %d; want 3 errors, nothing stored, 3 calls", st, be.calls.Load())
	}
	// Vectors of the wrong shape are failures too.
	bad := EmbedderFunc(func(context.Context, []string) ([][]float32, error) { return [][]float32{}, nil })
	c2, m2, _ := newStack(t, Config{Threshold: 0.9}, bad)
	m2.Complete(ctx, req(q, "acme"))
	if c2.Stats().Unavailable != 1 {
		t.Fatalf("no vector: unavailable %d; want 1", c2.Stats().Unavailable)
	}
	fail.Store(false)
	m.Complete(ctx, req(q, "acme"))
	if r, _ := m.Complete(ctx, req(q, "acme")); r.Trace.Cache != model.CacheHit {
		t.Fatalf("after recovery: %s; want hit", r.Trace.Cache)
	}
}

func TestTTLAndEviction(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	_, m, _ := newStack(t, Config{Threshold: 0.9, TTL: time.Hour, Now: clock}, guarded(t))
	ctx := context.Background()
	m.Complete(ctx, req(q, "acme"))
	now = now.Add(59 * time.Minute)
	if r, _ := m.Complete(ctx, req(q, "acme")); r.Trace.Cache != model.CacheHit {
		t.Fatalf("before TTL: %s; want hit", r.Trace.Cache)
	}
	now = now.Add(2 * time.Minute)
	if r, _ := m.Complete(ctx, req(q, "acme")); r.Trace.Cache != model.CacheMiss {
		t.Fatalf("after TTL: %s; want miss", r.Trace.Cache)
	}

	c, m, _ := newStack(t, Config{Threshold: 0.99, MaxEntries: 2}, guarded(t))
	for i := 0; i < 3; i++ {
		m.Complete(ctx, req(fmt.Sprintf("Where is order %d?", i), "acme"))
	}
	if r, _ := m.Complete(ctx, req("Where is order 0?", "acme")); r.Trace.Cache != model.CacheMiss {
		t.Fatalf("evicted entry: %s; want miss", r.Trace.Cache)
	}
	if st := c.Counters(); st.Evicted < 1 || st.Entries > 2 {
		t.Fatalf("stats %+v; want at most 2 entries and an eviction", st)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{Threshold: 0}, {Threshold: 1.5}, {Threshold: 0.9, Index: "kd"}, {Threshold: 0.9, TTL: -1}, {Threshold: 0.9, Fields: []string{"tenant"}}} {
		if _, err := New(cfg, guarded(t)); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if _, err := New(Config{Threshold: 0.9}, nil); !errors.Is(err, ErrBadConfig) {
		t.Errorf("no embedder: %v; want ErrBadConfig", err)
	}
	if _, err := OpenEmbedder(EmbedderConfig{Kind: "word2vec"}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("unknown embedder: %v; want ErrBadConfig", err)
	}
}

// An OpenAI-compatible endpoint that fails (HTTP 500, or a body that is
// not an embeddings answer) is a counted error served as a miss.
func TestOpenAIEmbedderFailureIsAMiss(t *testing.T) {
	t.Parallel()
	for _, h := range []http.HandlerFunc{
		func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"error":{"message":"down"}}`, http.StatusInternalServerError)
		},
		func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"object":"list","data":[]}`)) },
	} {
		hs := httptest.NewServer(h)
		emb, err := OpenEmbedder(EmbedderConfig{Kind: EmbedOpenAI, BaseURL: hs.URL + "/v1", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		c, m, _ := newStack(t, Config{Threshold: 0.9, CheckOnHit: true}, emb)
		for i := 0; i < 2; i++ {
			if r, err := m.Complete(context.Background(), req(q, "acme")); err != nil || r.Trace.Cache != model.CacheMiss {
				t.Fatalf("call %d: %s, %v; want a miss", i, r.Trace.Cache, err)
			}
		}
		if st := c.Stats(); st.Unavailable != 2 || st.Hits != 0 || st.Stored != 0 {
			t.Fatalf("stats %+v; want 2 errors, no hit, nothing stored", st)
		}
		hs.Close()
	}
}

// The auto index moves from exact search to the sketch index as a
// partition grows, and keeps finding what exact search finds.
func TestAutoIndexMoves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, m, _ := newStack(t, Config{Threshold: 0.9, SketchAt: 8}, guarded(t))
	for i := 0; i < 40; i++ {
		m.Complete(ctx, req(fmt.Sprintf("Why was invoice INV-%04d charged twice?", i), "acme"))
	}
	for i := 0; i < 40; i += 7 {
		r, _ := m.Complete(ctx, req(fmt.Sprintf("Hello, why was invoice INV-%04d charged twice? Thanks", i), "acme"))
		if r.Trace.Cache != model.CacheHit || r.Content != fmt.Sprintf("answer to Why was invoice INV-%04d charged twice?", i) {
			t.Fatalf("paraphrase of %d: %s %q", i, r.Trace.Cache, r.Content)
		}
	}
	p := c.parts[partitionKey(c.spec, req("x", "acme"))]
	if a, ok := p.idx.(*autoIndex); !ok || a.exact != nil {
		t.Fatalf("index %T; want an auto index past its exact stage", p.idx)
	}
}

// Concurrent lookups and inserts on every index kind (run with -race).
func TestConcurrent(t *testing.T) {
	t.Parallel()
	for _, index := range []string{IndexExact, IndexSketch, IndexHNSW, IndexAuto} {
		_, m, _ := newStack(t, Config{Threshold: 0.9, Index: index, SketchAt: 16, MaxEntries: 64}, guarded(t))
		done := make(chan struct{})
		for g := 0; g < 4; g++ {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := 0; i < 60; i++ {
					m.Complete(context.Background(), req(fmt.Sprintf("Where is order %d of %d?", i%20, g%2), "acme"))
				}
			}()
		}
		for g := 0; g < 4; g++ {
			<-done
		}
	}
}
