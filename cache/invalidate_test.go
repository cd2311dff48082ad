package cache

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// blockingNext is an inner stack whose calls wait, after signalling that
// they started, until release is closed.
type blockingNext struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
	next    *fakeNext
}

func newBlockingNext() *blockingNext {
	return &blockingNext{started: make(chan struct{}), release: make(chan struct{}), next: &fakeNext{}}
}

func (b *blockingNext) model() model.Model {
	inner := b.next.model()
	return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		b.once.Do(func() { close(b.started) })
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return inner.Complete(ctx, req)
	})
}

// invalidator is one of the invalidation calls, bound to a request's scope.
type invalidator struct {
	name string
	do   func(ctx context.Context, c *Cache, s model.Scope) error
}

var invalidators = []invalidator{
	{"tenant", func(ctx context.Context, c *Cache, s model.Scope) error { return c.InvalidateTenant(ctx, s.Tenant) }},
	{"permission", func(ctx context.Context, c *Cache, s model.Scope) error {
		return c.InvalidatePermission(ctx, s.Tenant, s.Permission)
	}},
}

// A write still in flight when its scope is invalidated must not bring the
// old answer back: the next model blocks until the invalidation happened.
func TestInvalidationDuringInFlightWrite(t *testing.T) {
	t.Parallel()
	for _, inv := range invalidators {
		for _, st := range testStores(t) {
			t.Run(inv.name+"/"+st.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				c, err := New(Config{Fields: []string{PresetFull}, CheckOnHit: true, Now: newClock().Now, WaitForStore: true}, st.make(t))
				if err != nil {
					t.Fatal(err)
				}
				req := scopeReq("Which SSO providers do you support?", "globex", "admin", "en", "v7")
				blocking := newBlockingNext()
				inFlight := model.Chain(blocking.model(), c.Middleware())
				done := make(chan error, 1)
				go func() {
					_, err := inFlight.Complete(ctx, req)
					done <- err
				}()
				<-blocking.started
				if err := inv.do(ctx, c, req.Scope); err != nil {
					t.Fatalf("invalidate: %v", err)
				}
				close(blocking.release)
				if err := <-done; err != nil {
					t.Fatalf("in-flight request: %v", err)
				}
				if got := c.Stats(); got.DiscardedWrites != 1 || got.Stored != 0 {
					t.Fatalf("Stats = %+v; want 1 discarded write, 0 stored", got)
				}
				// The same scope asks again: the in-flight answer was never stored.
				next := &fakeNext{}
				stack := model.Chain(next.model(), c.Middleware())
				for i, want := range []string{model.CacheMiss, model.CacheHit} {
					resp, err := stack.Complete(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					if resp.Trace.Cache != want {
						t.Fatalf("request %d after the invalidation: Cache = %q; want %q", i, resp.Trace.Cache, want)
					}
				}
				if got := next.calls.Load(); got != 1 {
					t.Fatalf("next called %d times after the invalidation; want 1", got)
				}
			})
		}
	}
}

// raceStore runs an invalidation between the cache's last generation check
// and the write itself, the narrowest race: the entry lands with the old
// generation and must never be served.
type raceStore struct {
	Store
	before func()
}

func (r *raceStore) Set(ctx context.Context, key uint64, e *Entry, ttl time.Duration) bool {
	if r.before != nil {
		r.before()
		r.before = nil
	}
	return r.Store.Set(ctx, key, e, ttl)
}

// Generation, BumpTenant and BumpPermission pass through to the wrapped
// store's counters.
func (r *raceStore) Generation(ctx context.Context, tenant, permission string) (Generation, error) {
	return r.Store.(Generations).Generation(ctx, tenant, permission)
}
func (r *raceStore) BumpTenant(ctx context.Context, tenant string) error {
	return r.Store.(Generations).BumpTenant(ctx, tenant)
}
func (r *raceStore) BumpPermission(ctx context.Context, tenant, permission string) error {
	return r.Store.(Generations).BumpPermission(ctx, tenant, permission)
}

func TestInvalidationRacingTheWrite(t *testing.T) {
	t.Parallel()
	for _, inv := range invalidators {
		for _, st := range testStores(t) {
			t.Run(inv.name+"/"+st.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				rs := &raceStore{Store: st.make(t)}
				c, err := New(Config{Fields: []string{PresetFull}, CheckOnHit: true, Now: newClock().Now, WaitForStore: true}, rs)
				if err != nil {
					t.Fatal(err)
				}
				req := scopeReq("Can I pay by SEPA direct debit?", "globex", "agent", "en", "v8")
				rs.before = func() {
					if err := inv.do(ctx, c, req.Scope); err != nil {
						t.Errorf("invalidate: %v", err)
					}
				}
				next := &fakeNext{}
				stack := model.Chain(next.model(), c.Middleware())
				for i, want := range []string{model.CacheMiss, model.CacheMiss, model.CacheHit} {
					resp, err := stack.Complete(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					if resp.Trace.Cache != want {
						t.Fatalf("request %d: Cache = %q; want %q", i, resp.Trace.Cache, want)
					}
				}
				if got := c.Stats(); got.Invalidated != 1 || got.Stored != 2 {
					t.Fatalf("Stats = %+v; want 1 invalidated entry refused, 2 stored", got)
				}
			})
		}
	}
}

// An invalidation reaches exactly the scope it names, under every key: an
// entry another tenant (or permission) could reach through a weak key is
// judged by its own scope's generation.
func TestInvalidationScope(t *testing.T) {
	t.Parallel()
	acmeAdmin := scopeReq("Show the refund override code for order 8812.", "acme", "admin", "en", "v3")
	acmeViewer := scopeReq("Show the refund override code for order 8812.", "acme", "viewer", "en", "v3")
	globexAdmin := scopeReq("Show the refund override code for order 8812.", "globex", "admin", "en", "v3")
	tests := []struct {
		name       string
		fields     string
		invalidate func(ctx context.Context, c *Cache) error
		ask        *model.Request
		want       string // cache status of ask after acmeAdmin was stored and the invalidation ran
		wantLeak   string
	}{
		{"tenant drops its own entries", "full", func(ctx context.Context, c *Cache) error { return c.InvalidateTenant(ctx, "acme") }, acmeAdmin, model.CacheMiss, ""},
		{"tenant spares other tenants", "full", func(ctx context.Context, c *Cache) error { return c.InvalidateTenant(ctx, "globex") }, acmeAdmin, model.CacheHit, ""},
		{"permission drops its entries", "full", func(ctx context.Context, c *Cache) error { return c.InvalidatePermission(ctx, "acme", "admin") }, acmeAdmin, model.CacheMiss, ""},
		{"permission spares other permissions", "full", func(ctx context.Context, c *Cache) error {
			return c.InvalidatePermission(ctx, "acme", "viewer")
		}, acmeAdmin, model.CacheHit, ""},
		{"permission spares the same role of another tenant", "full", func(ctx context.Context, c *Cache) error {
			return c.InvalidatePermission(ctx, "globex", "admin")
		}, acmeAdmin, model.CacheHit, ""},
		{"weak key: invalidated entry not served to another tenant", "text", func(ctx context.Context, c *Cache) error { return c.InvalidateTenant(ctx, "acme") }, globexAdmin, model.CacheMiss, ""},
		{"weak key: other tenant's invalidation does not hide the entry", "text", func(ctx context.Context, c *Cache) error { return c.InvalidateTenant(ctx, "globex") }, globexAdmin, model.CacheHit, LeakCrossTenant},
		{"weak key: invalidated role's entry not served to a viewer", "tenant,text", func(ctx context.Context, c *Cache) error {
			return c.InvalidatePermission(ctx, "acme", "admin")
		}, acmeViewer, model.CacheMiss, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fields, err := ParseFields(tc.fields)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, Config{Fields: fields})
			h.do(t, acmeAdmin)
			if err := tc.invalidate(context.Background(), h.cache); err != nil {
				t.Fatal(err)
			}
			resp := h.do(t, tc.ask)
			if resp.Trace.Cache != tc.want || resp.Trace.Leak != tc.wantLeak {
				t.Fatalf("got %s (leak %q); want %s (leak %q)", resp.Trace.Cache, resp.Trace.Leak, tc.want, tc.wantLeak)
			}
			if st := h.cache.Stats(); st.Invalidations != 1 {
				t.Fatalf("Stats.Invalidations = %d; want 1", st.Invalidations)
			}
		})
	}
}

// failingGens is a Generations whose reads fail, as a shared store that
// cannot be reached: the cache must neither serve nor store, and answer.
type failingGens struct {
	*Ristretto
}

var errGensDown = errors.New("counters unreachable")

func (failingGens) Generation(context.Context, string, string) (Generation, error) {
	return Generation{}, errGensDown
}
func (failingGens) BumpTenant(context.Context, string) error { return errGensDown }

func TestGenerationsUnavailable(t *testing.T) {
	t.Parallel()
	r, err := NewRistretto(RistrettoConfig{NumCounters: 1 << 10, MaxCost: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	c, err := New(Config{CheckOnHit: true, WaitForStore: true}, failingGens{r})
	if err != nil {
		t.Fatal(err)
	}
	next := &fakeNext{}
	stack := model.Chain(next.model(), c.Middleware())
	req := scopeReq("Is the API down?", "acme", "agent", "en", "v1")
	for i := 0; i < 2; i++ {
		resp, err := stack.Complete(context.Background(), req)
		if err != nil || resp.Trace.Cache != model.CacheMiss || resp.Content != answer(req) {
			t.Fatalf("request %d = %+v, %v; want a miss answered by the inner stack", i, resp, err)
		}
	}
	if st := c.Stats(); st.Unavailable != 2 || st.Stored != 0 || st.Hits != 0 {
		t.Fatalf("Stats = %+v; want 2 unavailable, nothing stored or served", st)
	}
	if err := c.InvalidateTenant(context.Background(), "acme"); !errors.Is(err, errGensDown) {
		t.Fatalf("InvalidateTenant error = %v; want the store's error", err)
	}
}

// A backend that labels its answer with another identity is passed on but
// not cached: the entry could not carry its own scope's generation.
func TestAnswerForAnotherIdentityNotCached(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{CheckOnHit: true})
	h.next.respond = func(req *model.Request) (*model.Response, error) {
		r := goodResponse(req)
		r.Scope.Tenant = "someone-else"
		return r, nil
	}
	req := scopeReq("Hello", "acme", "agent", "en", "v1")
	for i := 0; i < 2; i++ {
		if got := h.do(t, req).Trace.Cache; got != model.CacheMiss {
			t.Fatalf("request %d: Cache = %q; want miss", i, got)
		}
	}
	if st := h.cache.Stats(); st.NotCached != 2 || st.Stored != 0 {
		t.Fatalf("Stats = %+v; want 2 not cached", st)
	}
}
