// Package semantic is crab's semantic response cache: a request whose text
// is close enough in meaning (cosine similarity of embeddings at least a
// threshold) to one already answered is served that answer — but only
// inside the request's exact partition: every key field except the text
// (tenant, permission, document version, language, model, mode, max
// tokens, sampling, contract, system prompt, history under the full key)
// must be equal, byte for byte after the key's normalisation. Scope is a
// hard partition, never a distance: a lookup does not see entries of
// another partition at all, and the check on hit (the stored scope,
// conversation and request parameters against the request's) runs on
// every hit as in the exact cache.
//
// An embedding failure is counted (Stats.Unavailable) and served as a
// miss; it never yields a hit and the answer is not stored. Every hit
// records its similarity in Trace.Similarity. Tune chooses the threshold
// on labelled pairs. A stack lists the layer under cache.KindSemantic in
// its table of cache kinds, with Settings as its own keys of the cache
// configuration.
package semantic

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/model"
)

// Embedder turns texts into L2-normalised vectors of one length. It is
// declared here, by its consumer; package model/embed has the built-in
// embedders and an OpenAI-compatible client.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedderFunc adapts a function to Embedder.
type EmbedderFunc func(ctx context.Context, texts []string) ([][]float32, error)

// Embed calls f.
func (f EmbedderFunc) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return f(ctx, texts)
}

// ErrBadConfig is returned for an invalid Config.
var ErrBadConfig = errors.New("semantic: bad config")

// Config configures a semantic cache layer.
type Config struct {
	// Fields are the key fields (see cache.ParseFields); every field but
	// text forms the partition. Default full: the partition is the whole
	// scope and request. A weaker key is for audits only.
	Fields []string
	// Threshold is the least cosine similarity, in (0, 1], for a hit.
	// Required: choose it with Tune on labelled pairs of the workload.
	Threshold float64
	// CheckOnHit compares the stored scope, conversation and request
	// parameters with the request's on every hit and serves a difference
	// as a miss (Trace.ScopeMismatch). Production wants true.
	CheckOnHit bool
	// TTL is how long an entry may be served; 0 means no expiry.
	TTL time.Duration
	// MaxEntries bounds the entries of all partitions; the oldest goes
	// first. Default 1,000,000.
	MaxEntries int
	// Index is IndexAuto (default), IndexExact, IndexSketch or IndexHNSW.
	Index string
	// SketchAt is the partition size at which IndexAuto moves from exact
	// search to the sketch index. Default 1024 (see docs/semantic-cache.md
	// for the measurements behind it).
	SketchAt int
	// EfSearch is the HNSW search breadth. Default 64.
	EfSearch int
	// Seed seeds the sketch hyperplanes and the HNSW level draws.
	Seed int64
	// Now is the clock for TTL and durations. Default time.Now.
	Now func() time.Time
	// Validate, when set, is the output contract's check (true when the
	// content and finish reason meet it): an answer that fails it is not
	// stored, whatever the layers inside reported.
	Validate func(content, finishReason string) bool
}

// Defaults of Config.
const (
	DefaultMaxEntries = 1_000_000
	DefaultSketchAt   = 1024
	DefaultEfSearch   = 64
)

// Cache is a semantic cache layer. Build it with New, put Middleware in a
// chain (outermost) and read Stats after the run. It is safe for
// concurrent use.
type Cache struct {
	cfg  Config
	spec cache.KeySpec
	full cache.KeySpec
	emb  Embedder

	mu     sync.RWMutex
	parts  map[string]*partition
	order  []entryRef // insertion order, for MaxEntries
	head   int
	nextID uint64
	count  int

	st       counters
	gens     generations
	embedDur atomic.Int64
	embeds   atomic.Uint64
}

type partition struct {
	mu      sync.RWMutex
	idx     index
	entries map[uint64]*entry
}

type entryRef struct {
	part string
	id   uint64
}

// entry is one stored answer with its provenance.
type entry struct {
	vec    []float32
	text   string
	params string // the full-key encoding of everything but the text
	scope  model.Scope
	conv   cache.Conversation
	resp   *model.Response
	stored time.Time
	origin string // TaskID of the request the answer was built for
	gen    generation
}

var _ cache.Layer = (*Cache)(nil)

// New validates cfg, fills its defaults and returns the cache over emb.
func New(cfg Config, emb Embedder) (*Cache, error) {
	if emb == nil {
		return nil, fmt.Errorf("%w: no embedder", ErrBadConfig)
	}
	if !(cfg.Threshold > 0 && cfg.Threshold <= 1) {
		return nil, fmt.Errorf("%w: threshold %v outside (0, 1]", ErrBadConfig, cfg.Threshold)
	}
	if cfg.TTL < 0 || cfg.MaxEntries < 0 || cfg.SketchAt < 0 || cfg.EfSearch < 0 {
		return nil, fmt.Errorf("%w: negative TTL, max entries, sketch_at or ef_search", ErrBadConfig)
	}
	if len(cfg.Fields) == 0 {
		cfg.Fields = []string{cache.PresetFull}
	}
	spec, err := cache.NewKeySpec(cfg.Fields)
	if err != nil {
		return nil, err
	}
	full, _ := cache.NewKeySpec([]string{cache.PresetFull})
	switch cfg.Index {
	case "":
		cfg.Index = IndexAuto
	case IndexAuto, IndexExact, IndexSketch, IndexHNSW:
	default:
		return nil, fmt.Errorf("%w: unknown index %q (want %s, %s, %s or %s)", ErrBadConfig, cfg.Index, IndexAuto, IndexExact, IndexSketch, IndexHNSW)
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.SketchAt == 0 {
		cfg.SketchAt = DefaultSketchAt
	}
	if cfg.EfSearch == 0 {
		cfg.EfSearch = DefaultEfSearch
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Cache{cfg: cfg, spec: spec, full: full, emb: emb, parts: map[string]*partition{}}, nil
}

// Key is the cache's key spec: its partition is every field but text.
func (c *Cache) Key() cache.KeySpec { return c.spec }

// Threshold is the configured similarity threshold.
func (c *Cache) Threshold() float64 { return c.cfg.Threshold }

// Middleware returns the layer to put in a model.Chain.
func (c *Cache) Middleware() model.Middleware {
	return func(next model.Model) model.Model {
		return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			return c.complete(ctx, next, req)
		})
	}
}

// partitionKey is the key encoding of req without its text under spec.
func partitionKey(spec cache.KeySpec, req *model.Request) string {
	r := *req
	r.Text = ""
	return string(spec.Encode(&r))
}

func (c *Cache) complete(ctx context.Context, next model.Model, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := c.cfg.Now()
	if req == nil || c.bypass(req) {
		c.st.bypasses.Add(1)
		resp, err := next.Complete(ctx, req)
		return annotate(resp, model.CacheBypass, c.cfg.Now().Sub(start), 0, false), err
	}
	text := cache.NormalizeText(req.Text)
	pkey := partitionKey(c.spec, req)
	gen := c.gens.get(req.Scope.Tenant, req.Scope.Permission)

	e0 := c.cfg.Now()
	vecs, err := c.emb.Embed(ctx, []string{text})
	embedDur := c.cfg.Now().Sub(e0)
	c.embeds.Add(1)
	c.embedDur.Add(int64(embedDur))
	var vec []float32
	if err == nil && len(vecs) == 1 && len(vecs[0]) > 0 && finite(vecs[0]) {
		vec = vecs[0]
	} else {
		c.st.unavailable.Add(1) // an embedding failure: a miss, never a hit
	}

	mismatch := false
	if vec != nil {
		if e, sim, ok := c.lookup(pkey, vec); ok {
			now := c.cfg.Now()
			switch {
			case c.cfg.TTL > 0 && now.Sub(e.stored) >= c.cfg.TTL:
				c.st.expired.Add(1)
			case e.gen != c.gens.get(e.scope.Tenant, e.scope.Permission):
				c.st.invalidated.Add(1)
			default:
				leak := cache.RequestLeakKind(e.scope, e.conv, req)
				sameParams := e.params == partitionKey(c.full, req)
				if c.cfg.CheckOnHit && (leak != "" || !sameParams) {
					mismatch = true
					c.st.mismatches.Add(1)
					c.st.refused.Add(leak)
					break
				}
				c.st.hits.Add(1)
				c.st.leaks.Add(leak)
				if e.text != text {
					c.st.similar.Add(1)
				}
				resp := cache.Served(e.resp, leak, now.Sub(start)-embedDur)
				resp.Trace.Similarity = reported(float64(sim), e.text == text)
				resp.Trace.EmbedDur = embedDur
				resp.Trace.Origin = e.origin
				return resp, nil
			}
		}
	}

	c.st.misses.Add(1)
	lookup := c.cfg.Now().Sub(start) - embedDur
	resp, err := next.Complete(ctx, req)
	storeStart := c.cfg.Now()
	switch {
	case vec == nil:
	case !cache.Cacheable(resp, err, c.cfg.Validate) || !sameIdentity(resp.Scope, req.Scope):
		c.st.notCached.Add(1)
	default:
		scope := resp.Scope
		if scope == (model.Scope{}) {
			scope = req.Scope
		}
		c.insert(pkey, &entry{
			vec: vec, text: text, params: partitionKey(c.full, req), scope: scope,
			conv: cache.ConversationOf(req), resp: resp.Clone(), stored: storeStart, origin: req.TaskID, gen: gen,
		})
		c.st.stored.Add(1)
	}
	out := annotate(resp, model.CacheMiss, lookup+c.cfg.Now().Sub(storeStart), 0, mismatch)
	out.Trace.EmbedDur = embedDur
	return out, err
}

// lookup returns the nearest entry of the partition at or above the
// threshold.
func (c *Cache) lookup(pkey string, vec []float32) (*entry, float32, bool) {
	c.mu.RLock()
	p := c.parts[pkey]
	c.mu.RUnlock()
	if p == nil {
		return nil, 0, false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	id, sim, ok := p.idx.nearest(vec)
	if !ok || float64(sim) < c.cfg.Threshold-1e-6 {
		return nil, 0, false
	}
	e := p.entries[id]
	return e, sim, e != nil
}

func (c *Cache) insert(pkey string, e *entry) {
	c.mu.Lock()
	p := c.parts[pkey]
	if p == nil {
		p = &partition{idx: c.newIndex(len(e.vec)), entries: map[uint64]*entry{}}
		c.parts[pkey] = p
	}
	c.nextID++
	id := c.nextID
	c.order = append(c.order, entryRef{part: pkey, id: id})
	c.count++
	var evict []entryRef
	for c.count > c.cfg.MaxEntries && c.head < len(c.order) {
		evict = append(evict, c.order[c.head])
		c.head++
		c.count--
	}
	if c.head > 1024 && c.head*2 > len(c.order) {
		c.order = append([]entryRef(nil), c.order[c.head:]...)
		c.head = 0
	}
	c.mu.Unlock()

	p.mu.Lock()
	p.entries[id] = e
	p.idx.add(id, e.vec)
	p.mu.Unlock()
	for _, r := range evict {
		c.mu.RLock()
		q := c.parts[r.part]
		c.mu.RUnlock()
		q.mu.Lock()
		delete(q.entries, r.id)
		q.idx.remove(r.id)
		q.mu.Unlock()
		c.st.evicted.Add(1)
	}
}

func (c *Cache) newIndex(dim int) index {
	switch c.cfg.Index {
	case IndexExact:
		return newExact(dim)
	case IndexSketch:
		return newSketch(dim, c.cfg.Seed)
	case IndexHNSW:
		return newHNSW(c.cfg.Seed, c.cfg.EfSearch)
	}
	x := newExact(dim)
	return &autoIndex{cur: x, exact: x, at: c.cfg.SketchAt, seed: c.cfg.Seed}
}

// bypass reports whether req cannot be keyed safely, as in the exact
// cache: an empty text, or a key scoped by tenant or permission and a
// request without one.
func (c *Cache) bypass(req *model.Request) bool {
	if strings.TrimSpace(req.Text) == "" {
		return true
	}
	if c.spec.Has(cache.FieldTenant) && req.Scope.Tenant == "" {
		return true
	}
	return c.spec.Has(cache.FieldPermission) && req.Scope.Permission == ""
}

func sameIdentity(answer, req model.Scope) bool {
	if answer == (model.Scope{}) {
		return true
	}
	return answer.Tenant == req.Tenant && answer.Permission == req.Permission
}

func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

func annotate(resp *model.Response, status string, d time.Duration, sim float64, mismatch bool) *model.Response {
	if resp == nil {
		resp = &model.Response{}
	}
	resp.Trace.Cache = status
	resp.Trace.CacheDur = d
	resp.Trace.Similarity = sim
	resp.Trace.ScopeMismatch = mismatch
	return resp
}

// Stats returns the layer's counters as the exact cache names them;
// Unavailable counts embedding failures (served as misses).
func (c *Cache) Stats() cache.Stats {
	s := &c.st
	return cache.Stats{
		Hits: s.hits.Load(), Misses: s.misses.Load(), Bypasses: s.bypasses.Load(),
		Expired: s.expired.Load(), ScopeMismatches: s.mismatches.Load(),
		Leaks: s.leaks.load(), Refused: s.refused.load(),
		Stored: s.stored.Load(), NotCached: s.notCached.Load(), Unavailable: s.unavailable.Load(),
		Invalidations: s.invalidations.Load(), Invalidated: s.invalidated.Load(),
	}
}

// Stats are the counters only a semantic layer has (Cache.Stats has the
// ones every cache layer has).
type Stats struct {
	// SimilarHits counts hits whose stored text differs from the
	// request's (after normalisation): what an exact key would have missed.
	SimilarHits uint64 `json:"similar_hits"`
	// EmbedErrors counts failed embedding calls (each served as a miss).
	EmbedErrors uint64 `json:"embed_errors"`
	// Embeds and EmbedMs: embedding calls and their total time.
	Embeds  uint64  `json:"embeds"`
	EmbedMs float64 `json:"embed_ms"`
	// Entries and Evicted: entries held now, and removed for MaxEntries.
	Entries int    `json:"entries"`
	Evicted uint64 `json:"evicted"`
}

// Counters returns the semantic layer's own counters.
func (c *Cache) Counters() Stats {
	c.mu.RLock()
	n := c.count
	c.mu.RUnlock()
	return Stats{
		SimilarHits: c.st.similar.Load(), EmbedErrors: c.st.unavailable.Load(),
		Embeds: c.embeds.Load(), EmbedMs: float64(c.embedDur.Load()) / 1e6,
		Entries: n, Evicted: c.st.evicted.Load(),
	}
}

type counters struct {
	hits, misses, bypasses, expired, mismatches atomic.Uint64
	stored, notCached, unavailable, similar     atomic.Uint64
	evicted, invalidations, invalidated         atomic.Uint64
	leaks, refused                              leakCounters
}

// leakCounters counts leak kinds under a lock (cache.LeakCounts is a
// plain struct).
type leakCounters struct {
	mu sync.Mutex
	l  cache.LeakCounts
}

func (l *leakCounters) Add(kind string) {
	if kind == "" {
		return
	}
	l.mu.Lock()
	l.l.Add(kind)
	l.mu.Unlock()
}

func (l *leakCounters) load() cache.LeakCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.l
}

// reported is the similarity a hit reports: exactly 1 for the same
// normalised text (a hit an exact cache would serve too), and below 1
// for any other text, even when its embedding is the entry's, so that a
// report can count the hits served by similarity alone.
func reported(sim float64, sameText bool) float64 {
	switch {
	case sameText:
		return 1
	case sim >= 1:
		return math.Nextafter(1, 0)
	}
	return sim
}
