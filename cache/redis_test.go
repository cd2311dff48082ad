package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/crab-testbed/crab/internal/redistest"
	"github.com/crab-testbed/crab/model"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopShared()
	os.Exit(code)
}

// prefixSeq keeps every Redis store of the test binary under its own prefix.
var prefixSeq atomic.Int64

// newTestRedis connects to the shared test server under a fresh prefix,
// deleted at cleanup.
func newTestRedis(t testing.TB) *Redis {
	t.Helper()
	return newTestRedisPrefix(t, fmt.Sprintf("test%d:", prefixSeq.Add(1)))
}

func newTestRedisPrefix(t testing.TB, prefix string) *Redis {
	t.Helper()
	addr := redistest.Shared(t)
	r, err := NewRedis(context.Background(), RedisConfig{Addr: addr, Prefix: prefix, DeleteOnClose: true})
	if err != nil {
		t.Fatalf("NewRedis: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// testStore makes a fresh store of one kind.
type testStore struct {
	name string
	make func(t testing.TB) Store
}

// testStores lists both stores; Redis skips (or, under CI, fails) when
// redis-server is not installed.
func testStores(t *testing.T) []testStore {
	t.Helper()
	return []testStore{
		{"ristretto", func(t testing.TB) Store {
			s, err := NewRistretto(RistrettoConfig{NumCounters: 1 << 12, MaxCost: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		}},
		{"redis", func(t testing.TB) Store { return newTestRedis(t) }},
	}
}

func sampleEntry() *Entry {
	return &Entry{
		Key:          []byte{KeyVersion, 4, 't', 'e', 'x', 't', 2, 'h', 'i'},
		Scope:        model.Scope{Tenant: "acme", Permission: "agent", Lang: "en-US", DocVersion: "v2"},
		Gen:          Generation{Tenant: 3, Permission: 1 << 40},
		Conversation: Conversation{System: 11, History: 1 << 63},
		Stored:       time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
		Response: &model.Response{
			Content: `{"category":"billing"}`, Model: "large#7", FinishReason: model.FinishStop,
			Usage: model.Usage{TokensIn: 120, TokensOut: 40, Cost: 0.000123},
			Scope: model.Scope{Tenant: "acme", Permission: "agent", Lang: "en-US", DocVersion: "v2"},
			Trace: model.Trace{Validated: true, ContractOK: true, Violations: []string{"/a: x", ""}},
		},
	}
}

func TestEntryCodecRoundTrip(t *testing.T) {
	t.Parallel()
	full := sampleEntry()
	noResp := sampleEntry()
	noResp.Response = nil
	empty := &Entry{Stored: time.Unix(0, 0)}
	for _, tc := range []struct {
		name string
		e    *Entry
	}{{"full", full}, {"no response", noResp}, {"empty", empty}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeEntry(encodeEntry(tc.e))
			if err != nil {
				t.Fatal(err)
			}
			if !got.Stored.Equal(tc.e.Stored) {
				t.Fatalf("Stored = %v; want %v", got.Stored, tc.e.Stored)
			}
			got.Stored = tc.e.Stored
			if len(got.Key) == 0 && len(tc.e.Key) == 0 {
				got.Key = tc.e.Key
			}
			if !reflect.DeepEqual(got, tc.e) {
				t.Fatalf("round trip = %+v\nwant %+v", got, tc.e)
			}
		})
	}
}

func TestEntryCodecRejects(t *testing.T) {
	t.Parallel()
	good := encodeEntry(sampleEntry())
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"other version", append([]byte{entryCodecVersion + 1}, good[1:]...)},
		{"truncated", good[:len(good)-3]},
		{"trailing", append(append([]byte(nil), good...), 0)},
		{"huge length", []byte{entryCodecVersion, 0xff, 0xff, 0xff, 0xff, 0x0f}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := decodeEntry(tc.b); !errors.Is(err, ErrBadEntry) {
				t.Fatalf("decodeEntry error = %v; want ErrBadEntry", err)
			}
		})
	}
}

// FuzzEntryCodec: decoding arbitrary bytes never panics, and whatever
// decodes survives a round trip unchanged.
func FuzzEntryCodec(f *testing.F) {
	f.Add(encodeEntry(sampleEntry()))
	f.Add([]byte{entryCodecVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		once := encodeEntry(e)
		e2, err := decodeEntry(once)
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if twice := encodeEntry(e2); string(twice) != string(once) {
			t.Fatalf("round trip differs:\n got %x\nwant %x", twice, once)
		}
	})
}

func TestRedisStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRedis(t)
	e := sampleEntry()
	if _, ok := r.Get(ctx, 1); ok {
		t.Fatal("Get on an empty store found an entry")
	}
	if r.Set(ctx, 1, e, -time.Second) {
		t.Fatal("Set with negative ttl = true; want false")
	}
	if !r.Set(ctx, 1, e, time.Hour) {
		t.Fatal("Set = false; want true")
	}
	r.Wait()
	got, ok := r.Get(ctx, 1)
	if !ok || string(got.Key) != string(e.Key) || got.Scope != e.Scope || got.Response.Content != e.Response.Content {
		t.Fatalf("Get = %+v, %v; want the entry", got, ok)
	}
	// TTL is Redis's own expiry.
	pttl, err := r.client.PTTL(ctx, r.entryKey(1)).Result()
	if err != nil || pttl <= 0 || pttl > time.Hour {
		t.Fatalf("PTTL = %v, %v; want in (0, 1h]", pttl, err)
	}
	if !r.Set(ctx, 2, e, 0) {
		t.Fatal("Set without ttl = false")
	}
	if pttl, _ := r.client.PTTL(ctx, r.entryKey(2)).Result(); pttl <= time.Hour || pttl > DefaultRedisMaxTTL {
		t.Fatalf("PTTL without ttl = %v; want the max TTL %v (every key expires)", pttl, DefaultRedisMaxTTL)
	}
	// A value that does not decode is a miss and an error.
	if err := r.client.Set(ctx, r.entryKey(3), "garbage", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Get(ctx, 3); ok {
		t.Fatal("Get of a corrupt value found an entry; want a miss")
	}
	m := r.Metrics()
	if m.Hits != 1 || m.Misses != 2 || m.KeysAdded != 2 || m.Errors != 1 {
		t.Fatalf("Metrics = %+v; want 1 hit, 2 misses, 2 keys added, 1 error", m)
	}
}

func TestRedisGenerations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRedis(t)
	gen := func(tenant, perm string) Generation {
		t.Helper()
		g, err := r.Generation(ctx, tenant, perm)
		if err != nil {
			t.Fatalf("Generation(%q, %q): %v", tenant, perm, err)
		}
		e, ok, g2, err := r.GetWithGeneration(ctx, 99, tenant, perm)
		if err != nil || ok || e != nil || g2 != g {
			t.Fatalf("GetWithGeneration = %v, %v, %+v, %v; want a miss and %+v", e, ok, g2, err, g)
		}
		return g
	}
	g0 := gen("acme", "admin")
	if g0.Tenant == 0 || g0.Permission == 0 || g0.Tenant == g0.Permission {
		t.Fatalf("new counters = %+v; want two random non-zero values", g0)
	}
	if g := gen("acme", "admin"); g != g0 {
		t.Fatalf("Generation changed without a bump: %+v then %+v", g0, g)
	}
	if err := r.BumpTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	g1 := gen("acme", "admin")
	if g1.Tenant != g0.Tenant+1 || g1.Permission != g0.Permission {
		t.Fatalf("after BumpTenant = %+v; want the tenant moved on from %+v", g1, g0)
	}
	if err := r.BumpPermission(ctx, "acme", "admin"); err != nil {
		t.Fatal(err)
	}
	if g := gen("acme", "admin"); g.Tenant != g1.Tenant || g.Permission != g1.Permission+1 {
		t.Fatalf("after BumpPermission = %+v; want the permission moved on from %+v", g, g1)
	}
	if g := gen("acme", "viewer"); g.Tenant != g1.Tenant || g.Permission == g1.Permission {
		t.Fatalf("acme/viewer = %+v; want acme's tenant counter and a counter of its own", g)
	}
	// ("ab","c") and ("a","bc") are different counters.
	abc := gen("ab", "c")
	if err := r.BumpPermission(ctx, "ab", "c"); err != nil {
		t.Fatal(err)
	}
	if g := gen("a", "bc"); g.Permission == abc.Permission+1 {
		t.Fatalf("bumping (ab, c) moved (a, bc): %+v", g)
	}
	// Every counter expires.
	for _, k := range []string{r.tenantKey("acme"), r.permKey("acme", "admin")} {
		if pttl, err := r.client.PTTL(ctx, k).Result(); err != nil || pttl <= 0 || pttl > DefaultRedisMaxTTL {
			t.Errorf("PTTL(%s) = %v, %v; want in (0, %v]", k, pttl, err, DefaultRedisMaxTTL)
		}
	}
}

// TestRedisFailsClosed: an invalidated entry never becomes servable
// again when Redis loses its counter (eviction, expiry, a manual delete),
// and a counter Redis cannot read refuses the lookup.
func TestRedisFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRedis(t)
	c, err := New(Config{CheckOnHit: true, WaitForStore: true}, r)
	if err != nil {
		t.Fatal(err)
	}
	next := &fakeNext{}
	m := c.Middleware()(next.model())
	req := &model.Request{Text: "refund please", Scope: model.Scope{Tenant: "acme", Permission: "agent", Lang: "en"}}
	ask := func() string {
		t.Helper()
		resp, err := m.Complete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Trace.Cache
	}
	if got := ask(); got != model.CacheMiss {
		t.Fatalf("first request: %s; want miss", got)
	}
	if got := ask(); got != model.CacheHit {
		t.Fatalf("second request: %s; want hit", got)
	}
	for _, lose := range []struct {
		name string
		key  string
	}{{"permission counter", r.permKey("acme", "agent")}, {"tenant counter", r.tenantKey("acme")}} {
		if err := c.InvalidatePermission(ctx, "acme", "agent"); err != nil {
			t.Fatal(err)
		}
		// The counter is lost after the invalidation, as allkeys-lru
		// would evict it.
		if err := r.client.Del(ctx, lose.key).Err(); err != nil {
			t.Fatal(err)
		}
		before := r.Metrics().Uncertain
		if got := ask(); got != model.CacheMiss {
			t.Fatalf("%s lost: %s; want miss (the invalidated entry must not come back)", lose.name, got)
		}
		if r.Metrics().Uncertain != before+1 {
			t.Errorf("%s lost: uncertain %d; want %d", lose.name, r.Metrics().Uncertain, before+1)
		}
		// A counter created afresh below the highest value this process
		// saw looks like a store that went back in time: one more miss,
		// while the store raises it, before the answer is stored again.
		got := ask()
		if got == model.CacheMiss {
			got = ask()
		}
		if got != model.CacheHit {
			t.Fatalf("%s lost, then the answer rebuilt: %s; want hit", lose.name, got)
		}
	}
	// A counter that is not a number: no hit, no store.
	if err := r.client.Set(ctx, r.tenantKey("acme"), "garbage", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	calls := next.calls.Load()
	if got := ask(); got != model.CacheMiss || next.calls.Load() != calls+1 {
		t.Fatalf("unreadable counter: %s; want a miss answered by the model", got)
	}
	if c.Stats().Unavailable == 0 || r.Metrics().Uncertain < 3 {
		t.Errorf("unreadable counter: stats %+v, store %+v; want it counted unavailable and uncertain", c.Stats(), r.Metrics())
	}
}

// TestRedisKeysExpire: every key the store writes has a TTL, so a run
// killed before Close leaves nothing behind for good.
func TestRedisKeysExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRedis(t)
	c, err := New(Config{CheckOnHit: true, WaitForStore: true}, r) // no TTL asked for
	if err != nil {
		t.Fatal(err)
	}
	m := c.Middleware()((&fakeNext{}).model())
	for _, tenant := range []string{"acme", "globex"} {
		req := &model.Request{Text: "refund", Scope: model.Scope{Tenant: tenant, Permission: "agent"}}
		if _, err := m.Complete(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.InvalidateTenant(ctx, "initech"); err != nil {
		t.Fatal(err)
	}
	keys, err := r.client.Keys(ctx, r.cfg.Prefix+"*").Result()
	if err != nil || len(keys) < 5 {
		t.Fatalf("keys = %v, %v; want entries and counters", keys, err)
	}
	for _, k := range keys {
		if pttl, err := r.client.PTTL(ctx, k).Result(); err != nil || pttl <= 0 {
			t.Errorf("PTTL(%s) = %v, %v; want a TTL", k, pttl, err)
		}
	}
}

// Two replicas on one server and prefix share entries, the check on hit
// and invalidations; another prefix shares nothing.
func TestRedisReplicasShare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := fmt.Sprintf("replicas%d:", prefixSeq.Add(1))
	newReplica := func(p string) (*Cache, *fakeNext, model.Model) {
		c, err := New(Config{CheckOnHit: true, TagKey: []byte("one deployment's secret"), WaitForStore: true}, newTestRedisPrefix(t, p))
		if err != nil {
			t.Fatal(err)
		}
		next := &fakeNext{}
		return c, next, model.Chain(next.model(), c.Middleware())
	}
	a, _, stackA := newReplica(prefix)
	_, nextB, stackB := newReplica(prefix)
	_, _, stackOther := newReplica(prefix + "other:")
	req := scopeReq("Which regions host our data?", "acme", "agent", "en", "v1")
	other := scopeReq("Which regions host our data?", "globex", "agent", "en", "v1")
	steps := []struct {
		name  string
		stack model.Model
		req   *model.Request
		want  string
		setup func()
	}{
		{"A stores", stackA, req, model.CacheMiss, nil},
		{"B hits A's entry", stackB, req, model.CacheHit, nil},
		{"B: another tenant misses", stackB, other, model.CacheMiss, nil},
		{"another prefix shares nothing", stackOther, req, model.CacheMiss, nil},
		{"A invalidates, B misses", stackB, req, model.CacheMiss, func() {
			if err := a.InvalidateTenant(ctx, "acme"); err != nil {
				t.Fatal(err)
			}
		}},
		{"A hits B's fresh entry", stackA, req, model.CacheHit, nil},
	}
	for _, s := range steps {
		if s.setup != nil {
			s.setup()
		}
		resp, err := s.stack.Complete(ctx, s.req)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if resp.Trace.Cache != s.want || resp.Trace.Leak != "" || resp.Content != answer(s.req) {
			t.Fatalf("%s: got %s, leak %q, content %q; want %s with its own answer", s.name, resp.Trace.Cache, resp.Trace.Leak, resp.Content, s.want)
		}
	}
	if got := nextB.calls.Load(); got != 2 {
		t.Fatalf("replica B called its model %d times; want 2", got)
	}
}

// A colliding hash through Redis: the full key stored in the entry still
// tells the requests apart.
func TestRedisCollisionCheckedOnHit(t *testing.T) {
	t.Parallel()
	c, err := New(Config{CheckOnHit: true, Hash: func([]byte) uint64 { return 7 }, WaitForStore: true}, newTestRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	next := &fakeNext{}
	stack := model.Chain(next.model(), c.Middleware())
	reqs := []*model.Request{
		scopeReq("How do I export invoices?", "acme", "agent", "en", "v1"),
		scopeReq("How do I delete my account?", "acme", "agent", "en", "v1"),
		scopeReq("How do I export invoices?", "globex", "agent", "en", "v1"),
	}
	for round := 0; round < 2; round++ {
		for _, req := range reqs {
			resp, err := stack.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content != answer(req) {
				t.Fatalf("round %d: served %q to %q", round, resp.Content, req.Text)
			}
		}
	}
	if st := c.Stats(); st.KeyCollisions == 0 || st.Leaks.Total() != 0 {
		t.Fatalf("Stats = %+v; want collisions refused, no leaks", st)
	}
}

// When the server goes away, every call is a counted error and a miss; the
// inner stack still answers.
func TestRedisDownIsAMiss(t *testing.T) {
	t.Parallel()
	srv, err := redistest.Launch()
	redistest.Require(t, err)
	ctx := context.Background()
	r, err := NewRedis(ctx, RedisConfig{Addr: srv.Addr, Timeout: 200 * time.Millisecond})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	c, err := New(Config{CheckOnHit: true, WaitForStore: true}, r)
	if err != nil {
		t.Fatal(err)
	}
	next := &fakeNext{}
	stack := model.Chain(next.model(), c.Middleware())
	req := scopeReq("Status of ticket 42?", "acme", "agent", "en", "v1")
	if resp, err := stack.Complete(ctx, req); err != nil || resp.Trace.Cache != model.CacheMiss {
		t.Fatalf("first request = %v, %v; want a miss", resp, err)
	}
	srv.Close()
	for i := 0; i < 2; i++ {
		resp, err := stack.Complete(ctx, req)
		if err != nil || resp.Trace.Cache != model.CacheMiss || resp.Content != answer(req) {
			t.Fatalf("request %d with Redis down = %+v, %v; want a miss answered by the model", i, resp, err)
		}
	}
	if st := c.Stats(); st.Unavailable != 2 {
		t.Fatalf("Stats = %+v; want 2 unavailable", st)
	}
	if m := r.Metrics(); m.Errors < 2 {
		t.Fatalf("Metrics = %+v; want the failed calls counted as errors", m)
	}
	if _, ok := r.Get(ctx, 1); ok {
		t.Fatal("Get with Redis down found an entry")
	}
	if r.Set(ctx, 1, sampleEntry(), 0) {
		t.Fatal("Set with Redis down = true")
	}
	if err := c.InvalidateTenant(ctx, "acme"); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("InvalidateTenant with Redis down = %v; want ErrStoreUnavailable", err)
	}
}

func TestNewRedisErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := NewRedis(ctx, RedisConfig{Timeout: -1}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("negative timeout: error = %v; want ErrBadConfig", err)
	}
	// A port nothing listens on (the kernel's free port, closed again).
	srv, err := redistest.Launch()
	redistest.Require(t, err)
	addr := srv.Addr
	srv.Close()
	if _, err := NewRedis(ctx, RedisConfig{Addr: addr, DialTimeout: 200 * time.Millisecond}); !errors.Is(err, ErrStoreUnavailable) {
		t.Fatalf("unreachable server: error = %v; want ErrStoreUnavailable", err)
	}
}

// DeleteOnClose leaves no key of the store behind, and only its own.
func TestRedisDeleteOnClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := redistest.Shared(t)
	p := fmt.Sprintf("doc%d*[x]:", prefixSeq.Add(1)) // glob characters are taken literally
	keep, err := NewRedis(ctx, RedisConfig{Addr: addr, Prefix: "keep-" + p})
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	r, err := NewRedis(ctx, RedisConfig{Addr: addr, Prefix: p, DeleteOnClose: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 700; i++ { // more than one SCAN batch
		r.Set(ctx, i, sampleEntry(), 0)
	}
	if err := r.BumpTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	keep.Set(ctx, 1, sampleEntry(), 0)
	r.Close()
	r.Close()
	for _, c := range []struct {
		prefix string
		want   int
	}{{p, 0}, {"keep-" + p, 1}} {
		n, err := countKeys(ctx, keep.client, globEscape(c.prefix)+"*")
		if err != nil || n != c.want {
			t.Fatalf("keys left under %q = %d, %v; want %d", c.prefix, n, err, c.want)
		}
	}
}

func countKeys(ctx context.Context, c *redis.Client, match string) (int, error) {
	n := 0
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			return 0, err
		}
		n += len(keys)
		if next == 0 {
			return n, nil
		}
		cursor = next
	}
}

// TestRedisFailsClosedAcrossScopes: under a weak key an entry built for
// one tenant is judged by its own tenant's counter; when that counter is
// lost after an invalidation, the entry is not served to anyone.
func TestRedisFailsClosedAcrossScopes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRedis(t)
	c, err := New(Config{Fields: []string{PresetText}, WaitForStore: true}, r) // weak key, no check on hit: leaks are served
	if err != nil {
		t.Fatal(err)
	}
	m := c.Middleware()((&fakeNext{}).model())
	ask := func(tenant string) *model.Response {
		t.Helper()
		resp, err := m.Complete(ctx, &model.Request{Text: "refund please", Scope: model.Scope{Tenant: tenant, Permission: "agent"}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ask("acme")
	if got := ask("globex"); got.Trace.Cache != model.CacheHit || got.Trace.Leak != LeakCrossTenant {
		t.Fatalf("weak key, other tenant: %s %q; want the leaking hit the audit measures", got.Trace.Cache, got.Trace.Leak)
	}
	if err := c.InvalidateTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := r.client.Del(ctx, r.tenantKey("acme")).Err(); err != nil {
		t.Fatal(err)
	}
	if got := ask("globex"); got.Trace.Cache == model.CacheHit && got.Scope.Tenant == "acme" {
		t.Fatal("acme's invalidated entry was served after its counter was lost")
	}
}

// TestRedisUntaggedWarning: a store that outlives the process, shared
// without a tag secret, says at start-up that replicas will not share it;
// a tagged store, or one private to a run, says nothing. Opening writes
// no key, so the stores need no cleanup.
func TestRedisUntaggedWarning(t *testing.T) {
	addr := redistest.Shared(t)
	for _, tc := range []struct {
		name            string
		tagged, private bool
		warn            bool
	}{
		{name: "shared, untagged", warn: true},
		{name: "shared, tagged", tagged: true},
		{name: "private to a run", private: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			prefix := fmt.Sprintf("test%d:", prefixSeq.Add(1))
			s, err := OpenRedis(StoreConfig{Addr: addr, Prefix: prefix, DeleteOnClose: tc.private, Tagged: tc.tagged,
				Logf: func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var want []string
			if tc.warn {
				want = []string{UntaggedWarning(addr, prefix)}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("warnings %q; want %q", got, want)
			}
		})
	}
}
