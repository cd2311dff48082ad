package cache

import (
	"context"
	"sync"
	"sync/atomic"
)

// Generation is the invalidation state of a scope: how often its tenant
// and its (tenant, permission) pair have been invalidated. Every entry is
// stamped with the generation its request's scope had when the request
// started; a hit is served only while the entry's scope still has that
// generation (see Cache.InvalidateTenant).
type Generation struct {
	Tenant     uint64 `json:"tenant"`
	Permission uint64 `json:"permission"`
}

// Generations keeps the invalidation counters of a cache. It is declared
// here, by its consumer: a store that implements it keeps the counters
// beside the entries (Ristretto in process, Redis shared by every replica),
// so an invalidation made through one cache is seen by every cache on the
// same store. A cache over a store that does not implement it keeps its
// own in-process counters.
type Generations interface {
	// Generation returns the current generation of (tenant, permission).
	// Only equality matters: a store may start its counters at any value
	// (the in-process one at zero, Redis at a random one, so that a lost
	// counter never comes back at a value an entry was stamped with). An
	// error (a shared store that cannot be reached, a counter it cannot
	// read) makes the cache neither serve nor store: invalidation fails
	// closed.
	Generation(ctx context.Context, tenant, permission string) (Generation, error)
	// BumpTenant moves the tenant's counter to a value it never had.
	BumpTenant(ctx context.Context, tenant string) error
	// BumpPermission moves the (tenant, permission) counter to a value it
	// never had.
	BumpPermission(ctx context.Context, tenant, permission string) error
}

// localGenerations is the in-process Generations. Reads cost one atomic
// load until the first bump, then a read-locked map lookup.
type localGenerations struct {
	bumped  atomic.Bool
	mu      sync.RWMutex
	tenants map[string]*tenantGeneration
}

type tenantGeneration struct {
	gen   uint64
	perms map[string]uint64
}

var _ Generations = (*localGenerations)(nil)

// Generation never fails.
func (g *localGenerations) Generation(_ context.Context, tenant, permission string) (Generation, error) {
	if !g.bumped.Load() {
		return Generation{}, nil
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	t := g.tenants[tenant]
	if t == nil {
		return Generation{}, nil
	}
	return Generation{Tenant: t.gen, Permission: t.perms[permission]}, nil
}

// BumpTenant never fails.
func (g *localGenerations) BumpTenant(_ context.Context, tenant string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tenant(tenant).gen++
	g.bumped.Store(true)
	return nil
}

// BumpPermission never fails.
func (g *localGenerations) BumpPermission(_ context.Context, tenant, permission string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.tenant(tenant)
	if t.perms == nil {
		t.perms = map[string]uint64{}
	}
	t.perms[permission]++
	g.bumped.Store(true)
	return nil
}

// tenant returns the tenant's counters, creating them; g.mu is held.
func (g *localGenerations) tenant(name string) *tenantGeneration {
	if g.tenants == nil {
		g.tenants = map[string]*tenantGeneration{}
	}
	t := g.tenants[name]
	if t == nil {
		t = &tenantGeneration{}
		g.tenants[name] = t
	}
	return t
}
