package cache

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/crab-testbed/crab/model"
)

// Leak kinds (DESIGN §3), written into Trace.Leak on a hit served for
// another scope. One label per hit, the first that applies in this order.
const (
	LeakCrossTenant = "cross_tenant" // built for another tenant
	LeakPermission  = "permission"   // built for another permission (role)
	LeakStale       = "stale"        // built from another (usually older) document version
	LeakLanguage    = "language"     // built for another language (compared after NormalizeLang)
)

// LeakKind says how an answer built for stored differs from what a request
// with scope req may receive: "" when the scopes are the same (languages
// compared after NormalizeLang), otherwise the first of cross_tenant,
// permission, stale, language that applies.
func LeakKind(stored, req model.Scope) string {
	switch {
	case stored.Tenant != req.Tenant:
		return LeakCrossTenant
	case stored.Permission != req.Permission:
		return LeakPermission
	case stored.DocVersion != req.DocVersion:
		return LeakStale
	case !langEqual(stored.Lang, req.Lang):
		return LeakLanguage
	}
	return ""
}

// Config configures one cache layer (one per arm).
type Config struct {
	// Fields are the key fields (names or presets, see ParseFields). Empty
	// means the full preset, the scoped key.
	Fields []string
	// TTL is how long an entry may be served; 0 means no expiry. Checked
	// against Now on every hit and also passed to the store.
	TTL time.Duration
	// CheckOnHit, when true, compares the stored scope and the stored full
	// key with the request's on every hit; a difference is served as a miss
	// (Trace.ScopeMismatch) and never returned. When false — the deliberately
	// naive setting an audit compares against — a hit is served whatever its
	// provenance and only labelled in Trace.Leak. Production keys want true.
	CheckOnHit bool
	// Now is the clock for TTL and for the cache's own durations. Default
	// time.Now; tests inject a fake one.
	Now func() time.Time
	// Hash maps a key encoding to the store key. Default xxhash64; tests
	// inject a colliding one to prove CheckOnHit catches collisions.
	Hash func([]byte) uint64
}

// Cache is the cache layer of a stack. Build it with New, put
// Cache.Middleware in the chain (outermost: the cache runs before the router
// and the contract), and read Stats after the run. A Cache is safe for
// concurrent use; give each arm its own Cache and its own Store so arms never
// share entries.
//
// Every request gets Trace.Cache and Trace.CacheDur:
//   - hit: a stored answer served; CacheDur is key + lookup time.
//   - miss: nothing usable stored (absent, expired, or refused by
//     CheckOnHit); the inner stack answered; CacheDur is key + lookup +
//     store time (the inner stack's time excluded).
//   - bypass: the request cannot be keyed safely and went to the inner
//     stack untouched: its text is empty after normalisation (nothing to
//     key on), or the key is scoped by tenant or permission and the request
//     carries none (an anonymous caller must not share answers).
//
// A hit returns a clone of the stored response with Content, Model,
// FinishReason and Scope (the provenance, which the evaluator compares with
// the request's scope) kept, the contract result (Validated, ContractOK,
// Violations) kept, Usage zero (no model was called) and a fresh trace:
// Cache, CacheDur, Leak, and TTFT = CacheDur. Only answers that finished
// normally, are non-empty and met the contract (when it was checked) are
// stored; errors, truncated, refused and contract-failing answers never are.
// When the inner stack fails without a response, the cache returns the error
// with a response carrying only its trace, so the record still shows the
// cache status.
//
// A cache that is switched off for an arm is simply not in its stack
// (Trace.Cache stays empty).
type Cache struct {
	spec  KeySpec
	ttl   time.Duration
	check bool
	now   func() time.Time
	hash  func([]byte) uint64
	store Store
	bufs  sync.Pool // *[]byte scratch buffers for key encodings
	st    counters
}

// New validates cfg, fills its defaults and returns the cache over store.
func New(cfg Config, store Store) (*Cache, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrBadConfig)
	}
	if cfg.TTL < 0 {
		return nil, fmt.Errorf("%w: negative TTL %v", ErrBadConfig, cfg.TTL)
	}
	fields := cfg.Fields
	if len(fields) == 0 {
		fields = []string{PresetFull}
	}
	spec, err := NewKeySpec(fields)
	if err != nil {
		return nil, err
	}
	c := &Cache{spec: spec, ttl: cfg.TTL, check: cfg.CheckOnHit, now: cfg.Now, hash: cfg.Hash, store: store}
	if c.now == nil {
		c.now = time.Now
	}
	if c.hash == nil {
		c.hash = xxhash.Sum64
	}
	c.bufs.New = func() any { b := make([]byte, 0, 512); return &b }
	return c, nil
}

// Key is the cache's key spec (e.g. for the manifest: Key().String()).
func (c *Cache) Key() KeySpec { return c.spec }

// Middleware returns the layer to put in a model.Chain.
func (c *Cache) Middleware() model.Middleware {
	return func(next model.Model) model.Model {
		return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			return c.complete(ctx, next, req)
		})
	}
}

func (c *Cache) complete(ctx context.Context, next model.Model, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := c.now()
	if req == nil || c.bypass(req) {
		c.st.bypasses.Add(1)
		d := c.now().Sub(start)
		resp, err := next.Complete(ctx, req)
		return annotate(resp, model.CacheBypass, d, false), err
	}

	bp := c.bufs.Get().(*[]byte)
	defer c.putBuf(bp)
	key := c.spec.AppendEncode((*bp)[:0], req)
	*bp = key
	h := c.hash(key)

	mismatch := false
	if e, ok := c.store.Get(ctx, h); ok && e != nil && e.Response != nil {
		now := c.now()
		switch {
		case c.ttl > 0 && now.Sub(e.Stored) >= c.ttl:
			c.st.expired.Add(1)
		default:
			sameKey := bytes.Equal(e.Key, key)
			leak := LeakKind(e.Scope, req.Scope)
			if !sameKey {
				c.st.collisions.Add(1)
			}
			if c.check && (!sameKey || leak != "") {
				mismatch = true
				c.st.mismatches.Add(1)
				c.st.refused.add(leak)
				break
			}
			c.st.hits.Add(1)
			c.st.leaks.add(leak)
			return served(e.Response, leak, now.Sub(start)), nil
		}
	}

	c.st.misses.Add(1)
	lookup := c.now().Sub(start)
	resp, err := next.Complete(ctx, req)
	storeStart := c.now()
	if cacheable(resp, err) {
		e := &Entry{Key: bytes.Clone(key), Scope: resp.Scope, Response: resp.Clone(), Stored: storeStart}
		if e.Scope == (model.Scope{}) {
			e.Scope = req.Scope
		}
		if c.store.Set(ctx, h, e, c.ttl) {
			c.store.Wait()
			c.st.stored.Add(1)
		} else {
			c.st.dropped.Add(1)
		}
	} else {
		c.st.notCached.Add(1)
	}
	d := lookup + c.now().Sub(storeStart)
	return annotate(resp, model.CacheMiss, d, mismatch), err
}

func (c *Cache) putBuf(bp *[]byte) {
	if cap(*bp) > 64<<10 {
		return // do not keep a huge scratch buffer alive
	}
	c.bufs.Put(bp)
}

// bypass reports whether req cannot be keyed safely (see Cache).
func (c *Cache) bypass(req *model.Request) bool {
	if strings.TrimSpace(req.Text) == "" {
		return true
	}
	if c.spec.has(fTenant) && req.Scope.Tenant == "" {
		return true
	}
	if c.spec.has(fPermission) && req.Scope.Permission == "" {
		return true
	}
	return false
}

// served builds the response of a hit from a stored one: a clone, so the
// caller may change it freely, with a fresh trace. Content, Model,
// FinishReason and Scope (the provenance the evaluator judges) are kept, as
// is the contract result; usage is zero because a hit calls no model.
func served(stored *model.Response, leak string, d time.Duration) *model.Response {
	r := stored.Clone()
	r.Usage = model.Usage{}
	r.Trace = model.Trace{
		Cache:      model.CacheHit,
		CacheDur:   d,
		Leak:       leak,
		TTFT:       d,
		Validated:  stored.Trace.Validated,
		ContractOK: stored.Trace.ContractOK,
		Violations: r.Trace.Violations, // already copied by Clone
	}
	return r
}

// annotate writes the cache's trace fields. A failure without a response
// gets one carrying only the trace, so the record still shows the cache
// status and time (model.Response allows a response beside an error).
func annotate(resp *model.Response, status string, d time.Duration, mismatch bool) *model.Response {
	if resp == nil {
		resp = &model.Response{}
	}
	resp.Trace.Cache = status
	resp.Trace.CacheDur = d
	resp.Trace.ScopeMismatch = mismatch
	return resp
}

// cacheable reports whether an inner answer may be stored: no error, a
// complete answer (finish reason stop or unset: not truncated, not refused),
// non-empty, and — when the contract layer ran — one that met the contract.
func cacheable(resp *model.Response, err error) bool {
	switch {
	case err != nil || resp == nil || resp.Content == "":
		return false
	case resp.FinishReason != "" && resp.FinishReason != model.FinishStop:
		return false
	case resp.Trace.Validated && !resp.Trace.ContractOK:
		return false
	case len(resp.Trace.Violations) > 0:
		return false
	}
	return true
}

// Stats are the cache layer's counters, a plain struct for the run manifest
// and the audit. Hits+Misses+Bypasses is the number of requests seen.
type Stats struct {
	Hits     uint64 `json:"hits"`     // answers served from the store
	Misses   uint64 `json:"misses"`   // requests the inner stack answered
	Bypasses uint64 `json:"bypasses"` // requests not keyed (see Cache)
	// Expired counts misses whose entry was older than the TTL.
	Expired uint64 `json:"expired"`
	// ScopeMismatches counts hits refused by CheckOnHit (served as misses).
	ScopeMismatches uint64 `json:"scope_mismatches"`
	// KeyCollisions counts stored entries whose full key differed from the
	// request's under the same hash: refused with CheckOnHit, served without.
	KeyCollisions uint64 `json:"key_collisions"`
	// Leaks counts hits served for another scope, by kind.
	Leaks LeakCounts `json:"leaks"`
	// Refused counts, by the kind they would have leaked, hits that
	// CheckOnHit refused because the scope differed.
	Refused LeakCounts `json:"refused"`
	// Stored counts answers the store accepted; StoreDropped those it
	// dropped (Set returned false); NotCached misses whose answer must not be
	// cached (error, truncated, refused, empty or contract-failing).
	Stored       uint64 `json:"stored"`
	StoreDropped uint64 `json:"store_dropped"`
	NotCached    uint64 `json:"not_cached"`
}

// LeakCounts counts hits by leak kind.
type LeakCounts struct {
	CrossTenant uint64 `json:"cross_tenant"`
	Permission  uint64 `json:"permission"`
	Stale       uint64 `json:"stale"`
	Language    uint64 `json:"language"`
}

// Total is the sum over all kinds.
func (l LeakCounts) Total() uint64 { return l.CrossTenant + l.Permission + l.Stale + l.Language }

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	s := &c.st
	return Stats{
		Hits:            s.hits.Load(),
		Misses:          s.misses.Load(),
		Bypasses:        s.bypasses.Load(),
		Expired:         s.expired.Load(),
		ScopeMismatches: s.mismatches.Load(),
		KeyCollisions:   s.collisions.Load(),
		Leaks:           s.leaks.load(),
		Refused:         s.refused.load(),
		Stored:          s.stored.Load(),
		StoreDropped:    s.dropped.Load(),
		NotCached:       s.notCached.Load(),
	}
}

type counters struct {
	hits, misses, bypasses, expired atomic.Uint64
	mismatches, collisions          atomic.Uint64
	stored, dropped, notCached      atomic.Uint64
	leaks, refused                  leakCounters
}

type leakCounters struct {
	crossTenant, permission, stale, language atomic.Uint64
}

func (l *leakCounters) add(kind string) {
	switch kind {
	case LeakCrossTenant:
		l.crossTenant.Add(1)
	case LeakPermission:
		l.permission.Add(1)
	case LeakStale:
		l.stale.Add(1)
	case LeakLanguage:
		l.language.Add(1)
	}
}

func (l *leakCounters) load() LeakCounts {
	return LeakCounts{
		CrossTenant: l.crossTenant.Load(),
		Permission:  l.permission.Load(),
		Stale:       l.stale.Load(),
		Language:    l.language.Load(),
	}
}
