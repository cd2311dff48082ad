package eval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/eval/report"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/redistest"
	"github.com/crab-testbed/crab/internal/tunefixture"
	"github.com/crab-testbed/crab/stack"
)

// A cache arm runs on either store, chosen per arm in the experiment file;
// with a warm-up the report shows the cold cache (warm-up requests) beside
// the warm one; the manifest metrics name the store's counters.
func TestCacheArmStores(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tunefixture.WriteTasks(t, filepath.Join(dir, "tasks.jsonl"), 60)
	stores := []struct {
		name, spec string
	}{
		{"ristretto", "{key: full}"},
		{"redis", ""}, // filled in below: the address is only known once the server runs
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			spec := st.spec
			if st.name == "redis" {
				spec = "{key: full, store: redis, redis_addr: \"" + redistest.Start(t) + "\"}"
			}
			exp := `name: stores
tasks: tasks.jsonl
contract: embedded:triage.schema.json
time_scale: 0
warmup: 20
arrival: {pattern: burst}
concurrency: 1
models:
  - {name: large, kind: large}
arms:
  - {name: baseline, model: large}
  - {name: cached, model: large, cache: ` + spec + `}
`
			path := filepath.Join(dir, st.name+".yaml")
			if err := os.WriteFile(path, []byte(exp), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := LoadSetup(path, fixtures.FS)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var recs []records.Record
			res, err := s.Runner("stores", func(r records.Record) error {
				mu.Lock()
				defer mu.Unlock()
				recs = append(recs, r)
				return nil
			}).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			sum, err := summarizeRecs(recs, analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var cached *analysis.ArmSummary
			for i := range sum.Arms {
				if sum.Arms[i].Name == "cached" {
					cached = &sum.Arms[i]
				}
			}
			c := cached.CacheStats
			if c == nil || c.Cold == nil {
				t.Fatalf("cached arm cache stats = %+v; want warm figures with cold ones beside", c)
			}
			if c.CacheRequests != 40 || c.Cold.CacheRequests != 20 || cached.LeakCount() != 0 {
				t.Fatalf("warm requests %d, cold %d, leaks %d; want 40, 20, 0", c.CacheRequests, c.Cold.CacheRequests, cached.LeakCount())
			}
			coldHits := 0
			for _, r := range recs {
				if r.Arm == "cached" && r.Warmup && r.Cache == "hit" {
					coldHits++
				}
			}
			if c.Cold.Hits != coldHits {
				t.Errorf("cold hits = %d; want the %d hits among warm-up records", c.Cold.Hits, coldHits)
			}
			var b strings.Builder
			if err := report.Write(&b, "text", report.Input{Summary: sum}); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"cached (warm)", "cached (cold: warm-up)"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, b.String())
				}
			}
			var m *stack.CacheMetrics
			for _, p := range res.Passes {
				if cm, ok := p.Metrics.(stack.CacheMetrics); ok {
					m = &cm
				}
			}
			if m == nil || m.Store.KeysAdded == 0 || m.Store.Errors != 0 || m.Cache.Stored != m.Store.KeysAdded+m.Store.KeysUpdated {
				t.Fatalf("pass metrics = %+v; want the store's counters, keys added or updated = answers stored, no errors", m)
			}
		})
	}
}

func TestCacheStoreSpecErrors(t *testing.T) {
	t.Parallel()
	base := strings.Replace(minimalExperiment, "  - name: baseline\n    model: large\n", "  - name: baseline\n    model: large\n    cache: CACHE\n", 1)
	tests := []struct {
		name, cache, field string
	}{
		{"unknown store", "{store: memcached}", "arms.cache.store"},
		{"redis_addr without redis", "{redis_addr: \"127.0.0.1:1\"}", "arms.cache.redis_addr"},
		{"redis password env unset", "{store: redis, redis_password_env: CRAB_TEST_UNSET_REDIS_PW}", "arms.cache.redis_password_env"},
		{"tag key env unset", "{store: redis, tag_key_env: CRAB_TEST_UNSET_TAG_KEY}", "arms.cache.tag_key_env"},
		{"client cert unreadable", "{store: redis, redis_tls_cert: nope.pem, redis_tls_key: nope.key}", "arms.cache.redis_tls_cert"},
		{"ca unreadable", "{store: redis, redis_tls_ca: nope-ca.pem}", "arms.cache.redis_tls_ca"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseExperiment([]byte(strings.Replace(base, "CACHE", tc.cache, 1)), "x.yaml")
			var ie *records.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || ie.Line != 11 {
				t.Fatalf("error = %v; want an InputError at line 11, field %s", err, tc.field)
			}
		})
	}
	e, err := ParseExperiment([]byte(strings.Replace(base, "CACHE", "{store: redis}", 1)), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Arms[0].Cache; got.Store != "redis" || got.RedisAddr != cache.DefaultRedisAddr {
		t.Fatalf("store redis defaults = %+v; want address %s", got, cache.DefaultRedisAddr)
	}
	if e, _ := ParseExperiment([]byte(strings.Replace(base, "CACHE", "{key: full}", 1)), "x.yaml"); e.Arms[0].Cache.Store != "ristretto" {
		t.Fatalf("default store = %q; want ristretto", e.Arms[0].Cache.Store)
	}
}

// An unreachable Redis fails the setup, before anything is run or written.
func TestCacheStoreUnreachable(t *testing.T) {
	t.Parallel()
	srv, err := redistest.Launch()
	redistest.Require(t, err)
	addr := srv.Addr
	srv.Close() // nothing listens there any more
	dir := t.TempDir()
	tunefixture.WriteTasks(t, filepath.Join(dir, "tasks.jsonl"), 5)
	exp := `name: down
tasks: tasks.jsonl
contract: embedded:triage.schema.json
arrival: {pattern: burst}
models:
  - {name: large, kind: large}
arms:
  - {name: cached, model: large, cache: {store: redis, redis_addr: "` + addr + `"}}
`
	path := filepath.Join(dir, "down.yaml")
	if err := os.WriteFile(path, []byte(exp), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadSetup(path, fixtures.FS)
	if !errors.Is(err, records.ErrBadInput) || !strings.Contains(err.Error(), "cached") {
		t.Fatalf("LoadSetup error = %v; want a bad-input error naming the arm", err)
	}
}
