package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrUnknownStore is returned by OpenStore for a kind no store is
// registered under.
var ErrUnknownStore = errors.New("cache: unknown store")

// Store kinds registered by this package.
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
}

// OpenStoreFunc opens one store.
type OpenStoreFunc func(cfg StoreConfig) (Store, error)

// The store registry: kind → opener, in registration order so help text
// and error messages list the default first.
var (
	storesMu sync.RWMutex
	stores   = map[string]OpenStoreFunc{}
	storeIDs []string
)

func init() {
	RegisterStore(StoreRistretto, func(cfg StoreConfig) (Store, error) {
		return NewRistretto(RistrettoConfig{MaxCost: cfg.MaxCost, NumCounters: cfg.NumCounters})
	})
	RegisterStore(StoreRedis, func(cfg StoreConfig) (Store, error) {
		ctx := cfg.Context
		if ctx == nil {
			ctx = context.Background()
		}
		return NewRedis(ctx, RedisConfig{Addr: cfg.Addr, Prefix: cfg.Prefix, DeleteOnClose: cfg.DeleteOnClose})
	})
}

// RegisterStore makes a store kind available to experiment files, serve
// configurations and crab audit. Adding a store is one package that
// implements Store and calls RegisterStore from its init function. It
// panics when the kind is empty or taken, as database/sql.Register does.
func RegisterStore(kind string, open OpenStoreFunc) {
	storesMu.Lock()
	defer storesMu.Unlock()
	if kind == "" || open == nil {
		panic("cache: RegisterStore needs a kind and an opener")
	}
	if _, dup := stores[kind]; dup {
		panic("cache: RegisterStore called twice for " + kind)
	}
	stores[kind] = open
	storeIDs = append(storeIDs, kind)
}

// StoreKinds lists the registered store kinds, the default first.
func StoreKinds() []string {
	storesMu.RLock()
	defer storesMu.RUnlock()
	return append([]string(nil), storeIDs...)
}

// KnownStore reports whether kind is registered.
func KnownStore(kind string) bool {
	storesMu.RLock()
	defer storesMu.RUnlock()
	_, ok := stores[kind]
	return ok
}

// StoreChoices is the registered kinds as an "a or b" list, for messages
// and help text.
func StoreChoices() string {
	kinds := StoreKinds()
	if len(kinds) <= 1 {
		return strings.Join(kinds, "")
	}
	return strings.Join(kinds[:len(kinds)-1], ", ") + " or " + kinds[len(kinds)-1]
}

// OpenStore opens a store of the registered kind ("" means DefaultStore).
// An unknown kind wraps ErrUnknownStore.
func OpenStore(kind string, cfg StoreConfig) (Store, error) {
	if kind == "" {
		kind = DefaultStore
	}
	storesMu.RLock()
	open, ok := stores[kind]
	storesMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (want %s)", ErrUnknownStore, kind, StoreChoices())
	}
	return open(cfg)
}
