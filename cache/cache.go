package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/crab-testbed/crab/model"
)

// Leak kinds, written into Trace.Leak on a hit served for another scope
// or conversation. One label per hit, the first that applies in the order
// of LeakKinds. The kinds of the scope are those of the table of scope
// fields (model.ScopeFields); the constants name them for code that means
// one of them.
const (
	LeakCrossTenant  = "cross_tenant"  // built for another tenant
	LeakPermission   = "permission"    // built for another permission (role)
	LeakStale        = "stale"         // built from another (usually older) document version
	LeakLanguage     = "language"      // built for another language (compared after NormalizeLang)
	LeakSystemPrompt = "system_prompt" // built under another system prompt (compared after NormalizeText)
	LeakHistory      = "history"       // built after another conversation history (the same last message)
)

// LeakKinds lists every leak kind in the order a hit is labelled: the
// scope's, from the table of scope fields, then the conversation's.
func LeakKinds() []string {
	return append(ScopeLeakKinds(), LeakSystemPrompt, LeakHistory)
}

// ScopeLeakKinds lists the leak kinds of the scope, one per row of the
// table of scope fields, in the order a hit is labelled.
func ScopeLeakKinds() []string {
	var out []string
	for _, f := range model.ScopeFields() {
		out = append(out, f.Leak)
	}
	return out
}

// Conversation is the provenance of an answer beyond its scope: digests
// of the system prompt and of the earlier turns it was built after,
// normalised as the key normalises them. An answer to the same last
// message after another history, or under another system prompt, is an
// answer to another conversation: serving it is a leak of that
// conversation (of the other user's earlier turns, or of what another
// assistant was told), whatever the key.
type Conversation struct {
	System  uint64 // xxhash64 of the normalised system prompt
	History uint64 // xxhash64 of the history's roles and normalised texts
}

// ConversationOf returns req's conversation digests.
func ConversationOf(req *model.Request) Conversation {
	var buf [256]byte
	b := appendNormalized(buf[:0], req.System)
	c := Conversation{System: xxhash.Sum64(b)}
	b = binary.AppendUvarint(b[:0], uint64(len(req.History)))
	for _, m := range req.History {
		b = appendBytes(b, m.Role)
		b = appendNormalized(b, m.Content)
	}
	c.History = xxhash.Sum64(b)
	return c
}

// ConversationLeak is the leak kind of serving an answer built in stored
// to a request in req: "" when both digests agree, otherwise
// system_prompt or history (the system prompt first).
func ConversationLeak(stored, req Conversation) string {
	switch {
	case stored.System != req.System:
		return LeakSystemPrompt
	case stored.History != req.History:
		return LeakHistory
	}
	return ""
}

// RequestLeakKind is LeakKind followed, for answers of the same scope, by
// ConversationLeak: the one label of a hit built for (scope, conv) and
// served to req.
func RequestLeakKind(scope model.Scope, conv Conversation, req *model.Request) string {
	if k := LeakKind(scope, req.Scope); k != "" {
		return k
	}
	return ConversationLeak(conv, ConversationOf(req))
}

// LeakKind says how an answer built for stored differs from what a request
// with scope req may receive: "" when the scopes are the same (see
// model.Scope.Equal), otherwise the leak kind of the first field of the
// table of scope fields that differs.
func LeakKind(stored, req model.Scope) string {
	if f := stored.Diff(req); f != nil {
		return f.Leak
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
	// WaitForStore, when true, answers a miss only once the store has
	// made its entry visible (Store.Wait), so the very next identical
	// request hits: a run that must be deterministic (the evaluator, the
	// audit) sets it. When false, a miss answers as soon as its entry is
	// handed to the store: the wait leaves the response path, as a proxy
	// wants, and an identical request arriving within microseconds of the
	// first answer may miss once more (and be stored again). Scope checks
	// and invalidation are unaffected either way: an entry is stamped
	// before it is handed over and checked when served. The same setting
	// is wait_for_store in an arm's cache spec.
	WaitForStore bool
	// TagKey is the secret the integrity tag of every entry is keyed by
	// (at least TagKeyBytes bytes): one per deployment, shared by its
	// replicas, so that a replica serves what another stored and nothing
	// anyone else wrote. Empty: a random secret drawn by New, so entries
	// written by any other cache (another process included) are misses.
	TagKey []byte
	// Namespace names the deployment and the upstream it answers from
	// (endpoints and models); it is covered by the tag, so an entry copied
	// from another deployment's keys never verifies.
	Namespace string
	// Validate, when set, is the contract's check (true when the content
	// and finish reason meet it): a miss's answer that fails it is not
	// stored.
	Validate func(content, finishReason string) bool
	// Contract identifies the contract Validate checks (its hash). It is
	// covered by the tag, so an entry verifies only under the contract it
	// was checked against when stored: a hit whose tag verifies is known
	// valid under the contract in force and is not validated again, and an
	// entry stored under another contract (or none) is a bad_tag miss.
	// Empty while Validate is set: the contract is not bound into the tag,
	// so every hit is validated again instead, one that fails being a miss
	// (Stats.Untrusted.Contract).
	Contract string
}

// Cache is the cache layer of a stack. Build it with New, put
// Cache.Middleware in the chain (outermost: the cache runs before the router
// and the contract), and read Stats after the run. A Cache is safe for
// concurrent use; give each arm its own Cache and its own Store so arms never
// share entries.
//
// Every request gets Trace.Cache and Trace.CacheDur:
//   - hit: a stored answer served; CacheDur is key + lookup time.
//   - miss: nothing usable stored (absent, expired, built before an
//     invalidation of its tenant or permission, or refused by CheckOnHit);
//     the inner stack answered; CacheDur is key + lookup + store time (the
//     inner stack's time excluded).
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
// normally, are non-empty and pass Config.Validate (the contract's check,
// run by the cache itself, not read from another layer's trace) are
// stored; errors, truncated, refused and contract-failing answers never are.
// When the inner stack fails without a response, the cache returns the error
// with a response carrying only its trace, so the record still shows the
// cache status.
//
// A cache that is switched off for an arm is simply not in its stack
// (Trace.Cache stays empty).
type Cache struct {
	spec     KeySpec
	ttl      time.Duration
	check    bool
	wait     bool
	now      func() time.Time
	hash     func([]byte) uint64
	store    Store
	gens     Generations      // the store's when it keeps them, else in-process
	getGen   GenerationGetter // the store's one-round-trip lookup, when it has one
	bufs     sync.Pool        // *[]byte scratch buffers for key encodings
	tags     *tagger
	seen     [256]atomic.Pointer[seenEntry] // entries whose tag verified, by store key (see verified)
	water    highWater
	validate func(content, finishReason string) bool
	// recheck is the check run again on a hit: validate when the tag does
	// not bind the contract, else nil.
	recheck func(content, finishReason string) bool
	st      counters
	// keyTenant and keyPermission say whether spec holds the tenant and
	// the permission (see bypass).
	keyTenant, keyPermission bool
}

// GenerationGetter is the fast path of a store that keeps Generations: it
// fetches an entry and the generation of (tenant, permission) in one round
// trip (Redis does). A store outside this package implements it to spare
// the cache a second call on every lookup.
type GenerationGetter interface {
	GetWithGeneration(ctx context.Context, key uint64, tenant, permission string) (*Entry, bool, Generation, error)
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
	if n := len(cfg.TagKey); n > 0 && n < TagKeyBytes {
		return nil, fmt.Errorf("%w: tag key of %d bytes, want at least %d", ErrBadConfig, n, TagKeyBytes)
	}
	tags, err := newTagger(cfg.TagKey, cfg.Namespace, cfg.Contract)
	if err != nil {
		return nil, err
	}
	c := &Cache{spec: spec, ttl: cfg.TTL, check: cfg.CheckOnHit, wait: cfg.WaitForStore, now: cfg.Now, hash: cfg.Hash, store: store,
		tags: tags, validate: cfg.Validate}
	if cfg.Contract == "" {
		c.recheck = cfg.Validate
	}
	c.keyTenant, c.keyPermission = spec.Has(FieldTenant), spec.Has(FieldPermission)
	if g, ok := store.(Generations); ok {
		c.gens = g
		c.getGen, _ = store.(GenerationGetter)
	} else {
		c.gens = &localGenerations{}
	}
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

	// The generation of the request's scope is read before the lookup and
	// before the inner stack runs: an answer is stored stamped with it, so
	// an invalidation that lands while the answer is in flight makes the
	// answer unservable (and, when seen in time, unstored).
	var (
		e      *Entry
		found  bool
		gen    Generation
		genErr error
	)
	if c.getGen != nil {
		e, found, gen, genErr = c.getGen.GetWithGeneration(ctx, h, req.Scope.Tenant, req.Scope.Permission)
	} else if gen, genErr = c.gens.Generation(ctx, req.Scope.Tenant, req.Scope.Permission); genErr == nil {
		e, found = c.store.Get(ctx, h)
	}
	if genErr != nil {
		c.st.unavailable.Add(1)
	} else if !c.trusted(ctx, req.Scope.Tenant, req.Scope.Permission, gen) {
		genErr = ErrStoreUncertain // neither served nor stored until the counters move on
	}

	mismatch := false
	if genErr == nil && found && e != nil && e.Response != nil {
		now := c.now()
		switch {
		case !c.verified(h, e):
			c.st.untrusted.badTag.Add(1)
		case c.ttl > 0 && now.Sub(e.Stored) >= c.ttl:
			c.st.expired.Add(1)
		case !c.current(ctx, e, req, gen):
			c.st.invalidated.Add(1)
		case !c.servable(e.Response):
			c.st.untrusted.contract.Add(1)
		default:
			sameKey := bytes.Equal(e.Key, key)
			leak := RequestLeakKind(e.Scope, e.Conversation, req)
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
			return Served(e.Response, leak, now.Sub(start)), nil
		}
	}

	c.st.misses.Add(1)
	lookup := c.now().Sub(start)
	resp, err := next.Complete(ctx, req)
	storeStart := c.now()
	if genErr == nil {
		// Without the counters the answer cannot be stamped, so it is not
		// stored (already counted as unavailable).
		c.keep(ctx, req, key, h, gen, resp, err, storeStart)
	}
	d := lookup + c.now().Sub(storeStart)
	return annotate(resp, model.CacheMiss, d, mismatch), err
}

// keep stores a miss's answer, stamped with gen, when it may be served
// later (see Cache) and no invalidation landed while it was in flight.
func (c *Cache) keep(ctx context.Context, req *model.Request, key []byte, h uint64, gen Generation, resp *model.Response, err error, at time.Time) {
	if !Cacheable(resp, err, c.validate) || !sameIdentity(resp.Scope, req.Scope) {
		c.st.notCached.Add(1)
		return
	}
	if g, gerr := c.gens.Generation(ctx, req.Scope.Tenant, req.Scope.Permission); gerr != nil || g != gen {
		c.st.discarded.Add(1) // invalidated while in flight (or cannot tell)
		return
	}
	e := &Entry{Key: bytes.Clone(key), Scope: resp.Scope, Conversation: ConversationOf(req), Gen: gen, Response: resp.Clone(), Stored: at}
	if e.Scope == (model.Scope{}) {
		e.Scope = req.Scope
	}
	e.Tag = c.tags.tag(h, e)
	if !c.store.Set(ctx, h, e, c.ttl) {
		c.st.dropped.Add(1)
		return
	}
	if c.wait {
		c.store.Wait()
	}
	c.st.stored.Add(1)
}

// current reports whether entry e is still servable: its scope's generation
// is the one it was stamped with. gen is the generation of the request's
// scope, read with the lookup; an entry built for another tenant or
// permission (a weak key) is judged by its own scope's generation.
func (c *Cache) current(ctx context.Context, e *Entry, req *model.Request, gen Generation) bool {
	if e.Scope.Tenant == req.Scope.Tenant && e.Scope.Permission == req.Scope.Permission {
		return e.Gen == gen
	}
	g, err := c.gens.Generation(ctx, e.Scope.Tenant, e.Scope.Permission)
	return err == nil && e.Gen == g && c.trusted(ctx, e.Scope.Tenant, e.Scope.Permission, g)
}

// sameIdentity reports whether an answer's provenance names the caller's
// tenant and permission (or none, meaning the request's). An answer built
// for another identity is passed on but never stored: it could not be
// stamped with its own scope's generation.
func sameIdentity(answer, req model.Scope) bool {
	if answer == (model.Scope{}) {
		return true
	}
	return answer.Tenant == req.Tenant && answer.Permission == req.Permission
}

// InvalidateTenant makes every answer built for tenant before the call
// unservable: use it when the tenant's document set moves to a new version
// (or anything else that all of its answers were built from changes). It
// covers answers still in flight: one whose request started before the
// call is not stored, or, if its write races the call, is never served.
// Through a shared store (Redis) the invalidation reaches every replica.
// The entries themselves are left to expire or be evicted.
func (c *Cache) InvalidateTenant(ctx context.Context, tenant string) error {
	if err := c.gens.BumpTenant(ctx, tenant); err != nil {
		return fmt.Errorf("cache: invalidate tenant %q: %w", tenant, err)
	}
	c.st.invalidations.Add(1)
	c.sawInvalidation(ctx, tenant, "")
	return nil
}

// InvalidatePermission makes every answer built for (tenant, permission)
// before the call unservable, in flight ones included, like
// InvalidateTenant: use it when what that permission may see is narrowed
// (a role loses access to documents). Lowering one user's permission needs
// no invalidation while permission is a key field: the user's next request
// carries the new permission and so a different key.
func (c *Cache) InvalidatePermission(ctx context.Context, tenant, permission string) error {
	if err := c.gens.BumpPermission(ctx, tenant, permission); err != nil {
		return fmt.Errorf("cache: invalidate permission %q of tenant %q: %w", permission, tenant, err)
	}
	c.st.invalidations.Add(1)
	c.sawInvalidation(ctx, tenant, permission)
	return nil
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
	// Invalidation counts answers by tenant and permission: a key that
	// holds them cannot vouch for an answer to a request without them.
	return (c.keyTenant && req.Scope.Tenant == "") || (c.keyPermission && req.Scope.Permission == "")
}

// Served builds the response of a hit from a stored one, as every cache
// layer does: a clone, so the caller may change it freely, with a fresh
// trace (cache status, leak label, lookup time). Content, Model,
// FinishReason and Scope (the provenance the evaluator judges) are kept, as
// is the contract result; usage is zero because a hit calls no model.
func Served(stored *model.Response, leak string, d time.Duration) *model.Response {
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

// Cacheable reports whether an inner answer may be stored by any cache
// layer: no error, a complete answer (finish reason stop or unset: not
// truncated, not refused), non-empty, and, when validate is set (the
// output contract's check), one that meets it. The layer decides from the
// answer itself, never from what another layer wrote in its trace, so it
// holds wherever the contract layer sits in the stack.
func Cacheable(resp *model.Response, err error, validate func(content, finishReason string) bool) bool {
	switch {
	case err != nil || resp == nil || resp.Content == "":
		return false
	case resp.FinishReason != "" && resp.FinishReason != model.FinishStop:
		return false
	}
	return validate == nil || validate(resp.Content, resp.FinishReason)
}
