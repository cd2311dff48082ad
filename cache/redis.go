package cache

import (
	"context"
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
}

// Defaults of RedisConfig.
const (
	DefaultRedisAddr   = "127.0.0.1:6379"
	DefaultRedisPrefix = "crab:"
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
type Redis struct {
	client  *redis.Client
	cfg     RedisConfig
	entries string // Prefix + "e:"

	hits, misses, errs, added atomic.Uint64
	closeOnce                 sync.Once
}

var (
	_ Store            = (*Redis)(nil)
	_ Generations      = (*Redis)(nil)
	_ GenerationGetter = (*Redis)(nil)
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
	quietRedisLog.Do(func() { redis.SetLogger(discardLog{}) })
	client := redis.NewClient(&redis.Options{
		Addr:                  cfg.Addr,
		Username:              cfg.Username,
		Password:              cfg.Password,
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
	return &Redis{client: client, cfg: cfg, entries: cfg.Prefix + "e:"}, nil
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
	g, err := parseGeneration(gens)
	if err != nil {
		r.errs.Add(1)
		r.misses.Add(1)
		return nil, false, Generation{}, err
	}
	b, gerr := get.Bytes()
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
	if err := r.client.Set(ctx, r.entryKey(key), encodeEntry(e), ttl).Err(); err != nil {
		r.errs.Add(1)
		return false
	}
	r.added.Add(1)
	return true
}

// Wait returns at once: Set is synchronous, so a Set that returned true is
// already visible to every replica.
func (r *Redis) Wait() {}

// Generation reads the counters of (tenant, permission) (MGET).
func (r *Redis) Generation(ctx context.Context, tenant, permission string) (Generation, error) {
	g, err := parseGeneration(r.client.MGet(ctx, r.tenantKey(tenant), r.permKey(tenant, permission)))
	if err != nil {
		r.errs.Add(1)
	}
	return g, err
}

// BumpTenant increments the tenant's counter (INCR), for every replica.
func (r *Redis) BumpTenant(ctx context.Context, tenant string) error {
	if err := r.client.Incr(ctx, r.tenantKey(tenant)).Err(); err != nil {
		r.errs.Add(1)
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	return nil
}

// BumpPermission increments the (tenant, permission) counter (INCR).
func (r *Redis) BumpPermission(ctx context.Context, tenant, permission string) error {
	if err := r.client.Incr(ctx, r.permKey(tenant, permission)).Err(); err != nil {
		r.errs.Add(1)
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	return nil
}

func parseGeneration(cmd *redis.SliceCmd) (Generation, error) {
	vals, err := cmd.Result()
	if err != nil {
		return Generation{}, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	if len(vals) != 2 {
		return Generation{}, fmt.Errorf("%w: MGET returned %d values, want 2", ErrStoreUnavailable, len(vals))
	}
	var out [2]uint64
	for i, v := range vals {
		if v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return Generation{}, fmt.Errorf("%w: generation counter of type %T", ErrStoreUnavailable, v)
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return Generation{}, fmt.Errorf("%w: generation counter %q", ErrStoreUnavailable, s)
		}
		out[i] = n
	}
	return Generation{Tenant: out[0], Permission: out[1]}, nil
}

// Metrics counts client-side: Hits and Misses of Get, KeysAdded for
// successful Sets, Errors for failed calls. Redis's evictions and memory
// are the server's (INFO), not this client's, and stay zero here.
func (r *Redis) Metrics() StoreMetrics {
	return StoreMetrics{Hits: r.hits.Load(), Misses: r.misses.Load(), KeysAdded: r.added.Load(), Errors: r.errs.Load()}
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
