package cache

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/crab-testbed/crab/model"
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
	// Username and Password authenticate to a shared store that requires
	// it; TLS, when set, encrypts the connection (and names the CA and the
	// client certificate).
	Username, Password string
	TLS                *tls.Config
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
		return NewRedis(ctx, RedisConfig{Addr: cfg.Addr, Prefix: cfg.Prefix, DeleteOnClose: cfg.DeleteOnClose,
			Username: cfg.Username, Password: cfg.Password, TLS: cfg.TLS})
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

// Layer is a cache layer of a stack: the exact cache (Cache) or another
// registered kind (the semantic cache). Stats and Key feed the run
// manifest.
type Layer interface {
	Middleware() model.Middleware
	Stats() Stats
	Key() KeySpec
}

var _ Layer = (*Cache)(nil)

// Cache layer kinds.
const (
	KindExact    = "exact"    // answers served by exact key (Cache), the default
	KindSemantic = "semantic" // answers served by embedding similarity within the exact scope (cache/semantic)
)

// DefaultKind is the kind used when a configuration names none.
const DefaultKind = KindExact

// EmbedderConfig names a semantic layer's embedder and how to reach it.
type EmbedderConfig struct {
	// Kind is a registered embedder: builtin, builtin-guarded or openai.
	Kind string
	// BaseURL, Model and APIKey reach an OpenAI-compatible /v1/embeddings
	// endpoint (kind openai).
	BaseURL, Model, APIKey string
	// Dim is the built-in embedders' vector length (0: their default).
	Dim int
}

// LayerConfig is what any cache layer kind is built with; a kind ignores
// the fields it has no use for.
type LayerConfig struct {
	// Config is the key, TTL, check on hit and clock.
	Config Config
	// Store holds an exact cache's entries (a semantic layer keeps its own
	// in-process index and leaves it unused).
	Store Store
	// Threshold is a semantic layer's least cosine similarity for a hit.
	Threshold float64
	// Embedder is a semantic layer's embedder.
	Embedder EmbedderConfig
}

// NewLayerFunc builds one cache layer.
type NewLayerFunc func(cfg LayerConfig) (Layer, error)

var (
	kindsMu sync.RWMutex
	kinds   = map[string]NewLayerFunc{}
	kindIDs []string
)

func init() {
	RegisterKind(KindExact, func(cfg LayerConfig) (Layer, error) { return New(cfg.Config, cfg.Store) })
}

// RegisterKind makes a cache layer kind available to experiment files
// and serve configurations; a package implementing one calls it from its
// init function (the semantic cache registers "semantic"). It panics when
// the kind is empty or taken.
func RegisterKind(kind string, build NewLayerFunc) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if kind == "" || build == nil {
		panic("cache: RegisterKind needs a kind and a constructor")
	}
	if _, dup := kinds[kind]; dup {
		panic("cache: RegisterKind called twice for " + kind)
	}
	kinds[kind] = build
	kindIDs = append(kindIDs, kind)
}

// KnownKind reports whether a cache layer kind is registered.
func KnownKind(kind string) bool {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	_, ok := kinds[kind]
	return ok
}

// KindChoices lists the registered kinds, the default first, for
// messages and help text.
func KindChoices() string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	return strings.Join(kindIDs, ", ")
}

// NewLayer builds a layer of the registered kind ("" means DefaultKind).
// An unknown kind wraps ErrUnknownKind.
func NewLayer(kind string, cfg LayerConfig) (Layer, error) {
	if kind == "" {
		kind = DefaultKind
	}
	kindsMu.RLock()
	build, ok := kinds[kind]
	kindsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (want %s)", ErrUnknownKind, kind, KindChoices())
	}
	return build(cfg)
}

// ErrUnknownKind is returned by NewLayer for a kind no layer is
// registered under.
var ErrUnknownKind = errors.New("cache: unknown cache kind")
