package stack_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
	"github.com/crab-testbed/crab/stack"
)

// mapStore is a toy cache store: a map behind a mutex. A real store lives
// in its own package; this one only has to implement cache.Store.
type mapStore struct {
	mu      sync.Mutex
	entries map[uint64]*cache.Entry
	m       cache.StoreMetrics
}

var _ cache.Store = (*mapStore)(nil)

func (s *mapStore) Get(_ context.Context, key uint64) (*cache.Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if ok {
		s.m.Hits++
	} else {
		s.m.Misses++
	}
	return e, ok
}

func (s *mapStore) Set(_ context.Context, key uint64, e *cache.Entry, _ time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries[key] = e
	s.m.KeysAdded++
	return true
}

func (s *mapStore) Wait() {}

func (s *mapStore) Metrics() cache.StoreMetrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m
}

func (s *mapStore) Close() {}

// lengthScorer is a toy difficulty scorer: the longer the text, the
// harder the request.
func lengthScorer(req *model.Request) router.Score {
	return router.Score{Value: min(float64(len(strings.Fields(req.Text)))/20, 1)}
}

// ExampleTable adds a cache store and a router scorer to crab's table,
// one entry each, and builds an arm that names both: the same entries
// serve validation, building and help text.
func ExampleTable() {
	tbl := stack.Builtin()
	tbl.Stores = append(tbl.Stores, stack.StoreKind{Name: "map", Help: "a map behind a mutex (toy)",
		Open: func(cache.StoreConfig) (cache.Store, error) {
			return &mapStore{entries: map[uint64]*cache.Entry{}}, nil
		}})
	tbl.Scorers = append(tbl.Scorers, stack.ScorerKind{Name: "length", Help: "word count over 20 (toy)",
		New: func() (router.Scorer, error) { return router.ScorerFunc(lengthScorer), nil }})

	models := []stack.ModelSpec{{Name: "small", Kind: "small"}, {Name: "large", Kind: "large"}}
	arms := []stack.ArmSpec{{Name: "toy", Cache: &stack.CacheSpec{Store: "map"},
		Router: &stack.RouterSpec{Small: "small", Large: "large", Threshold: 0.5, Scorer: "length"}}}
	if errs := tbl.Validate(models, arms); errs != nil {
		fmt.Println(errs)
		return
	}
	bad := []stack.ArmSpec{{Name: "bad", Model: "large", Cache: &stack.CacheSpec{Store: "floppy"}}}
	fmt.Println(tbl.Validate(models, bad)[0])

	backends, err := stack.Backends(models, stack.BackendOptions{Seed: 42, Nominal: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer backends.Close()
	arm, err := tbl.Build(arms[0], backends, stack.Options{WaitForStore: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer arm.Close()
	long := "My invoice for March shows the annual plan twice, once at the old price and once at the new one, and I was charged for both."
	for _, text := range []string{"Charged twice?", "Charged twice?", long} {
		req := &model.Request{Text: text, Scope: model.Scope{Tenant: "acme", Permission: "agent"}, Mode: arms[0].Mode}
		resp, err := arm.Model.Complete(context.Background(), req)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(resp.Trace.Cache, resp.Model)
	}
	fmt.Println("map store entries:", arm.Store.Metrics().KeysAdded)
	// Output:
	// arms[0].cache.store: unknown store "floppy" (want ristretto, redis or map)
	// miss small
	// hit small
	// miss large
	// map store entries: 2
}
