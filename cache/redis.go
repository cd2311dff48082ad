package cache

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RedisConfig configures the shared store. Several replicas of a service
// that use the same Addr, DB and Prefix share one cache: the same entries,
// the same check on hit (every entry carries its full key and scope) and the
// same invalidations.
type RedisConfig struct {
	// Addr is the server's host:port. Default 127.0.0.1:6379.
	Addr string
	// Username and Password authenticate, when the server requires it.
	Username, Password string
	// TLS, when set, connects over TLS with this configuration (CA,
	// client certificate); nil connects in the clear.
	TLS *tls.Config
	// DB is the database number. Default 0.
	DB int
	// Prefix starts every key the store writes (entries and invalidation
	// counters), so caches that must not share answers (two arms, two runs)
	// use two prefixes on one server. Default "crab:".
	Prefix string
	// DialTimeout bounds connecting. Default 1s.
	DialTimeout time.Duration
	// Timeout bounds each call (read and write), besides the request's
	// context: a slow server costs at most this much per lookup and is
	// counted as an error, never waited on for the model's whole budget.
	// Default 500ms.
	Timeout time.Duration
	// PoolSize is the number of connections. Default: go-redis's (10 per CPU).
	PoolSize int
	// DeleteOnClose deletes every key under Prefix at Close, for a store
	// private to one run or arm.
	DeleteOnClose bool
	// MaxTTL bounds the life of every key the store writes: an entry
	// stored without a TTL, or with a longer one, expires after MaxTTL,
	// and so do the invalidation counters (their expiry is pushed back
	// with every entry stamped with them). Keys left behind by a process
	// that was killed before Close expire on their own. Default 24h.
	MaxTTL time.Duration
	// Tagged says the entries this store holds are tagged with a secret
	// every replica shares (the cache's TagKey). A store shared between
	// processes without one is of no use to them: each process draws its
	// own secret, so one never serves another's entries, and they
	// overwrite each other's under the same keys.
	Tagged bool
	// Logf, when set, receives the store's start-up warnings: a store
	// that outlives the process (DeleteOnClose false) with entries that
	// are not Tagged.
	Logf func(format string, args ...any)
}

// Defaults of RedisConfig.
const (
	DefaultRedisAddr   = "127.0.0.1:6379"
	DefaultRedisPrefix = "crab:"
	DefaultRedisMaxTTL = 24 * time.Hour
)

// Redis is a Store shared by every process that points at the same server
// and prefix, built on github.com/redis/go-redis/v9.
//
// An entry is stored under Prefix + "e:" + the 64-bit key in hex, its value
// the entry encoded with its full key bytes, scope and generation, so a
// replica that did not write it still checks it on hit; TTL is Redis's own
// expiry (the middleware also checks the entry's age against its clock).
// The invalidation counters (Generations) live beside the entries, so an
// invalidation by one replica holds for all. Every failure — the server
// down, a timeout, a value that does not decode — is counted in
// Metrics().Errors and served as a miss; the store never panics on the
// request path.
//
// Invalidation fails closed. Redis may lose a counter: evicted under
// memory pressure (any maxmemory-policy that evicts, allkeys-* or, since
// every key crab writes has a TTL, volatile-*), expired, or deleted by
// hand. A counter therefore never starts at zero: it is created at a
// random 62-bit value, so a counter that comes back after a loss has a
// value no stored entry was stamped with. A lookup that finds a counter
// missing refuses whatever entry it found (counted in
// Metrics().Uncertain), creates the counter afresh, and the answer built
// next is stamped with the new value; a counter that is not a number
// refuses the lookup outright (Uncertain and Errors). No eviction policy
// can make an invalidated entry servable again; an evicting policy only
// costs hits.
//
// Every key has a TTL of at most MaxTTL, so a run killed before Close
// leaves nothing behind for longer than that.
type Redis struct {
	client  *redis.Client
	cfg     RedisConfig
	entries string // Prefix + "e:"

	hits, misses, errs, added, uncertain atomic.Uint64
	closeOnce                            sync.Once
}

var (
	_ Store            = (*Redis)(nil)
	_ Generations      = (*Redis)(nil)
	_ GenerationGetter = (*Redis)(nil)
	_ GenerationRaiser = (*Redis)(nil)
)

// ErrStoreUnavailable wraps a failure to reach a shared store.
var ErrStoreUnavailable = errors.New("cache: store unavailable")

// NewRedis connects to the server and checks it answers (PING), so a
// wrong address fails before a run starts. Zero fields take their
// defaults; negative durations are an error.
func NewRedis(ctx context.Context, cfg RedisConfig) (*Redis, error) {
	if cfg.DialTimeout < 0 || cfg.Timeout < 0 || cfg.PoolSize < 0 || cfg.DB < 0 {
		return nil, fmt.Errorf("%w: redis timeouts, pool size and db must not be negative", ErrBadConfig)
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultRedisAddr
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultRedisPrefix
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 500 * time.Millisecond
	}
	if cfg.MaxTTL < 0 {
		return nil, fmt.Errorf("%w: redis max TTL must not be negative", ErrBadConfig)
	}
	if cfg.MaxTTL == 0 {
		cfg.MaxTTL = DefaultRedisMaxTTL
	}
	quietRedisLog.Do(func() { redis.SetLogger(discardLog{}) })
	client := redis.NewClient(&redis.Options{
		Addr:                  cfg.Addr,
		Username:              cfg.Username,
		Password:              cfg.Password,
		TLSConfig:             cfg.TLS,
		DB:                    cfg.DB,
		Protocol:              2,
		DialTimeout:           cfg.DialTimeout,
		ReadTimeout:           cfg.Timeout,
		WriteTimeout:          cfg.Timeout,
		PoolSize:              cfg.PoolSize,
		ContextTimeoutEnabled: true,
		DisableIdentity:       true,
		MaxRetries:            -1, // a failed call is a miss, not a retry loop on the request path
		DialerRetries:         1,  // one dial per call: a server that is down costs a refused connect, not backoff sleeps
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
	})
	pctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout+cfg.Timeout)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("%w: redis at %s: %w", ErrStoreUnavailable, cfg.Addr, err)
	}
	if !cfg.Tagged && !cfg.DeleteOnClose && cfg.Logf != nil {
		cfg.Logf("%s", UntaggedWarning(cfg.Addr, cfg.Prefix))
	}
	return &Redis{client: client, cfg: cfg, entries: cfg.Prefix + "e:"}, nil
}

// UntaggedWarning is what a process says at start-up when it shares a
// Redis store (at addr, under prefix) without a tag secret shared by its
// replicas.
func UntaggedWarning(addr, prefix string) string {
	return fmt.Sprintf("warning: the cache store is redis at %s (prefix %q) and no tag_key_env is set: "+
		"this process tags its entries with a secret of its own, so replicas sharing the store never serve each other's entries "+
		"and overwrite them; set tag_key_env to the same secret (16 bytes or more) in every replica", addr, prefix)
}

// quietRedisLog switches go-redis's own logging off, once per process:
// every failure is counted (Metrics().Errors) or returned
// (ErrStoreUnavailable) by the store, and go-redis would otherwise print
// its dial errors to stderr in the middle of a command's output. The logger
// is a go-redis package variable, so this holds for every go-redis client
// in the process.
var quietRedisLog sync.Once

type discardLog struct{}

func (discardLog) Printf(context.Context, string, ...any) {}

// Config returns the configuration with defaults filled in.
func (r *Redis) Config() RedisConfig { return r.cfg }

func (r *Redis) entryKey(key uint64) string {
	var b [64]byte
	out := append(b[:0], r.entries...)
	return string(strconv.AppendUint(out, key, 16))
}

func (r *Redis) tenantKey(tenant string) string {
	return r.cfg.Prefix + "gt:" + tenant
}

// permKey prefixes the tenant with its length, so ("ab","c") and ("a","bc")
// never share a counter.
func (r *Redis) permKey(tenant, permission string) string {
	return r.cfg.Prefix + "gp:" + strconv.Itoa(len(tenant)) + ":" + tenant + permission
}

// Get returns the entry under key. A missing key, a failure or an entry
// that does not decode is a miss (the last two also count as errors).
func (r *Redis) Get(ctx context.Context, key uint64) (*Entry, bool) {
	b, err := r.client.Get(ctx, r.entryKey(key)).Bytes()
	return r.decoded(b, err)
}

// decoded turns a GET reply into an entry and counts it.
func (r *Redis) decoded(b []byte, err error) (*Entry, bool) {
	if errors.Is(err, redis.Nil) {
		r.misses.Add(1)
		return nil, false
	}
	if err != nil {
		r.errs.Add(1)
		r.misses.Add(1)
		return nil, false
	}
	e, err := decodeEntry(b)
	if err != nil {
		r.errs.Add(1)
		r.misses.Add(1)
		return nil, false
	}
	r.hits.Add(1)
	return e, true
}

// GetWithGeneration fetches the entry and the generation of (tenant,
// permission) in one round trip.
func (r *Redis) GetWithGeneration(ctx context.Context, key uint64, tenant, permission string) (*Entry, bool, Generation, error) {
	pipe := r.client.Pipeline()
	get := pipe.Get(ctx, r.entryKey(key))
	gens := pipe.MGet(ctx, r.tenantKey(tenant), r.permKey(tenant, permission))
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	g, missing, err := r.parseGeneration(gens)
	if err == nil && missing {
		// A counter of the caller's scope is gone: start it afresh for the
		// next answer, at a value no entry was stamped with.
		g, err = r.createGeneration(ctx, tenant, permission)
	}
	if err != nil {
		r.misses.Add(1)
		return nil, false, Generation{}, err
	}
	b, gerr := get.Bytes()
	if missing && gerr == nil {
		if e, derr := decodeEntry(b); derr == nil && e.Scope.Tenant == tenant && e.Scope.Permission == permission {
			// The entry was stamped with the lost counter: nothing can
			// vouch for it any more. Refuse it. (An entry built for another
			// scope is judged by the cache against its own scope's counters,
			// which are created afresh the same way when lost.)
			r.uncertain.Add(1)
			r.misses.Add(1)
			return nil, false, g, nil
		}
	}
	e, ok := r.decoded(b, gerr)
	return e, ok, g, nil
}

// Set stores e under key for ttl (0: no expiry; below a millisecond, one
// millisecond). False, and an error counted, when the write failed.
func (r *Redis) Set(ctx context.Context, key uint64, e *Entry, ttl time.Duration) bool {
	if e == nil || ttl < 0 {
		return false
	}
	if ttl > 0 && ttl < time.Millisecond {
		ttl = time.Millisecond
	}
	if ttl == 0 || ttl > r.cfg.MaxTTL {
		ttl = r.cfg.MaxTTL
	}
	// The counters the entry is stamped with must outlive it: push their
	// expiry back to at least the entry's.
	pipe := r.client.TxPipeline()
	set := pipe.Set(ctx, r.entryKey(key), encodeEntry(e), ttl)
	for _, k := range []string{r.tenantKey(e.Scope.Tenant), r.permKey(e.Scope.Tenant, e.Scope.Permission)} {
		pipe.PExpire(ctx, k, r.cfg.MaxTTL)
	}
	_, _ = pipe.Exec(ctx)
	if err := set.Err(); err != nil {
		r.errs.Add(1)
		return false
	}
	r.added.Add(1)
	return true
}

// Wait returns at once: Set is synchronous, so a Set that returned true is
// already visible to every replica.
func (r *Redis) Wait() {}

// Generation reads the counters of (tenant, permission) (MGET), creating
// a missing one at a fresh random value (see Redis).
func (r *Redis) Generation(ctx context.Context, tenant, permission string) (Generation, error) {
	g, missing, err := r.parseGeneration(r.client.MGet(ctx, r.tenantKey(tenant), r.permKey(tenant, permission)))
	if err == nil && missing {
		g, err = r.createGeneration(ctx, tenant, permission)
	}
	return g, err
}

// ErrStoreUncertain is wrapped by the error of a lookup whose invalidation
// counter is unreadable: the store cannot say whether an entry is still
// valid, so it serves none.
var ErrStoreUncertain = errors.New("cache: invalidation state uncertain")

// createScript creates the counters of KEYS that do not exist at the
// random values of ARGV (with the TTL in ms of the last ARGV) and returns
// every counter's value. Atomic: replicas racing to create a counter all
// read the one that won.
var createScript = redis.NewScript(`
local ttl = ARGV[#ARGV]
local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.call('GET', k)
  if not v then
    redis.call('SET', k, ARGV[i], 'PX', ttl)
    v = ARGV[i]
  end
  out[i] = v
end
return out
`)

// bumpScript moves the counter KEYS[1] on by one, or creates it at the
// random value ARGV[1] when it is gone, and sets its TTL (ARGV[2], ms).
var bumpScript = redis.NewScript(`
local v
if redis.call('EXISTS', KEYS[1]) == 1 then
  v = redis.call('INCR', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[1])
  v = ARGV[1]
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return v
`)

// raiseScript moves each counter of KEYS that is below the matching
// ARGV (0: leave it) up to that value, with the TTL in ms of the last ARGV.
// Counters are compared as decimal strings: Lua numbers are doubles, which
// cannot tell 62-bit neighbours apart.
var raiseScript = redis.NewScript(`
local ttl = ARGV[#ARGV]
local function less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
for i, k in ipairs(KEYS) do
  local floor = ARGV[i]
  if floor ~= '0' then
    local v = redis.call('GET', k)
    if (not v) or (not string.match(v, '^[1-9][0-9]*$')) or less(v, floor) then
      redis.call('SET', k, floor, 'PX', ttl)
    end
  end
end
return 1
`)

// RaiseGeneration moves the counters of (tenant, permission) up to at
// least floor, for every replica: a scope whose counters went back in
// time (a restore from an older snapshot, a failover to a replica that
// lagged) serves again once they are past every value this process saw.
func (r *Redis) RaiseGeneration(ctx context.Context, tenant, permission string, floor Generation) error {
	keys := []string{r.tenantKey(tenant), r.permKey(tenant, permission)}
	if err := raiseScript.Run(ctx, r.client, keys, floor.Tenant, floor.Permission, r.cfg.MaxTTL.Milliseconds()).Err(); err != nil {
		r.errs.Add(1)
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	return nil
}

// freshGeneration is the start value of a counter: random, so that a
// counter created again after it was lost never repeats a value an entry
// was stamped with. It must be unpredictable across replicas and restarts,
// which a seed would not give; below 2^62, so INCR never overflows.
func freshGeneration() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("cache: crypto/rand failed: " + err.Error()) // never on a supported OS
	}
	return binary.LittleEndian.Uint64(b[:])>>2 | 1
}

// createGeneration creates the missing counters of (tenant, permission)
// and returns both.
func (r *Redis) createGeneration(ctx context.Context, tenant, permission string) (Generation, error) {
	keys := []string{r.tenantKey(tenant), r.permKey(tenant, permission)}
	vals, err := createScript.Run(ctx, r.client, keys, freshGeneration(), freshGeneration(), r.cfg.MaxTTL.Milliseconds()).Slice()
	if err != nil {
		r.errs.Add(1)
		return Generation{}, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	g, _, err := r.parseGeneration(redis.NewSliceResult(vals, nil))
	return g, err
}

// BumpTenant moves the tenant's counter on by one, for every replica.
func (r *Redis) BumpTenant(ctx context.Context, tenant string) error {
	return r.bump(ctx, r.tenantKey(tenant))
}

// BumpPermission moves the (tenant, permission) counter on by one.
func (r *Redis) BumpPermission(ctx context.Context, tenant, permission string) error {
	return r.bump(ctx, r.permKey(tenant, permission))
}

func (r *Redis) bump(ctx context.Context, key string) error {
	if err := bumpScript.Run(ctx, r.client, []string{key}, freshGeneration(), r.cfg.MaxTTL.Milliseconds()).Err(); err != nil {
		r.errs.Add(1)
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	return nil
}

// parseGeneration reads an MGET of the two counters; missing is true when
// either is absent. A reply that cannot be read is an error (counted),
// and a counter that is not a number is an uncertain one.
func (r *Redis) parseGeneration(cmd *redis.SliceCmd) (g Generation, missing bool, err error) {
	vals, err := cmd.Result()
	if err != nil {
		r.errs.Add(1)
		return Generation{}, false, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if len(vals) != 2 {
		r.errs.Add(1)
		return Generation{}, false, fmt.Errorf("%w: MGET returned %d values, want 2", ErrStoreUnavailable, len(vals))
	}
	var out [2]uint64
	for i, v := range vals {
		if v == nil {
			missing = true
			continue
		}
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case int64:
			s = strconv.FormatInt(v, 10)
		}
		n, perr := strconv.ParseUint(s, 10, 64)
		if perr != nil || n == 0 {
			r.errs.Add(1)
			r.uncertain.Add(1)
			return Generation{}, false, fmt.Errorf("%w: %w: generation counter %q", ErrStoreUnavailable, ErrStoreUncertain, fmt.Sprint(v))
		}
		out[i] = n
	}
	return Generation{Tenant: out[0], Permission: out[1]}, missing, nil
}

// Metrics counts client-side: Hits and Misses of Get, KeysAdded for
// successful Sets, Errors for failed calls, Uncertain for lookups whose
// invalidation counter was missing or unreadable (their hit refused).
// Redis's evictions and memory are the server's (INFO), not this client's,
// and stay zero here.
func (r *Redis) Metrics() StoreMetrics {
	return StoreMetrics{Hits: r.hits.Load(), Misses: r.misses.Load(), KeysAdded: r.added.Load(), Errors: r.errs.Load(),
		Uncertain: r.uncertain.Load()}
}

// Close deletes the store's keys when DeleteOnClose is set (SCAN and
// UNLINK, bounded to a few seconds) and closes the connections. Later calls
// fail and count as errors; Close twice is harmless.
func (r *Redis) Close() {
	r.closeOnce.Do(func() {
		if r.cfg.DeleteOnClose {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = r.deletePrefix(ctx)
			cancel()
		}
		_ = r.client.Close()
	})
}

// deletePrefix removes every key under the prefix.
func (r *Redis) deletePrefix(ctx context.Context) error {
	match := globEscape(r.cfg.Prefix) + "*"
	var cursor uint64
	for {
		keys, next, err := r.client.Scan(ctx, cursor, match, 512).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := r.client.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// globEscape quotes the characters SCAN MATCH treats specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
