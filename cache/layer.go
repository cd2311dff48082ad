package cache

import (
	"context"
	"crypto/tls"

	"github.com/crab-testbed/crab/model"
)

// Store kinds crab ships (a stack's table lists them).
const (
	StoreRistretto = "ristretto" // in process, the default
	StoreRedis     = "redis"     // shared between processes
)

// DefaultStore is the store used when a configuration names none.
const DefaultStore = StoreRistretto

// StoreConfig is what any store may be opened with; a store ignores the
// fields it has no use for.
type StoreConfig struct {
	// Context bounds the opening (a shared store's first round trip); nil
	// means context.Background().
	Context context.Context
	// MaxCost is the capacity in bytes of answers (0: the store's default).
	MaxCost int64
	// NumCounters sizes an in-process store's frequency table (0: default).
	NumCounters int64
	// Addr is a shared store's host:port (empty: its default).
	Addr string
	// Prefix isolates a shared store's keys, e.g. one per run and arm.
	Prefix string
	// DeleteOnClose removes every key under Prefix on Close, so a pass
	// leaves nothing behind.
	DeleteOnClose bool
	// Username and Password authenticate to a shared store that requires
	// it; TLS, when set, encrypts the connection (and names the CA and the
	// client certificate).
	Username, Password string
	TLS                *tls.Config
	// Tagged and Logf are RedisConfig's: the cache's entries carry a tag
	// secret every replica shares, and where a shared store's start-up
	// warnings go.
	Tagged bool
	Logf   func(format string, args ...any)
}

// OpenRistretto opens the in-process store with cfg's capacity.
func OpenRistretto(cfg StoreConfig) (Store, error) {
	return NewRistretto(RistrettoConfig{MaxCost: cfg.MaxCost, NumCounters: cfg.NumCounters})
}

// OpenRedis opens the shared store at cfg's address under its prefix.
func OpenRedis(cfg StoreConfig) (Store, error) {
	ctx := cfg.Context
	if ctx == nil {
		ctx = context.Background()
	}
	return NewRedis(ctx, RedisConfig{Addr: cfg.Addr, Prefix: cfg.Prefix, DeleteOnClose: cfg.DeleteOnClose,
		Username: cfg.Username, Password: cfg.Password, TLS: cfg.TLS, Tagged: cfg.Tagged, Logf: cfg.Logf})
}

// Layer is a cache layer of a stack: the exact cache (Cache) or another
// kind of a stack's table (the semantic cache). Stats and Key feed the run
// manifest.
type Layer interface {
	Middleware() model.Middleware
	Stats() Stats
	Key() KeySpec
}

var _ Layer = (*Cache)(nil)

// Cache layer kinds crab ships (a stack's table lists them).
const (
	KindExact    = "exact"    // answers served by exact key (Cache), the table's default
	KindSemantic = "semantic" // answers served by embedding similarity within the exact scope (cache/semantic)
)
