package cache

import (
	"context"
	"fmt"
	"testing"

	"github.com/crab-testbed/crab/internal/redistest"
	"github.com/crab-testbed/crab/model"
)

// TestRedisServesNothingItCannotVouchFor writes 200 entries straight into
// a real redis-server under the keys a deployment reads — forged ones,
// legitimate ones altered, ones of another deployment, and ones an
// invalidation had retired brought back with their counters (a restore
// from an older snapshot) — and asks for every one: none is served.
func TestRedisServesNothingItCannotVouchFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRedis(t)
	secret := []byte("deployment A's tag secret")
	valid := func(content, _ string) bool { return len(content) > 0 && content[0] != 'N' } // "NOT JSON" fails
	newCache := func(key []byte, ns, contract string) *Cache {
		c, err := New(Config{CheckOnHit: true, TagKey: key, Namespace: ns, Validate: valid, Contract: contract, WaitForStore: true}, r)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := newCache(secret, "crab:serve:a:", "contract v2")
	other := newCache([]byte("deployment B's tag secret"), "crab:serve:a:", "contract v2")
	sameSecretOtherNS := newCache(secret, "crab:serve:b:", "contract v2")
	previousContract := newCache(secret, "crab:serve:a:", "contract v1")
	next := &fakeNext{}
	stack := a.Middleware()(next.model())
	req := func(kind string, i int) *model.Request {
		return scopeReq(fmt.Sprintf("%s question %d", kind, i), "acme", "agent", "en", "v1")
	}
	// write stores e under the key a reads for rq, tagged by tagBy (nil:
	// left as it is).
	write := func(rq *model.Request, e *Entry, tagBy *Cache) {
		t.Helper()
		h := a.hash(a.Key().Encode(rq))
		if tagBy != nil {
			e.Tag = tagBy.tags.tag(h, e)
		}
		if err := r.client.Set(ctx, r.entryKey(h), encodeEntry(e), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(rq *model.Request) *Entry {
		g, err := r.Generation(ctx, rq.Scope.Tenant, rq.Scope.Permission)
		if err != nil {
			t.Fatal(err)
		}
		return &Entry{Key: a.Key().Encode(rq), Scope: rq.Scope, Conversation: ConversationOf(rq), Gen: g,
			Response: goodResponse(rq), Stored: a.now()}
	}
	var hostile []*model.Request
	for i := range 40 { // forged: no tag, or a tag of random bytes, content flagged valid
		rq := req("forged", i)
		e := entry(rq)
		e.Response.Content = "NOT JSON"
		if i%2 == 1 {
			e.Tag = []byte("0123456789abcdef0123456789abcdef")
		}
		write(rq, e, nil)
		hostile = append(hostile, rq)
	}
	alter := []func(e *Entry){
		func(e *Entry) { e.Response.Content = `{"category":"billing"}` },
		func(e *Entry) { e.Response.FinishReason = model.FinishLength },
		func(e *Entry) { e.Response.Trace.ContractOK = false },
		func(e *Entry) { e.Response.Scope.Tenant = "globex"; e.Scope.Tenant = "globex" },
	}
	for i := range 40 { // legitimate entries altered after they were tagged
		rq := req("altered", i)
		e := entry(rq)
		e.Tag = a.tags.tag(a.hash(e.Key), e)
		alter[i%len(alter)](e)
		write(rq, e, nil)
		hostile = append(hostile, rq)
	}
	for i := range 20 { // the deployment's own entries, stored under the contract in force before
		rq := req("invalid", i)
		e := entry(rq)
		e.Response.Content = "NOT JSON"
		write(rq, e, previousContract)
		hostile = append(hostile, rq)
	}
	for i := range 50 { // another deployment's entries: another secret, or the same secret and another namespace
		rq := req("foreign", i)
		tagBy := other
		if i%2 == 1 {
			tagBy = sameSecretOtherNS
		}
		write(rq, entry(rq), tagBy)
		hostile = append(hostile, rq)
	}
	// Rolled back: 50 answers stored and served, then invalidated, then
	// the counters put back as an older snapshot would have them.
	var retired []*model.Request
	for i := range 50 {
		rq := scopeReq(fmt.Sprintf("retired question %d", i), "initech", "agent", "en", "v1")
		for range 2 {
			if _, err := stack.Complete(ctx, rq); err != nil {
				t.Fatal(err)
			}
		}
		retired = append(retired, rq)
	}
	if a.Stats().Hits != 50 {
		t.Fatalf("hits before the invalidation = %d; want 50", a.Stats().Hits)
	}
	keys := []string{r.tenantKey("initech"), r.permKey("initech", "agent")}
	old, err := r.client.MGet(ctx, keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.InvalidateTenant(ctx, "initech"); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if err := r.client.Set(ctx, k, old[i], 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	hostile = append(hostile, retired...)
	if len(hostile) != 200 {
		t.Fatalf("%d hostile entries; want 200", len(hostile))
	}

	hitsBefore := a.Stats().Hits
	for _, rq := range hostile {
		resp, err := stack.Complete(ctx, rq)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Trace.Cache == model.CacheHit {
			t.Errorf("%q: served a hit from an entry crab cannot vouch for (content %q)", rq.Text, resp.Content)
		}
	}
	st := a.Stats()
	if served := st.Hits - hitsBefore; served != 0 {
		t.Errorf("served %d of 200 hostile entries; want 0", served)
	}
	if st.Untrusted.BadTag < 140 || st.Untrusted.RolledBack == 0 {
		t.Errorf("untrusted = %+v; want >= 140 bad tags, some rolled back", st.Untrusted)
	}
	// The rolled-back scope moves on: its answers are built and served
	// again (never the retired ones).
	rq := retired[0]
	var got string
	for range 3 {
		resp, err := stack.Complete(ctx, rq)
		if err != nil {
			t.Fatal(err)
		}
		got = resp.Trace.Cache
	}
	if got != model.CacheHit {
		t.Errorf("rolled-back scope after its counters moved on: %s; want hit", got)
	}
}

func TestHighWater(t *testing.T) {
	t.Parallel()
	var w highWater
	steps := []struct {
		g         Generation
		ok        bool
		floorPerm uint64
	}{
		{Generation{5, 10}, true, 0},
		{Generation{5, 11}, true, 0},
		{Generation{5, 9}, false, 12},  // went back
		{Generation{5, 11}, false, 12}, // back at the highest seen: still not trusted
		{Generation{5, 12}, true, 0},   // past it
		{Generation{5, 12}, true, 0},
	}
	for i, s := range steps {
		ok, floor := w.observe("acme", "agent", s.g)
		if ok != s.ok || floor.Permission != s.floorPerm {
			t.Errorf("step %d: observe(%v) = %v, %+v; want %v, permission floor %d", i, s.g, ok, floor, s.ok, s.floorPerm)
		}
	}
}

// A Redis that requires a password: the store opens with it and serves
// hits, and without it (or with a wrong one) opening fails.
func TestRedisPassword(t *testing.T) {
	t.Parallel()
	srv, err := redistest.Launch("--requirepass", "s3cret-Redis-pw-for-tests")
	redistest.Require(t, err)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	for _, pw := range []string{"", "wrong-password"} {
		if r, err := NewRedis(ctx, RedisConfig{Addr: srv.Addr, Password: pw}); err == nil {
			r.Close()
			t.Errorf("password %q: NewRedis succeeded; want it refused", pw)
		}
	}
	r, err := NewRedis(ctx, RedisConfig{Addr: srv.Addr, Password: "s3cret-Redis-pw-for-tests", Prefix: "pw:", DeleteOnClose: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	c, err := New(Config{CheckOnHit: true, WaitForStore: true}, r)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Middleware()((&fakeNext{}).model())
	req := scopeReq("refund please", "acme", "agent", "en", "v1")
	var got string
	for range 2 {
		resp, err := m.Complete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		got = resp.Trace.Cache
	}
	if got != model.CacheHit {
		t.Errorf("second request through a password-protected Redis: %s; want hit", got)
	}
}
