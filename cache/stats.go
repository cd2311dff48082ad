package cache

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/crab-testbed/crab/model"
)

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

// maxLeakKinds bounds the number of leak kinds LeakCounts can count: the
// table of scope fields and the two of the conversation.
const maxLeakKinds = 16

// LeakCounts counts hits by leak kind (LeakKinds). Its JSON form is an
// object with one member per kind, in the order of LeakKinds, zeros
// included.
type LeakCounts struct {
	n [maxLeakKinds]uint64 // by position in LeakKinds
}

// leakIndex is kind's position in LeakKinds, or -1 for "" or an unknown
// kind. It does not allocate.
func leakIndex(kind string) int {
	if kind == "" {
		return -1
	}
	scope := model.ScopeFields()
	for i := range scope {
		if scope[i].Leak == kind {
			return i
		}
	}
	switch kind {
	case LeakSystemPrompt:
		return len(scope)
	case LeakHistory:
		return len(scope) + 1
	}
	return -1
}

// Total is the sum over all kinds.
func (l LeakCounts) Total() uint64 {
	var n uint64
	for _, v := range l.n {
		n += v
	}
	return n
}

// Get returns the count of one kind (0 for an unknown one).
func (l LeakCounts) Get(kind string) uint64 {
	if i := leakIndex(kind); i >= 0 {
		return l.n[i]
	}
	return 0
}

// Add counts one hit of kind; "" or an unknown kind counts nothing.
func (l *LeakCounts) Add(kind string) { l.AddN(kind, 1) }

// AddN counts n hits of kind; "" or an unknown kind counts nothing.
func (l *LeakCounts) AddN(kind string, n uint64) {
	if i := leakIndex(kind); i >= 0 {
		l.n[i] += n
	}
}

// MarshalJSON writes every kind's count, in the order of LeakKinds.
func (l LeakCounts) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, kind := range LeakKinds() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, kind)
		b = append(b, ':')
		b = strconv.AppendUint(b, l.n[i], 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes; an unknown kind is an error.
func (l *LeakCounts) UnmarshalJSON(data []byte) error {
	var m map[string]uint64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*l = LeakCounts{}
	for kind, n := range m {
		if leakIndex(kind) < 0 {
			return fmt.Errorf("cache: unknown leak kind %q", kind)
		}
		l.AddN(kind, n)
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

// leakCounters counts hits by leak kind, by position in LeakKinds.
type leakCounters struct {
	n [maxLeakKinds]atomic.Uint64
}

func (l *leakCounters) add(kind string) {
	if i := leakIndex(kind); i >= 0 {
		l.n[i].Add(1)
	}
}

func (l *leakCounters) load() LeakCounts {
	var out LeakCounts
	for i := range l.n {
		out.n[i] = l.n[i].Load()
	}
	return out
}
