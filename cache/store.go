package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/crab-testbed/crab/model"
)

// ErrBadConfig is returned for an invalid Config or RistrettoConfig.
var ErrBadConfig = errors.New("cache: bad config")

// Entry is one cached answer with its provenance. Entries are immutable once
// handed to a Store: the middleware serves clones of Response, never the
// stored value, and nothing writes to an entry after Set.
type Entry struct {
	// Key is the full key encoding the entry was stored under. A hit compares
	// it with the request's encoding, so two requests whose 64-bit hashes
	// collide are told apart.
	Key []byte
	// Scope is the scope the answer was built for (the response's Scope, or
	// the request's when the backend set none). A hit compares it with the
	// request's scope to detect and label leaks.
	Scope model.Scope
	// Conversation is the digest of the system prompt and history the
	// answer was built under; a hit under a key without system or history
	// compares it with the request's to label (and, with CheckOnHit,
	// refuse) an answer to another conversation.
	Conversation Conversation
	// Gen is the generation of Scope's tenant and permission when the
	// request that built the answer started; the entry is served only while
	// that is still the current generation (see Cache.InvalidateTenant).
	Gen Generation
	// Response is a private copy of the answer as the inner stack returned
	// it (a shared store keeps what a hit serves: content, model, finish
	// reason, usage, scope and the contract result).
	Response *model.Response
	// Stored is when the entry was written, by the cache's clock; an entry
	// older than the TTL is a miss even if the store still holds it.
	Stored time.Time
	// Tag is the entry's integrity tag (HMAC-SHA256 under the cache's
	// secret, see Config.TagKey); an entry whose tag does not verify is
	// never served.
	Tag []byte
}

// cost is the entry's approximate size in bytes, the unit of MaxCost.
func (e *Entry) cost() int64 {
	n := 256 + len(e.Key) + scopeLen(e.Scope)
	if r := e.Response; r != nil {
		n += len(r.Content) + len(r.Model) + len(r.FinishReason)
		for _, v := range r.Trace.Violations {
			n += 16 + len(v)
		}
	}
	return int64(n)
}

// Store holds entries by 64-bit key hash. It is declared here, by its
// consumer, so an in-process store and a shared one (e.g. Redis) are
// interchangeable. Implementations are safe for concurrent use; a store never
// decides whether an entry is right for a request (the middleware does, from
// Entry.Key and Entry.Scope).
type Store interface {
	// Get returns the entry stored under key. A failure to reach the store
	// is a miss (and should be counted in Metrics).
	Get(ctx context.Context, key uint64) (*Entry, bool)
	// Set stores e under key for ttl (0: no expiry). It may be asynchronous
	// and may drop the entry; false means it was certainly not stored.
	Set(ctx context.Context, key uint64, e *Entry, ttl time.Duration) bool
	// Wait blocks until every Set that returned true is visible to Get.
	Wait()
	// Metrics reports the store's own counters (for the run manifest).
	Metrics() StoreMetrics
	// Close releases the store. Call it once, after the last request.
	Close()
}

// StoreMetrics are a store's own counters, a plain struct so that a run
// manifest can include them: a low hit rate is explained by rejected or
// dropped sets and evictions, not by the workload. Counters a store does not
// have stay zero.
type StoreMetrics struct {
	Hits         uint64 `json:"hits"`          // Get found an entry
	Misses       uint64 `json:"misses"`        // Get found none
	KeysAdded    uint64 `json:"keys_added"`    // entries admitted
	KeysUpdated  uint64 `json:"keys_updated"`  // entries replaced under an existing key
	KeysEvicted  uint64 `json:"keys_evicted"`  // entries evicted to make room
	SetsDropped  uint64 `json:"sets_dropped"`  // Set calls dropped before admission (ristretto's buffer was full)
	SetsRejected uint64 `json:"sets_rejected"` // Set calls the admission policy refused
	CostAdded    uint64 `json:"cost_added"`    // bytes admitted (approximate)
	CostEvicted  uint64 `json:"cost_evicted"`  // bytes evicted (approximate)
	Errors       uint64 `json:"errors"`        // calls that failed (a shared store that could not be reached); each Get among them counted as a miss
	// Uncertain counts lookups whose invalidation counter was missing or
	// unreadable in a shared store: whatever entry they found was refused.
	Uncertain uint64 `json:"uncertain,omitempty"`
}

// RistrettoConfig sizes the in-process store. The zero value gives the
// defaults, fit for a run of up to a few hundred thousand distinct answers.
type RistrettoConfig struct {
	// NumCounters is the number of access-frequency counters, about 10× the
	// number of entries expected when full. Default 1<<20 (about 3 MB).
	NumCounters int64
	// MaxCost is the capacity in bytes of entries (key, content, scope and
	// a fixed overhead each). Default 64 MiB.
	MaxCost int64
	// BufferItems is the size of ristretto's Get buffers. Default 64, the
	// value ristretto recommends.
	BufferItems int64
}

// Defaults of RistrettoConfig.
const (
	DefaultNumCounters = 1 << 20
	DefaultMaxCost     = 64 << 20
	DefaultBufferItems = 64
)

// Ristretto is the default Store: an in-process github.com/dgraph-io/ristretto
// cache with metrics always on (the manifest needs them; their cost is a few
// atomic adds per call).
//
// Ristretto applies Set asynchronously and may drop it (buffer full) or
// refuse it (admission policy): the middleware calls Wait after a Set so the
// next identical request can hit, and counts a Set that returned false.
//
// It keeps the invalidation counters of the caches over it (Generations)
// in process.
type Ristretto struct {
	mu     sync.RWMutex // held for reading by every call, for writing by Close: no call races Close
	closed bool
	c      *ristretto.Cache[uint64, *Entry]
	gens   localGenerations
}

var (
	_ Store       = (*Ristretto)(nil)
	_ Generations = (*Ristretto)(nil)
)

// Generation returns the in-process counters of (tenant, permission); it
// never fails.
func (r *Ristretto) Generation(ctx context.Context, tenant, permission string) (Generation, error) {
	return r.gens.Generation(ctx, tenant, permission)
}

// BumpTenant moves the tenant's counter on; it never fails.
func (r *Ristretto) BumpTenant(ctx context.Context, tenant string) error {
	return r.gens.BumpTenant(ctx, tenant)
}

// BumpPermission moves the (tenant, permission) counter on; it never fails.
func (r *Ristretto) BumpPermission(ctx context.Context, tenant, permission string) error {
	return r.gens.BumpPermission(ctx, tenant, permission)
}

// NewRistretto builds the store; zero fields take their defaults, negative
// ones are an error.
func NewRistretto(cfg RistrettoConfig) (*Ristretto, error) {
	if cfg.NumCounters < 0 || cfg.MaxCost < 0 || cfg.BufferItems < 0 {
		return nil, fmt.Errorf("%w: ristretto sizes must not be negative: %+v", ErrBadConfig, cfg)
	}
	if cfg.NumCounters == 0 {
		cfg.NumCounters = DefaultNumCounters
	}
	if cfg.MaxCost == 0 {
		cfg.MaxCost = DefaultMaxCost
	}
	if cfg.BufferItems == 0 {
		cfg.BufferItems = DefaultBufferItems
	}
	c, err := ristretto.NewCache(&ristretto.Config[uint64, *Entry]{
		NumCounters: cfg.NumCounters,
		MaxCost:     cfg.MaxCost,
		BufferItems: cfg.BufferItems,
		Metrics:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: ristretto: %w", ErrBadConfig, err)
	}
	return &Ristretto{c: c}, nil
}

// Get returns the entry under key; ctx is unused (the lookup never blocks).
func (r *Ristretto) Get(_ context.Context, key uint64) (*Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, false
	}
	e, ok := r.c.Get(key)
	return e, ok && e != nil
}

// Set hands e to ristretto with its size as cost. True means accepted into
// the write buffer, not yet visible: call Wait for that. False means dropped.
func (r *Ristretto) Set(_ context.Context, key uint64, e *Entry, ttl time.Duration) bool {
	if e == nil || ttl < 0 {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return false
	}
	return r.c.SetWithTTL(key, e, e.cost(), ttl)
}

// Wait blocks until every accepted Set has been applied (or refused by the
// admission policy). It waits on ristretto's write buffer only, which drains
// in microseconds, so it takes no context.
func (r *Ristretto) Wait() {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return
	}
	r.c.Wait()
}

// Metrics returns ristretto's counters. After Close they read zero.
func (r *Ristretto) Metrics() StoreMetrics {
	r.mu.RLock()
	defer r.mu.RUnlock()
	m := r.c.Metrics
	if r.closed || m == nil {
		return StoreMetrics{}
	}
	return StoreMetrics{
		Hits:         m.Hits(),
		Misses:       m.Misses(),
		KeysAdded:    m.KeysAdded(),
		KeysUpdated:  m.KeysUpdated(),
		KeysEvicted:  m.KeysEvicted(),
		SetsDropped:  m.SetsDropped(),
		SetsRejected: m.SetsRejected(),
		CostAdded:    m.CostAdded(),
		CostEvicted:  m.CostEvicted(),
	}
}

// Close stops ristretto's goroutines. Later calls are harmless: Get misses,
// Set returns false. Read Metrics before closing.
func (r *Ristretto) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	r.c.Close()
}
