package cache

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"
	"sync/atomic"

	"github.com/crab-testbed/crab/model"
)

// TagKeyBytes is the least length of Config.TagKey.
const TagKeyBytes = 16

// A cache serves an entry only when it can vouch for it: the entry's
// integrity tag verifies under the cache's secret (so nothing written
// into a shared store by anyone else — by hand, by another deployment, by
// a process with another secret — is served, and nothing stored under
// another contract either: the tag binds Config.Contract), the scope's
// invalidation counter has not gone back (a store restored from an older
// snapshot), and the stored answer is still one the cache would store
// (finished, non-empty, not recorded as failing; validated again only
// when the tag binds no contract). Anything else is a miss counted in
// Stats.Untrusted by reason.

// UntrustedCounts counts entries found but not served because the cache
// could not vouch for them, by reason.
type UntrustedCounts struct {
	// BadTag: the integrity tag did not verify (forged, altered, copied
	// from another deployment or written under another secret).
	BadTag uint64 `json:"bad_tag"`
	// RolledBack: the scope's invalidation counter was lower than one this
	// process had already seen (the store went back in time); the scope is
	// a miss until its counter moves past what was seen.
	RolledBack uint64 `json:"rolled_back"`
	// Contract: the stored answer would not be stored today: truncated,
	// refused, empty, flagged as failing, or failing the contract when
	// validated again (only when the tag binds no contract).
	Contract uint64 `json:"contract"`
}

// Total is the sum over all reasons.
func (u UntrustedCounts) Total() uint64 { return u.BadTag + u.RolledBack + u.Contract }

type untrustedCounters struct{ badTag, rolledBack, contract atomic.Uint64 }

func (u *untrustedCounters) load() UntrustedCounts {
	return UntrustedCounts{BadTag: u.badTag.Load(), RolledBack: u.rolledBack.Load(), Contract: u.contract.Load()}
}

// tagger computes entry tags: HMAC-SHA256 under the cache's secret over
// the namespace, the contract's identity, the store key and the entry's
// encoding (full key, scope,
// conversation, generation, time stored, content, model, finish reason,
// usage, provenance, contract flags and violations).
type tagger struct {
	ns   []byte
	macs sync.Pool // hash.Hash
	bufs sync.Pool // *[]byte
}

func newTagger(key []byte, namespace, contract string) (*tagger, error) {
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	key = append([]byte(nil), key...)
	// The namespace and the contract are length-prefixed, so no pair of
	// them encodes like another.
	ns := binary.AppendUvarint(nil, uint64(len(namespace)))
	ns = append(ns, namespace...)
	ns = binary.AppendUvarint(ns, uint64(len(contract)))
	ns = append(ns, contract...)
	t := &tagger{ns: ns}
	t.macs.New = func() any { return hmac.New(sha256.New, key) }
	t.bufs.New = func() any { b := make([]byte, 0, 1024); return &b }
	return t, nil
}

func (t *tagger) tag(h uint64, e *Entry) []byte {
	bp := t.bufs.Get().(*[]byte)
	sum := bytes.Clone(t.sum(bp, h, e))
	t.putBuf(bp)
	return sum
}

func (t *tagger) verify(h uint64, e *Entry) bool {
	if len(e.Tag) != sha256.Size {
		return false
	}
	bp := t.bufs.Get().(*[]byte)
	ok := hmac.Equal(e.Tag, t.sum(bp, h, e))
	t.putBuf(bp)
	return ok
}

// sum computes e's tag in the scratch buffer *bp (the result is valid
// until the buffer is reused), so that checking a tag allocates nothing.
func (t *tagger) sum(bp *[]byte, h uint64, e *Entry) []byte {
	mac := t.macs.Get().(hash.Hash)
	b := append((*bp)[:0], t.ns...)
	b = binary.LittleEndian.AppendUint64(b, h)
	b = appendEntryBody(b, e)
	mac.Reset()
	mac.Write(b)
	sum := mac.Sum(b[:0]) // the encoding is written: its room holds the sum
	t.macs.Put(mac)
	*bp = sum
	return sum
}

func (t *tagger) putBuf(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		t.bufs.Put(bp)
	}
}

// verified reports whether e's tag verifies. An in-process store hands
// out the very entry it was given, again on every hit: the entry whose tag
// verified last under a store key is remembered (held, so its address is
// never another entry's), and that same object is not verified again. A
// store that decodes a fresh entry on every lookup (Redis) gets the tag
// checked every time.
func (c *Cache) verified(h uint64, e *Entry) bool {
	slot := &c.seen[h%uint64(len(c.seen))]
	if s := slot.Load(); s != nil && s.e == e && s.h == h {
		return true
	}
	if !c.tags.verify(h, e) {
		return false
	}
	slot.Store(&seenEntry{h: h, e: e})
	return true
}

// seenEntry is an entry whose tag verified under store key h.
type seenEntry struct {
	h uint64
	e *Entry
}

// servable reports whether a stored answer is one the cache would store
// now: finished and non-empty, and valid under the contract. An entry
// whose tag verified was checked against the contract in force when it
// was stored (the tag binds Config.Contract), so it is validated again
// only when the tag does not bind one. The entry's own recorded contract
// result counts too: a hit serves it with the answer, so an entry
// recorded as failing (one this cache would never have written) is not
// served.
func (c *Cache) servable(r *model.Response) bool {
	recordedFailing := (r.Trace.Validated && !r.Trace.ContractOK) || len(r.Trace.Violations) > 0
	return !recordedFailing && Cacheable(r, nil, c.recheck)
}

// highWater remembers the highest invalidation counters this process has
// seen, per tenant and per (tenant, permission). A counter read lower than
// that means the store went back in time (restored from an older snapshot,
// an asynchronous replica promoted): entries stamped with the values it
// has again may be ones an invalidation had retired, so the scope serves
// nothing until its counter moves past the highest value seen.
type highWater struct {
	mu      sync.RWMutex
	tenants map[string]*mark
	perms   map[scopeID]*mark
}

type scopeID struct{ tenant, permission string }

type mark struct {
	seen   uint64
	rolled bool // went below seen; served again only above it
}

func (m *mark) ok(v uint64) bool {
	if m.rolled {
		return v > m.seen
	}
	return v >= m.seen
}

// observe records g as read for (tenant, permission) and reports whether
// it can be trusted. When it cannot, floor is the least generation that
// would be (each counter one past the highest seen; 0 for a counter that
// did not go back).
func (w *highWater) observe(tenant, permission string, g Generation) (ok bool, floor Generation) {
	id := scopeID{tenant, permission}
	w.mu.RLock()
	t, p := w.tenants[tenant], w.perms[id]
	fresh := t != nil && p != nil && t.seen == g.Tenant && p.seen == g.Permission && !t.rolled && !p.rolled
	w.mu.RUnlock()
	if fresh {
		return true, Generation{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tenants == nil {
		w.tenants, w.perms = map[string]*mark{}, map[scopeID]*mark{}
	}
	if t = w.tenants[tenant]; t == nil {
		t = &mark{seen: g.Tenant}
		w.tenants[tenant] = t
	}
	if p = w.perms[id]; p == nil {
		p = &mark{seen: g.Permission}
		w.perms[id] = p
	}
	tOK, pOK := t.ok(g.Tenant), p.ok(g.Permission)
	if tOK && pOK {
		t.seen, t.rolled = max(t.seen, g.Tenant), false
		p.seen, p.rolled = max(p.seen, g.Permission), false
		return true, Generation{}
	}
	if !tOK {
		t.rolled = true
		floor.Tenant = t.seen + 1
	}
	if !pOK {
		p.rolled = true
		floor.Permission = p.seen + 1
	}
	return false, floor
}

// GenerationRaiser is implemented by a shared store whose counters can
// go back in time (Redis restored from a snapshot): it moves the counters
// of (tenant, permission) up to at least floor (a zero field leaves its
// counter alone), so a scope found rolled back serves again as soon as its
// counters are past every value an entry could carry.
type GenerationRaiser interface {
	RaiseGeneration(ctx context.Context, tenant, permission string, floor Generation) error
}

// trusted checks the generation read for a request's scope against the
// highest seen, and when it went back, asks the store to move it on.
func (c *Cache) trusted(ctx context.Context, tenant, permission string, g Generation) bool {
	ok, floor := c.water.observe(tenant, permission, g)
	if !ok {
		c.st.untrusted.rolledBack.Add(1)
		if r, can := c.gens.(GenerationRaiser); can {
			_ = r.RaiseGeneration(ctx, tenant, permission, floor)
		}
	}
	return ok
}

// sawInvalidation reads the counters an invalidation just moved on, so
// that a store that later goes back to an older snapshot is caught even
// before the next lookup of the scope.
func (c *Cache) sawInvalidation(ctx context.Context, tenant, permission string) {
	if g, err := c.gens.Generation(ctx, tenant, permission); err == nil {
		c.water.observe(tenant, permission, g)
	}
}
