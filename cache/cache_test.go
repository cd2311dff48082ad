package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// fakeClock is an injected clock: each reading advances it by step, so the
// cache's own durations are non-zero and deterministic; Advance jumps ahead.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), step: time.Microsecond}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// answer is what the fake model says for req: it names everything the
// answer was built from, so a served answer can be checked against the request.
func answer(req *model.Request) string {
	return fmt.Sprintf("answer to %q for %s/%s/%s/%s", req.Text, req.Scope.Tenant, req.Scope.Permission, req.Scope.Lang, req.Scope.DocVersion)
}

// fakeNext is the inner stack: a ModelFunc counting its calls. respond, when
// set, overrides the good answer.
type fakeNext struct {
	calls   atomic.Int64
	respond func(req *model.Request) (*model.Response, error)
}

func (f *fakeNext) model() model.Model {
	return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		f.calls.Add(1)
		if f.respond != nil {
			return f.respond(req)
		}
		return goodResponse(req), nil
	})
}

func goodResponse(req *model.Request) *model.Response {
	return &model.Response{
		Content:      answer(req),
		Model:        "large",
		FinishReason: model.FinishStop,
		Usage:        model.Usage{TokensIn: 100, TokensOut: 40, Cost: 0.5},
		Scope:        req.Scope,
		Trace: model.Trace{
			Attempts: 1, ModelDur: 80 * time.Millisecond, TTFT: 30 * time.Millisecond,
			Validated: true, ContractOK: true, ValidateDur: time.Millisecond,
			Routed: true, RouteModel: "large", RouteScore: 0.7,
		},
	}
}

type harness struct {
	cache *Cache
	store *Ristretto
	next  *fakeNext
	stack model.Model
	clock *fakeClock
}

func newHarness(t testing.TB, cfg Config) *harness {
	t.Helper()
	store, err := NewRistretto(RistrettoConfig{NumCounters: 1 << 12, MaxCost: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	clock := newClock()
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	cfg.WaitForStore = true // each request sees what the one before it stored
	c, err := New(cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	next := &fakeNext{}
	return &harness{cache: c, store: store, next: next, stack: model.Chain(next.model(), c.Middleware()), clock: clock}
}

func (h *harness) do(t testing.TB, req *model.Request) *model.Response {
	t.Helper()
	resp, err := h.stack.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return resp
}

func scopeReq(text, tenant, perm, lang, doc string) *model.Request {
	return &model.Request{
		Text: text, Model: "large", Mode: model.ModeFull, MaxTokens: 400, ContractHash: "c1",
		Scope: model.Scope{Tenant: tenant, Permission: perm, Lang: lang, DocVersion: doc},
	}
}

func TestHitAfterMiss(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{Fields: []string{PresetFull}, CheckOnHit: true})
	req := scopeReq("I was charged twice", "acme", "agent", "en-US", "v2")

	first := h.do(t, req)
	if first.Trace.Cache != model.CacheMiss {
		t.Fatalf("first Cache = %q; want miss", first.Trace.Cache)
	}
	if first.Trace.CacheDur <= 0 {
		t.Fatalf("miss CacheDur = %v; want > 0", first.Trace.CacheDur)
	}
	if first.Usage.TokensOut != 40 || first.Trace.Attempts != 1 || first.Trace.RouteModel != "large" {
		t.Fatalf("miss lost the inner trace: usage %+v, trace %+v", first.Usage, first.Trace)
	}

	// Same question, same scope, a locale spelling of the same language.
	again := req.Clone()
	again.Scope.Lang = "en_us"
	again.Text = "  I was charged\ttwice "
	hit := h.do(t, again)
	if got := h.next.calls.Load(); got != 1 {
		t.Fatalf("next called %d times; want 1", got)
	}
	tr := hit.Trace
	checks := []struct {
		name      string
		got, want any
	}{
		{"Cache", tr.Cache, model.CacheHit},
		{"Leak", tr.Leak, ""},
		{"ScopeMismatch", tr.ScopeMismatch, false},
		{"Content", hit.Content, first.Content},
		{"Model", hit.Model, "large"},
		{"FinishReason", hit.FinishReason, model.FinishStop},
		{"Scope", hit.Scope, req.Scope},
		{"Usage", hit.Usage, model.Usage{}},
		{"Attempts", tr.Attempts, 0},
		{"ModelDur", tr.ModelDur, time.Duration(0)},
		{"TTFT", tr.TTFT, tr.CacheDur},
		{"Validated", tr.Validated, true},
		{"ContractOK", tr.ContractOK, true},
		{"ValidateDur", tr.ValidateDur, time.Duration(0)},
		{"Routed", tr.Routed, false},
		{"RouteModel", tr.RouteModel, ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("hit %s = %v; want %v", c.name, c.got, c.want)
		}
	}
	if tr.CacheDur <= 0 {
		t.Errorf("hit CacheDur = %v; want > 0", tr.CacheDur)
	}
	st := h.cache.Stats()
	if st.Hits != 1 || st.Misses != 1 || st.Stored != 1 || st.Leaks.Total() != 0 {
		t.Errorf("Stats = %+v; want 1 hit, 1 miss, 1 stored, no leaks", st)
	}
	if m := h.store.Metrics(); m.KeysAdded != 1 || m.Hits != 1 {
		t.Errorf("store metrics = %+v; want 1 key added, 1 hit", m)
	}
}

func TestNaiveTextKeyServesAcrossScopes(t *testing.T) {
	t.Parallel()
	stored := scopeReq("Where is my refund?", "acme", "admin", "en-US", "v2")
	tests := []struct {
		name   string
		change func(*model.Request)
		want   string
	}{
		{"same scope", func(*model.Request) {}, ""},
		{"other tenant", func(r *model.Request) { r.Scope.Tenant = "globex" }, LeakCrossTenant},
		{"lower permission", func(r *model.Request) { r.Scope.Permission = "viewer" }, LeakPermission},
		{"newer document version", func(r *model.Request) { r.Scope.DocVersion = "v3" }, LeakStale},
		{"older document version", func(r *model.Request) { r.Scope.DocVersion = "v1" }, LeakStale},
		{"other language", func(r *model.Request) { r.Scope.Lang = "zh-CN" }, LeakLanguage},
		{"bare language", func(r *model.Request) { r.Scope.Lang = "en" }, LeakLanguage},
		{"tenant and permission: tenant first", func(r *model.Request) { r.Scope.Tenant, r.Scope.Permission = "globex", "viewer" }, LeakCrossTenant},
		{"version and language: stale first", func(r *model.Request) { r.Scope.DocVersion, r.Scope.Lang = "v1", "de" }, LeakStale},
		{"other system prompt", func(r *model.Request) { r.System = "You answer for the security team." }, LeakSystemPrompt},
		{"system prompt white space only", func(r *model.Request) { r.System = "  " }, ""},
		{"other history", func(r *model.Request) {
			r.History = []model.Message{{Role: model.RoleUser, Content: "I was charged twice."}, {Role: model.RoleAssistant, Content: "Which order?"}}
		}, LeakHistory},
		{"system prompt and history: system first", func(r *model.Request) {
			r.System, r.History = "Other.", []model.Message{{Role: model.RoleUser, Content: "x"}}
		}, LeakSystemPrompt},
		{"language and history: language first", func(r *model.Request) {
			r.Scope.Lang, r.History = "de", []model.Message{{Role: model.RoleUser, Content: "x"}}
		}, LeakLanguage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Config{Fields: []string{PresetText}, CheckOnHit: false})
			h.do(t, stored)
			req := stored.Clone()
			tc.change(req)
			resp := h.do(t, req)
			if resp.Trace.Cache != model.CacheHit {
				t.Fatalf("Cache = %q; want hit (the naive key ignores scope)", resp.Trace.Cache)
			}
			if resp.Trace.Leak != tc.want {
				t.Fatalf("Leak = %q; want %q", resp.Trace.Leak, tc.want)
			}
			if resp.Scope != stored.Scope {
				t.Fatalf("served Scope = %+v; want the provenance %+v", resp.Scope, stored.Scope)
			}
			if resp.Content != answer(stored) {
				t.Fatalf("served Content = %q; want the stored answer", resp.Content)
			}
			st := h.cache.Stats()
			wantLeaks := uint64(0)
			if tc.want != "" {
				wantLeaks = 1
			}
			if st.Leaks.Total() != wantLeaks {
				t.Fatalf("Stats.Leaks = %+v; want total %d", st.Leaks, wantLeaks)
			}
		})
	}
}

// With check on hit, a text key refuses an answer built under another
// system prompt or after another history, as it refuses another scope.
func TestCheckOnHitRefusesOtherConversation(t *testing.T) {
	t.Parallel()
	stored := scopeReq("Where is my refund?", "acme", "admin", "en-US", "v2")
	stored.History = []model.Message{{Role: model.RoleUser, Content: "Order 7 was returned."}}
	for _, change := range []func(*model.Request){
		func(r *model.Request) { r.System = "Be brief." },
		func(r *model.Request) { r.History = nil },
		func(r *model.Request) {
			r.History = []model.Message{{Role: model.RoleAssistant, Content: "Order 7 was returned."}}
		},
	} {
		h := newHarness(t, Config{Fields: []string{PresetText}, CheckOnHit: true})
		h.do(t, stored)
		if resp := h.do(t, stored.Clone()); resp.Trace.Cache != model.CacheHit {
			t.Errorf("same conversation: cache %q; want hit", resp.Trace.Cache)
		}
		req := stored.Clone()
		change(req)
		if resp := h.do(t, req); resp.Trace.Cache != model.CacheMiss || !resp.Trace.ScopeMismatch {
			t.Errorf("cache %q, mismatch %v; want a refused hit", resp.Trace.Cache, resp.Trace.ScopeMismatch)
		}
	}
}

// scopeVariants is one question asked under every scope difference the leak
// kinds name.
func scopeVariants(text string) []*model.Request {
	var out []*model.Request
	for _, tenant := range []string{"acme", "globex"} {
		for _, perm := range []string{"admin", "viewer"} {
			for _, lang := range []string{"en-US", "zh-CN", "en"} {
				for _, doc := range []string{"v1", "v2"} {
					out = append(out, scopeReq(text, tenant, perm, lang, doc))
				}
			}
		}
	}
	return out
}

func TestCheckedKeysNeverLeak(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		fields       string
		check        bool
		wantMismatch bool // a weak key finds entries of other scopes and must refuse them
	}{
		{"full with check", "full", true, false},
		{"full without check", "full", false, false},
		{"text with check", "text", true, true},
		{"tenant and text with check", "tenant,text", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fields, err := ParseFields(tc.fields)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, Config{Fields: fields, CheckOnHit: tc.check})
			reqs := append(scopeVariants("Can I see the admin audit log?"), scopeVariants("Reset my password")...)
			var hits, mismatches int
			for round := 0; round < 3; round++ {
				for _, req := range reqs {
					resp := h.do(t, req)
					if resp.Trace.Leak != "" {
						t.Fatalf("round %d %+v: Leak = %q; want none", round, req.Scope, resp.Trace.Leak)
					}
					if LeakKind(resp.Scope, req.Scope) != "" || resp.Content != answer(req) {
						t.Fatalf("round %d %+v: served %q built for %+v", round, req.Scope, resp.Content, resp.Scope)
					}
					if resp.Trace.Cache == model.CacheHit {
						hits++
					}
					if resp.Trace.ScopeMismatch {
						mismatches++
						if resp.Trace.Cache != model.CacheMiss {
							t.Fatalf("refused hit recorded as %q; want miss", resp.Trace.Cache)
						}
					}
				}
			}
			if hits == 0 && !tc.wantMismatch {
				t.Fatalf("no hits at all; want repeats of the same scope to hit")
			}
			if got := mismatches > 0; got != tc.wantMismatch {
				t.Fatalf("scope mismatches = %d; want some = %v", mismatches, tc.wantMismatch)
			}
			st := h.cache.Stats()
			if st.Leaks.Total() != 0 || st.ScopeMismatches != uint64(mismatches) {
				t.Fatalf("Stats = %+v; want no leaks and %d mismatches", st, mismatches)
			}
			if tc.wantMismatch && st.Refused.Total() == 0 {
				t.Fatalf("Stats.Refused = %+v; want the refused kinds counted", st.Refused)
			}
		})
	}
}

func TestCollidingHash(t *testing.T) {
	t.Parallel()
	collide := func([]byte) uint64 { return 42 }
	reqs := []*model.Request{
		scopeReq("How do I export invoices?", "acme", "agent", "en", "v1"),
		scopeReq("How do I delete my account?", "acme", "agent", "en", "v1"),
		scopeReq("How do I export invoices?", "globex", "agent", "en", "v1"),
		scopeReq("How do I export invoices?", "acme", "agent", "en", "v1"),
	}
	tests := []struct {
		name      string
		check     bool
		wantWrong bool
	}{
		{"check on hit serves no wrong answer", true, false},
		{"without check a collision serves a wrong answer", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Config{Fields: []string{PresetFull}, CheckOnHit: tc.check, Hash: collide})
			wrong := 0
			for round := 0; round < 2; round++ {
				for _, req := range reqs {
					resp := h.do(t, req)
					if resp.Content != answer(req) {
						wrong++
					}
				}
			}
			if got := wrong > 0; got != tc.wantWrong {
				t.Fatalf("wrong answers served = %d; want some = %v", wrong, tc.wantWrong)
			}
			if st := h.cache.Stats(); st.KeyCollisions == 0 {
				t.Fatalf("Stats.KeyCollisions = 0; want collisions counted (%+v)", st)
			}
		})
	}
}

func TestUncacheableAnswers(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("backend down")
	tests := []struct {
		name    string
		respond func(req *model.Request) (*model.Response, error)
		wantErr error
	}{
		{"error without response", func(*model.Request) (*model.Response, error) {
			return nil, fmt.Errorf("%w: %w", model.ErrBackend, errBoom)
		}, model.ErrBackend},
		{"error with partial response", func(req *model.Request) (*model.Response, error) {
			return goodResponse(req), errBoom
		}, errBoom},
		{"truncated", func(req *model.Request) (*model.Response, error) {
			r := goodResponse(req)
			r.FinishReason = model.FinishLength
			return r, nil
		}, nil},
		{"refusal", func(req *model.Request) (*model.Response, error) {
			r := goodResponse(req)
			r.FinishReason = model.FinishRefusal
			return r, nil
		}, nil},
		{"contract failing", func(req *model.Request) (*model.Response, error) {
			r := goodResponse(req)
			r.Content = "not the contract's JSON"
			return r, nil
		}, nil},
		{"empty content", func(req *model.Request) (*model.Response, error) {
			r := goodResponse(req)
			r.Content = ""
			return r, nil
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Config{Fields: []string{PresetFull}, CheckOnHit: true, Validate: meetsContract})
			h.next.respond = tc.respond
			req := scopeReq("Ticket 17", "acme", "agent", "en", "v1")
			for i := 0; i < 2; i++ {
				resp, err := h.stack.Complete(context.Background(), req)
				if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
					t.Fatalf("call %d error = %v; want %v", i, err, tc.wantErr)
				}
				if resp == nil || resp.Trace.Cache != model.CacheMiss {
					t.Fatalf("call %d response %+v; want one recording a miss", i, resp)
				}
			}
			if got := h.next.calls.Load(); got != 2 {
				t.Fatalf("next called %d times; want 2 (nothing cached)", got)
			}
			if st := h.cache.Stats(); st.Stored != 0 || st.NotCached != 2 || st.Hits != 0 {
				t.Fatalf("Stats = %+v; want 0 stored, 2 not cached, 0 hits", st)
			}
		})
	}
}

func TestTTL(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{Fields: []string{PresetFull}, CheckOnHit: true, TTL: time.Minute})
	req := scopeReq("Is the API down?", "acme", "agent", "en", "v1")
	steps := []struct {
		advance time.Duration
		want    string
	}{
		{0, model.CacheMiss},
		{30 * time.Second, model.CacheHit},
		{29 * time.Second, model.CacheHit},
		{time.Second, model.CacheMiss}, // past one minute since the store: expired, re-stored
		{59 * time.Second, model.CacheHit},
		{2 * time.Second, model.CacheMiss},
	}
	for i, s := range steps {
		h.clock.Advance(s.advance)
		if got := h.do(t, req).Trace.Cache; got != s.want {
			t.Fatalf("step %d (+%v): Cache = %q; want %q", i, s.advance, got, s.want)
		}
	}
	if st := h.cache.Stats(); st.Expired != 2 || st.Stored != 3 {
		t.Fatalf("Stats = %+v; want 2 expired, 3 stored", st)
	}
}

func TestServedResponseIsACopy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{Fields: []string{PresetFull}, CheckOnHit: true})
	req := scopeReq("Change my plan", "acme", "agent", "en", "v1")
	miss := h.do(t, req)
	miss.Content = "tampered by the caller of the miss"
	miss.Scope.Tenant = "evil"

	hit := h.do(t, req)
	if hit.Content != answer(req) || hit.Scope != req.Scope {
		t.Fatalf("hit after the miss was mutated: %q %+v; want the original", hit.Content, hit.Scope)
	}
	hit.Content = "tampered by the caller of the hit"
	hit.Trace.Leak = "x"
	hit.Trace.Violations = append(hit.Trace.Violations, "x")

	again := h.do(t, req)
	if again.Content != answer(req) || again.Trace.Leak != "" || len(again.Trace.Violations) != 0 {
		t.Fatalf("store changed through a served response: %q leak %q violations %v", again.Content, again.Trace.Leak, again.Trace.Violations)
	}
}

func TestUnvouchedEntriesMiss(t *testing.T) {
	t.Parallel()
	// Entries the middleware would never write, put in the store
	// directly: untagged, tagged under another secret, and tagged but
	// carrying a violation list or failing the validator.
	store, err := NewRistretto(RistrettoConfig{NumCounters: 1 << 10, MaxCost: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	secret := []byte("0123456789abcdef0123")
	valid := func(content, _ string) bool { return content != "NOT JSON" }
	c, err := New(Config{Fields: []string{PresetText}, TagKey: secret, Validate: valid, WaitForStore: true}, store)
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(Config{Fields: []string{PresetText}, TagKey: []byte("another-deployment-secret"), WaitForStore: true}, store)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := New(Config{Fields: []string{PresetText}, TagKey: secret, Validate: valid, Contract: "contract v1", WaitForStore: true}, store)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		edit  func(e *Entry)
		tagBy *Cache
		want  UntrustedCounts
	}{
		{"untagged", func(*Entry) {}, nil, UntrustedCounts{BadTag: 1}},
		{"other secret", func(*Entry) {}, other, UntrustedCounts{BadTag: 1}},
		{"violations", func(e *Entry) { e.Response.Trace.Violations = []string{"/a: rule"} }, c, UntrustedCounts{Contract: 1}},
		{"flagged failing", func(e *Entry) { e.Response.Trace.Validated, e.Response.Trace.ContractOK = true, false }, c, UntrustedCounts{Contract: 1}},
		{"truncated", func(e *Entry) { e.Response.FinishReason = "length" }, c, UntrustedCounts{Contract: 1}},
		{"not valid", func(e *Entry) { e.Response.Content = "NOT JSON" }, c, UntrustedCounts{Contract: 1}},
		{"under a contract", func(*Entry) {}, bound, UntrustedCounts{BadTag: 1}},
	}
	for i, tc := range tests {
		req := scopeReq(fmt.Sprintf("q%d", i), "acme", "agent", "en", "v1")
		key := c.Key().Encode(req)
		h := c.hash(key)
		e := &Entry{Key: key, Scope: req.Scope, Conversation: ConversationOf(req), Response: goodResponse(req), Stored: time.Now()}
		tc.edit(e)
		if tc.tagBy != nil {
			e.Tag = tc.tagBy.tags.tag(h, e)
		}
		before := c.Stats().Untrusted
		if !store.Set(context.Background(), h, e, 0) {
			t.Fatal("Set = false; want true")
		}
		store.Wait()
		resp, err := model.Chain((&fakeNext{}).model(), c.Middleware()).Complete(context.Background(), req)
		if err != nil || resp.Trace.Cache != model.CacheMiss {
			t.Errorf("%s: Complete = %v, %v; want a miss", tc.name, resp.Trace.Cache, err)
		}
		got := c.Stats().Untrusted
		got = UntrustedCounts{BadTag: got.BadTag - before.BadTag, Contract: got.Contract - before.Contract, RolledBack: got.RolledBack - before.RolledBack}
		if got != tc.want {
			t.Errorf("%s: untrusted = %+v; want %+v", tc.name, got, tc.want)
		}
	}
}

func TestBypass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fields string
		req    *model.Request
		want   string
	}{
		{"empty text", "full", scopeReq("", "acme", "agent", "en", "v1"), model.CacheBypass},
		{"blank text", "full", scopeReq(" \n\t ", "acme", "agent", "en", "v1"), model.CacheBypass},
		{"scoped key without tenant", "full", scopeReq("hi", "", "agent", "en", "v1"), model.CacheBypass},
		{"scoped key without permission", "tenant,permission,text", scopeReq("hi", "acme", "", "en", "v1"), model.CacheBypass},
		{"text key without tenant is keyed", "text", scopeReq("hi", "", "", "en", "v1"), model.CacheMiss},
		{"tenant key without permission is keyed", "tenant,text", scopeReq("hi", "acme", "", "en", "v1"), model.CacheMiss},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fields, err := ParseFields(tc.fields)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, Config{Fields: fields, CheckOnHit: true})
			for i := 0; i < 2; i++ {
				resp := h.do(t, tc.req)
				want := tc.want
				if i == 1 && want == model.CacheMiss {
					want = model.CacheHit
				}
				if resp.Trace.Cache != want {
					t.Fatalf("call %d Cache = %q; want %q", i, resp.Trace.Cache, want)
				}
			}
			if tc.want == model.CacheBypass {
				if got := h.next.calls.Load(); got != 2 {
					t.Fatalf("next called %d times; want 2", got)
				}
				if st := h.cache.Stats(); st.Bypasses != 2 || st.Stored != 0 {
					t.Fatalf("Stats = %+v; want 2 bypasses, nothing stored", st)
				}
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	store, err := NewRistretto(RistrettoConfig{NumCounters: 1 << 10, MaxCost: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tests := []struct {
		name  string
		cfg   Config
		store Store
		want  error
	}{
		{"nil store", Config{}, nil, ErrBadConfig},
		{"negative TTL", Config{TTL: -time.Second}, store, ErrBadConfig},
		{"unknown field", Config{Fields: []string{"text", "region"}}, store, ErrUnknownField},
		{"no text", Config{Fields: []string{"tenant"}}, store, ErrNoText},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(tc.cfg, tc.store)
			if !errors.Is(err, tc.want) || c != nil {
				t.Fatalf("New = %v, %v; want nil, %v", c, err, tc.want)
			}
		})
	}
	c, err := New(Config{}, store)
	if err != nil {
		t.Fatalf("New(zero Config) error = %v; want nil", err)
	}
	if got, want := c.Key().String(), strings.Join(AllFields(), ","); got != want {
		t.Fatalf("default key = %q; want the full preset %q", got, want)
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp, err := h.stack.Complete(ctx, scopeReq("hi", "acme", "agent", "en", "v1"))
	if !errors.Is(err, context.Canceled) || resp != nil {
		t.Fatalf("Complete = %v, %v; want nil, context.Canceled", resp, err)
	}
	if got := h.next.calls.Load(); got != 0 {
		t.Fatalf("next called %d times; want 0", got)
	}
}

// dropStore refuses every Set, as ristretto does when its buffer is full.
type dropStore struct {
	waits atomic.Int64
}

func (*dropStore) Get(context.Context, uint64) (*Entry, bool)              { return nil, false }
func (*dropStore) Set(context.Context, uint64, *Entry, time.Duration) bool { return false }
func (d *dropStore) Wait()                                                 { d.waits.Add(1) }
func (*dropStore) Metrics() StoreMetrics                                   { return StoreMetrics{} }
func (*dropStore) Close()                                                  {}

func TestDroppedSetIsCounted(t *testing.T) {
	t.Parallel()
	store := &dropStore{}
	c, err := New(Config{WaitForStore: true}, store)
	if err != nil {
		t.Fatal(err)
	}
	stack := model.Chain((&fakeNext{}).model(), c.Middleware())
	for i := 0; i < 3; i++ {
		resp, err := stack.Complete(context.Background(), scopeReq("hi", "acme", "agent", "en", "v1"))
		if err != nil || resp.Trace.Cache != model.CacheMiss {
			t.Fatalf("Complete = %+v, %v; want a miss", resp, err)
		}
	}
	if st := c.Stats(); st.StoreDropped != 3 || st.Stored != 0 {
		t.Fatalf("Stats = %+v; want 3 dropped, 0 stored", st)
	}
	if got := store.waits.Load(); got != 0 {
		t.Fatalf("Wait called %d times; want 0 after dropped sets", got)
	}
}

func TestParallel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fields string
		check  bool
	}{
		{"full checked", "full", true},
		{"text naive", "text", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fields, err := ParseFields(tc.fields)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, Config{Fields: fields, CheckOnHit: tc.check})
			const workers, perWorker = 16, 200
			var wrong, total atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < perWorker; i++ {
						req := scopeReq(fmt.Sprintf("question %d", (w+i)%10), fmt.Sprintf("tenant%d", (w*7+i)%5), "agent", "en", "v1")
						resp, err := h.stack.Complete(context.Background(), req)
						if err != nil {
							t.Errorf("Complete: %v", err)
							return
						}
						total.Add(1)
						if resp.Content != answer(req) {
							wrong.Add(1)
						}
						resp.Content = "mutated" // served copies are the caller's
					}
				}()
			}
			wg.Wait()
			st := h.cache.Stats()
			if got := st.Hits + st.Misses + st.Bypasses; got != uint64(total.Load()) || total.Load() != workers*perWorker {
				t.Fatalf("hits+misses+bypasses = %d, requests = %d; want both %d", got, total.Load(), workers*perWorker)
			}
			if st.Hits == 0 {
				t.Fatalf("no hits in %d requests over 50 questions; want many", total.Load())
			}
			if tc.check && (wrong.Load() != 0 || st.Leaks.Total() != 0) {
				t.Fatalf("checked key served %d wrong answers, leaks %+v; want none", wrong.Load(), st.Leaks)
			}
			if !tc.check && st.Leaks.Get(LeakCrossTenant) == 0 {
				t.Fatalf("naive key leaks = %+v; want cross-tenant leaks", st.Leaks)
			}
			if !tc.check && uint64(wrong.Load()) != st.Leaks.Total() {
				t.Fatalf("wrong answers %d; want them all labelled as leaks (%d)", wrong.Load(), st.Leaks.Total())
			}
		})
	}
}

func TestRistrettoStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := NewRistretto(RistrettoConfig{MaxCost: -1}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("NewRistretto(negative) error = %v; want ErrBadConfig", err)
	}
	s, err := NewRistretto(RistrettoConfig{})
	if err != nil {
		t.Fatalf("NewRistretto(defaults) error = %v", err)
	}
	e := &Entry{Key: []byte("k"), Response: &model.Response{Content: "a"}}
	if s.Set(ctx, 1, e, -time.Second) {
		t.Fatal("Set with negative ttl = true; want false")
	}
	if !s.Set(ctx, 1, e, 0) {
		t.Fatal("Set = false; want true")
	}
	s.Wait()
	if got, ok := s.Get(ctx, 1); !ok || got != e {
		t.Fatalf("Get(1) = %v, %v; want the entry", got, ok)
	}
	if _, ok := s.Get(ctx, 2); ok {
		t.Fatal("Get(2) found an entry; want a miss")
	}
	m := s.Metrics()
	if m.Hits != 1 || m.Misses != 1 || m.KeysAdded != 1 || m.CostAdded == 0 {
		t.Fatalf("Metrics = %+v; want 1 hit, 1 miss, 1 key added, some cost", m)
	}
	s.Close()
	s.Close() // harmless twice
	if _, ok := s.Get(ctx, 1); ok {
		t.Fatal("Get after Close found an entry; want a miss")
	}
	if s.Set(ctx, 3, e, 0) {
		t.Fatal("Set after Close = true; want false")
	}
	s.Wait()
	if m := s.Metrics(); m != (StoreMetrics{}) {
		t.Fatalf("Metrics after Close = %+v; want zero", m)
	}
}

// waitCounter is a Ristretto that counts the middleware's calls to Wait.
type waitCounter struct {
	*Ristretto
	waits atomic.Int64
}

func (w *waitCounter) Wait() {
	w.waits.Add(1)
	w.Ristretto.Wait()
}

// TestWaitForStore: with WaitForStore a stored miss waits for the store,
// so the very next identical request hits; by default the miss does not
// wait, and the entry is served once the store has applied it.
func TestWaitForStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		wait      bool
		wantWaits int64
	}{
		{"wait for store", true, 1},
		{"default does not wait", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewRistretto(RistrettoConfig{NumCounters: 1 << 12, MaxCost: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(r.Close)
			store := &waitCounter{Ristretto: r}
			c, err := New(Config{CheckOnHit: true, WaitForStore: tc.wait, Now: newClock().Now}, store)
			if err != nil {
				t.Fatal(err)
			}
			next := &fakeNext{}
			stack := model.Chain(next.model(), c.Middleware())
			req := scopeReq("I was charged twice", "acme", "agent", "en", "v1")
			resp, err := stack.Complete(context.Background(), req)
			if err != nil || resp.Trace.Cache != model.CacheMiss {
				t.Fatalf("first Complete = %+v, %v; want a miss", resp, err)
			}
			if got := store.waits.Load(); got != tc.wantWaits {
				t.Fatalf("Wait called %d times; want %d", got, tc.wantWaits)
			}
			if st := c.Stats(); st.Stored != 1 {
				t.Fatalf("Stored = %d; want 1", st.Stored)
			}
			r.Wait() // what the middleware skipped without WaitForStore
			resp, err = stack.Complete(context.Background(), req)
			if err != nil || resp.Trace.Cache != model.CacheHit || resp.Content != answer(req) {
				t.Fatalf("second Complete = %+v, %v; want a hit with %q", resp, err, answer(req))
			}
			if got := next.calls.Load(); got != 1 {
				t.Fatalf("inner stack called %d times; want 1", got)
			}
		})
	}
}

// meetsContract stands in for the output contract's check: the answers
// goodResponse builds meet it.
func meetsContract(content, _ string) bool { return strings.HasPrefix(content, "answer to ") }

// The cache decides what to store from the answer and its own check, never
// from another layer's trace fields: an answer the contract's check
// accepts is stored whatever the trace says (a contract layer outside the
// cache has not run yet), and one it rejects is not, even with a trace
// claiming the contract held. So the layer order is no hidden rule.
func TestCacheIgnoresOtherLayersTrace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		content    string
		validated  bool
		contractOK bool
		wantStored uint64
	}{
		{"valid, contract not run", "", false, false, 1},
		{"valid, trace says failed", "", true, false, 1},
		{"invalid, trace says ok", "free text", true, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Config{CheckOnHit: true, Validate: meetsContract})
			h.next.respond = func(req *model.Request) (*model.Response, error) {
				r := goodResponse(req)
				if tc.content != "" {
					r.Content = tc.content
				}
				r.Trace.Validated, r.Trace.ContractOK = tc.validated, tc.contractOK
				return r, nil
			}
			if _, err := h.stack.Complete(context.Background(), scopeReq("Ticket 9", "acme", "agent", "en", "v1")); err != nil {
				t.Fatal(err)
			}
			if st := h.cache.Stats(); st.Stored != tc.wantStored {
				t.Errorf("Stored = %d; want %d", st.Stored, tc.wantStored)
			}
		})
	}
}

// TestContractBoundHits checks what binding the contract into the tag
// buys and keeps: a hit whose tag verifies is served without running the
// contract's check again, and an entry stored under another contract, or
// under none, never verifies, whatever its content.
func TestContractBoundHits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := smallRistretto(t)
	secret := []byte("0123456789abcdef0123")
	var checks atomic.Int64
	valid := func(content, _ string) bool { checks.Add(1); return content != "NOT JSON" }
	newCache := func(contract string) *Cache {
		c, err := New(Config{Fields: []string{PresetText}, TagKey: secret, Validate: valid, Contract: contract, WaitForStore: true}, store)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	v1, v2, unbound := newCache("contract v1"), newCache("contract v2"), newCache("")
	stack := model.Chain((&fakeNext{}).model(), v2.Middleware())
	req := scopeReq("a question", "acme", "agent", "en", "v1")
	for i := range 4 {
		resp, err := stack.Complete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		want := model.CacheHit
		if i == 0 {
			want = model.CacheMiss
		}
		if resp.Trace.Cache != want {
			t.Fatalf("call %d: cache %q; want %q", i, resp.Trace.Cache, want)
		}
	}
	if n := checks.Load(); n != 1 {
		t.Errorf("contract checked %d times over a miss and 3 hits; want once, when stored", n)
	}
	for _, tagBy := range []*Cache{v1, unbound} {
		other := scopeReq("another question", "acme", "agent", "en", "v1")
		key := v2.Key().Encode(other)
		h := v2.hash(key)
		e := &Entry{Key: key, Scope: other.Scope, Conversation: ConversationOf(other), Response: goodResponse(other), Stored: time.Now()}
		e.Tag = tagBy.tags.tag(h, e)
		if !store.Set(ctx, h, e, 0) {
			t.Fatal("Set = false; want true")
		}
		store.Wait()
		before := v2.Stats().Untrusted.BadTag
		resp, err := model.Chain((&fakeNext{}).model(), v2.Middleware()).Complete(ctx, other)
		if err != nil || resp.Trace.Cache != model.CacheMiss {
			t.Errorf("entry tagged under contract %q: %v, %q; want a miss", tagBy.tags.ns, err, resp.Trace.Cache)
		}
		if got := v2.Stats().Untrusted.BadTag - before; got != 1 {
			t.Errorf("entry tagged under contract %q: %d bad tags; want 1", tagBy.tags.ns, got)
		}
	}
}

// TestSeenEntryBoundToItsKey: an in-process entry whose tag verified is
// not verified again on its next hit, but only under the store key it was
// tagged for: the same entry found under another key is a bad_tag miss
// every time.
func TestSeenEntryBoundToItsKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := smallRistretto(t)
	c, err := New(Config{Fields: []string{PresetText}, TagKey: []byte("0123456789abcdef0123"), WaitForStore: true}, store)
	if err != nil {
		t.Fatal(err)
	}
	stack := model.Chain((&fakeNext{}).model(), c.Middleware())
	own, other := scopeReq("own question", "acme", "agent", "en", "v1"), scopeReq("other question", "acme", "agent", "en", "v1")
	for range 3 {
		if _, err := stack.Complete(ctx, own); err != nil {
			t.Fatal(err)
		}
	}
	e, ok := store.Get(ctx, c.hash(c.Key().Encode(own)))
	if !ok {
		t.Fatal("the answer was not stored")
	}
	for i := range 3 {
		if !store.Set(ctx, c.hash(c.Key().Encode(other)), e, 0) {
			t.Fatal("Set = false; want true")
		}
		store.Wait()
		before := c.Stats().Untrusted.BadTag
		resp, err := stack.Complete(ctx, other)
		if err != nil || resp.Trace.Cache != model.CacheMiss {
			t.Fatalf("round %d: %v, %q; want a miss", i, err, resp.Trace.Cache)
		}
		if got := c.Stats().Untrusted.BadTag - before; got != 1 {
			t.Errorf("round %d: %d bad tags; want 1", i, got)
		}
		if resp, err := stack.Complete(ctx, own); err != nil || resp.Trace.Cache != model.CacheHit {
			t.Fatalf("round %d: own question %v, %q; want a hit", i, err, resp.Trace.Cache)
		}
	}
}

// smallRistretto is a small in-process store, closed with the test.
func smallRistretto(t *testing.T) *Ristretto {
	t.Helper()
	store, err := NewRistretto(RistrettoConfig{NumCounters: 1 << 10, MaxCost: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return store
}
