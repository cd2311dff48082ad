package audit

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/internal/redistest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopShared()
	os.Exit(code)
}

// prefixSeq keeps every Redis store of the test binary under its own prefix.
var prefixSeq atomic.Int64

// testStore makes a fresh store of one kind.
type testStore struct {
	name string
	make func(t testing.TB) cache.Store
}

// testStores lists both stores; Redis skips (or, under CI, fails) when
// redis-server is not installed.
func testStores(t *testing.T) []testStore {
	t.Helper()
	return []testStore{
		{"ristretto", func(t testing.TB) cache.Store {
			s, err := cache.NewRistretto(cache.RistrettoConfig{NumCounters: 1 << 12, MaxCost: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		}},
		{"redis", func(t testing.TB) cache.Store { return newTestRedis(t) }},
	}
}

// newTestRedis connects to the shared test server under a fresh prefix,
// deleted at cleanup.
func newTestRedis(t testing.TB) *cache.Redis {
	t.Helper()
	addr := redistest.Shared(t)
	r, err := cache.NewRedis(context.Background(), cache.RedisConfig{Addr: addr, Prefix: fmt.Sprintf("audit%d:", prefixSeq.Add(1)), DeleteOnClose: true})
	if err != nil {
		t.Fatalf("NewRedis: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}
