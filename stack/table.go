package stack

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/router"
)

// Table is the one list of the kinds a stack is built from: cache layer
// kinds, cache stores and router scorers, each entry with its constructor,
// its validation and its help text. Validate, Build, flag help and error
// messages all read the same table, so a kind added to it is accepted,
// built and listed everywhere at once, and nothing registers itself as a
// side effect of an import.
//
// Builtin returns crab's table. A program (or a test) that adds a kind
// appends an entry to its own Table and calls its Validate and Build; see
// docs/extending.md. The first entry of each list is the default.
type Table struct {
	Kinds   []CacheKind
	Stores  []StoreKind
	Scorers []ScorerKind
}

// CacheKind is one cache layer kind (cache.kind).
type CacheKind struct {
	Name string
	// Help is one line for help text, e.g. "answers served by exact key".
	Help string
	// OwnIndex, when set, says why the kind opens no store (it keeps its
	// entries itself): a spec of this kind must leave store at the
	// default, and New is given a nil store.
	OwnIndex string
	// Settings lists the YAML names of the kind's own keys that the spec
	// sets: an arm of another kind rejects each of them. Nil for a kind
	// with no keys of its own.
	Settings func(c *CacheSpec) []string
	// Validate checks the kind's own keys and fills their defaults; each
	// error's Path is relative to the cache block (e.g. "threshold").
	// Nil for a kind with nothing to check.
	Validate func(c *CacheSpec) []*FieldError
	// New builds the layer from the validated spec. cfg carries what
	// every kind shares: key fields, TTL, check on hit, the contract's
	// check, namespace and tag key.
	New func(c *CacheSpec, cfg cache.Config, store cache.Store) (cache.Layer, error)
	// Metrics adds the layer's own counters to the manifest's; nil when
	// it has none beyond cache.Stats.
	Metrics func(l cache.Layer, m *CacheMetrics)
}

// StoreKind is one store of the exact cache's entries (cache.store).
type StoreKind struct {
	Name, Help string
	// Settings lists the YAML names of the store's own keys that the spec
	// sets: an arm with another store rejects each of them. Nil for a
	// store with no keys of its own.
	Settings func(c *CacheSpec) []string
	// Validate checks the store's own keys and fills their defaults; each
	// error's Path is relative to the cache block. Nil: nothing to check.
	Validate func(c *CacheSpec) []*FieldError
	// Open opens the store; Build fills cfg from the spec (address,
	// capacity, credentials, key prefix).
	Open func(cfg cache.StoreConfig) (cache.Store, error)
}

// ScorerKind is one named difficulty scorer (router.scorer).
type ScorerKind struct {
	// Name must not be a URL nor end in .json: those references locate a
	// scorer service or file (router.OpenScorer).
	Name, Help string
	New        func() (router.Scorer, error)
}

// Errors for a name the table does not list: Table.OpenStore's store
// kind, Table.Build's cache kind.
var (
	ErrUnknownStore = errors.New("stack: unknown store")
	ErrUnknownKind  = errors.New("stack: unknown cache kind")
)

// Builtin returns crab's table: the exact and semantic cache kinds, the
// ristretto and redis stores, and the feature scorer. Each call returns a
// fresh table the caller may extend.
func Builtin() *Table {
	return &Table{
		Kinds: []CacheKind{
			{Name: cache.KindExact, Help: "answers served by exact key (in the store)",
				New: func(_ *CacheSpec, cfg cache.Config, store cache.Store) (cache.Layer, error) {
					return cache.New(cfg, store)
				}},
			semanticKind(),
		},
		Stores: []StoreKind{
			{Name: cache.StoreRistretto, Help: "in process", Open: cache.OpenRistretto},
			{Name: cache.StoreRedis, Help: "shared between processes and replicas",
				Settings: redisSettings, Validate: validRedis, Open: cache.OpenRedis},
		},
		Scorers: []ScorerKind{
			{Name: router.DefaultScorer, Help: "the hand-written feature lexicon", New: router.NewDefaultScorer},
		},
	}
}

// semanticKind is the semantic cache's entry: its own keys are
// semantic.Settings, which the semantic package validates.
func semanticKind() CacheKind {
	return CacheKind{
		Name: cache.KindSemantic, Help: "answers served by embedding similarity within the exact partition",
		OwnIndex: "keeps its index in process (a shared store would need vector search, which Debian's redis-server lacks)",
		Settings: func(c *CacheSpec) []string { return c.Settings.Set() },
		Validate: func(c *CacheSpec) []*FieldError {
			var l errs
			for _, e := range c.Settings.Validate() {
				l.add([]any{e.Field}, "%s", e.Msg)
			}
			return l
		},
		New: func(c *CacheSpec, cfg cache.Config, _ cache.Store) (cache.Layer, error) {
			emb, err := semantic.OpenEmbedder(c.Settings.EmbedderConfig(os.Getenv))
			if err != nil {
				return nil, err
			}
			return semantic.New(semantic.Config{Fields: cfg.Fields, Threshold: c.Threshold, CheckOnHit: cfg.CheckOnHit,
				TTL: cfg.TTL, Now: cfg.Now, Validate: cfg.Validate}, emb)
		},
		Metrics: func(l cache.Layer, m *CacheMetrics) {
			if s, ok := l.(*semantic.Cache); ok {
				st := s.Counters()
				m.Semantic = &st
			}
		},
	}
}

// redisSettings lists the redis store's own keys that c sets.
func redisSettings(c *CacheSpec) []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"redis_addr", c.RedisAddr != ""}, {"redis_prefix", c.RedisPrefix != ""}, {"redis_username", c.RedisUsername != ""},
		{"redis_password_env", c.RedisPasswordEnv != ""}, {"redis_tls", c.RedisTLS}, {"redis_tls_ca", c.RedisTLSCA != ""},
		{"redis_tls_cert", c.RedisTLSCert != ""}, {"redis_tls_key", c.RedisTLSKey != ""}} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// validRedis checks the redis store's own keys and fills its address.
func validRedis(c *CacheSpec) []*FieldError {
	var l errs
	if c.RedisAddr == "" {
		c.RedisAddr = cache.DefaultRedisAddr
	}
	if c.RedisPasswordEnv != "" && !envNameRE.MatchString(c.RedisPasswordEnv) {
		l.add([]any{"redis_password_env"}, "want the name of an environment variable, got %q", c.RedisPasswordEnv)
	}
	if (c.RedisTLSCert == "") != (c.RedisTLSKey == "") {
		l.add([]any{"redis_tls_cert"}, "give redis_tls_cert and redis_tls_key together")
	}
	if c.RedisPrefix != "" && strings.ContainsAny(c.RedisPrefix, " \t\r\n*?[]") {
		l.add([]any{"redis_prefix"}, "want a prefix without spaces or glob characters, got %q", c.RedisPrefix)
	}
	return l
}

// Kind is the cache kind name ("" means the first, the default).
func (t *Table) Kind(name string) (*CacheKind, bool) {
	for i := range t.Kinds {
		if name == "" || t.Kinds[i].Name == name {
			return &t.Kinds[i], true
		}
	}
	return nil, false
}

// KindNames lists the cache kinds, the default first.
func (t *Table) KindNames() []string {
	return names(t.Kinds, func(k CacheKind) string { return k.Name })
}

// StoreNames lists the stores, the default first.
func (t *Table) StoreNames() []string {
	return names(t.Stores, func(s StoreKind) string { return s.Name })
}

// ScorerNames lists the named scorers, the default first.
func (t *Table) ScorerNames() []string {
	return names(t.Scorers, func(s ScorerKind) string { return s.Name })
}

// HasStore reports whether the table lists the store kind.
func (t *Table) HasStore(kind string) bool { return t.store(kind) != nil }

func (t *Table) store(kind string) *StoreKind {
	for i := range t.Stores {
		if kind == "" || t.Stores[i].Name == kind {
			return &t.Stores[i]
		}
	}
	return nil
}

// OpenStore opens a store of the kind ("" means the first, the default).
// An unknown kind wraps ErrUnknownStore and lists the table's.
func (t *Table) OpenStore(kind string, cfg cache.StoreConfig) (cache.Store, error) {
	s := t.store(kind)
	if s == nil {
		return nil, fmt.Errorf("%w %q (want %s)", ErrUnknownStore, kind, OrList(t.StoreNames()))
	}
	return s.Open(cfg)
}

// NewScorer builds the scorer ref names: a name of the table ("" means
// the first), else a URL or scorer file (router.OpenScorer). Anything else
// wraps router.ErrUnknownScorer and lists the table's names.
func (t *Table) NewScorer(ref string) (router.Scorer, error) {
	for _, s := range t.Scorers {
		if ref == "" || s.Name == ref {
			return s.New()
		}
	}
	sc, err := router.OpenScorer(ref)
	if errors.Is(err, router.ErrUnknownScorer) {
		return nil, fmt.Errorf("%w %q (want %s, an http(s):// URL or a scorer .json file)", router.ErrUnknownScorer, ref, OrList(t.ScorerNames()))
	}
	return sc, err
}

// Help writes one line per entry, "  name  help", under each list's
// heading: the text of a command's help that lists the kinds.
func (t *Table) Help() string {
	var b strings.Builder
	section := func(title string, rows [][2]string) {
		b.WriteString(title + ":\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "  %-16s %s\n", r[0], r[1])
		}
	}
	var rows [][2]string
	for _, k := range t.Kinds {
		rows = append(rows, [2]string{k.Name, k.Help})
	}
	section("cache kinds (cache.kind)", rows)
	rows = rows[:0]
	for _, s := range t.Stores {
		rows = append(rows, [2]string{s.Name, s.Help})
	}
	section("cache stores (cache.store)", rows)
	rows = rows[:0]
	for _, s := range t.Scorers {
		rows = append(rows, [2]string{s.Name, s.Help})
	}
	section("router scorers (router.scorer; also an http(s):// URL or a scorer .json file)", rows)
	return b.String()
}

// OrList writes names as "a", "a or b", "a, b or c", for messages.
func OrList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func names[E any](list []E, name func(E) string) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = name(e)
	}
	return out
}
