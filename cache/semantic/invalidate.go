package semantic

import (
	"context"
	"sync"
)

// generations are the in-process invalidation counters of a semantic
// cache, as the exact cache keeps them: one per tenant and one per
// (tenant, permission). An entry is stamped with the counters read when
// its request started, and served only while they are unchanged, so an
// answer still in flight when its scope is invalidated is never served.
type generations struct {
	mu   sync.Mutex
	gens map[genKey]uint64
}

type genKey struct{ tenant, permission string }

type generation struct{ tenant, permission uint64 }

func (g *generations) get(tenant, permission string) generation {
	g.mu.Lock()
	defer g.mu.Unlock()
	return generation{g.gens[genKey{tenant: tenant}], g.gens[genKey{tenant, permission}]}
}

func (g *generations) bump(k genKey) {
	g.mu.Lock()
	if g.gens == nil {
		g.gens = map[genKey]uint64{}
	}
	g.gens[k]++
	g.mu.Unlock()
}

// InvalidateTenant makes every answer built for tenant before the call
// unservable, those still in flight included, as the exact cache's
// InvalidateTenant does: use it when the tenant's document set moves to a
// new version. The entries are left to be evicted.
func (c *Cache) InvalidateTenant(_ context.Context, tenant string) error {
	c.gens.bump(genKey{tenant: tenant})
	c.st.invalidations.Add(1)
	return nil
}

// InvalidatePermission makes every answer built for (tenant, permission)
// before the call unservable, in flight ones included, like
// InvalidateTenant: use it when what that permission may see is narrowed.
func (c *Cache) InvalidatePermission(_ context.Context, tenant, permission string) error {
	c.gens.bump(genKey{tenant, permission})
	c.st.invalidations.Add(1)
	return nil
}
