package cache

import "sync/atomic"

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
	// Invalidations counts InvalidateTenant and InvalidatePermission calls.
	Invalidations uint64 `json:"invalidations"`
	// Invalidated counts entries found but not served because their tenant
	// or permission was invalidated after they were built (served as misses).
	Invalidated uint64 `json:"invalidated"`
	// DiscardedWrites counts answers not stored because an invalidation of
	// their scope came while they were in flight.
	DiscardedWrites uint64 `json:"discarded_writes"`
	// Unavailable counts requests that neither looked up nor stored because
	// the invalidation counters could not be read (a shared store that
	// cannot be reached); the inner stack answered them.
	Unavailable uint64 `json:"unavailable"`
	// Untrusted counts entries found but not served because the cache
	// could not vouch for them (tag, rolled-back counters, contract), by
	// reason; each served as a miss.
	Untrusted UntrustedCounts `json:"untrusted"`
}

// LeakCounts counts hits by leak kind.
type LeakCounts struct {
	CrossTenant  uint64 `json:"cross_tenant"`
	Permission   uint64 `json:"permission"`
	Stale        uint64 `json:"stale"`
	Language     uint64 `json:"language"`
	SystemPrompt uint64 `json:"system_prompt"`
	History      uint64 `json:"history"`
}

// Total is the sum over all kinds.
func (l LeakCounts) Total() uint64 {
	return l.CrossTenant + l.Permission + l.Stale + l.Language + l.SystemPrompt + l.History
}

// Get returns the count of one kind (0 for an unknown one).
func (l LeakCounts) Get(kind string) uint64 {
	if p := l.field(kind); p != nil {
		return *p
	}
	return 0
}

// Add counts one hit of kind; "" or an unknown kind counts nothing.
func (l *LeakCounts) Add(kind string) {
	if p := l.field(kind); p != nil {
		*p++
	}
}

func (l *LeakCounts) field(kind string) *uint64 {
	switch kind {
	case LeakCrossTenant:
		return &l.CrossTenant
	case LeakPermission:
		return &l.Permission
	case LeakStale:
		return &l.Stale
	case LeakLanguage:
		return &l.Language
	case LeakSystemPrompt:
		return &l.SystemPrompt
	case LeakHistory:
		return &l.History
	}
	return nil
}

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
		Invalidations:   s.invalidations.Load(),
		Invalidated:     s.invalidated.Load(),
		DiscardedWrites: s.discarded.Load(),
		Unavailable:     s.unavailable.Load(),
		Untrusted:       s.untrusted.load(),
	}
}

type counters struct {
	hits, misses, bypasses, expired atomic.Uint64
	mismatches, collisions          atomic.Uint64
	stored, dropped, notCached      atomic.Uint64
	invalidations, invalidated      atomic.Uint64
	discarded, unavailable          atomic.Uint64
	leaks, refused                  leakCounters
	untrusted                       untrustedCounters
}

type leakCounters struct {
	crossTenant, permission, stale, language, system, history atomic.Uint64
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
	case LeakSystemPrompt:
		l.system.Add(1)
	case LeakHistory:
		l.history.Add(1)
	}
}

func (l *leakCounters) load() LeakCounts {
	return LeakCounts{
		CrossTenant:  l.crossTenant.Load(),
		Permission:   l.permission.Load(),
		Stale:        l.stale.Load(),
		Language:     l.language.Load(),
		SystemPrompt: l.system.Load(),
		History:      l.history.Load(),
	}
}
