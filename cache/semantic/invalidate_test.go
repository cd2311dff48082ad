package semantic

import (
	"context"
	"testing"

	"github.com/crab-testbed/crab/model"
)

// invalidator is what the exact cache offers for invalidation by scope;
// the semantic cache honours the same calls.
type invalidator interface {
	InvalidateTenant(ctx context.Context, tenant string) error
	InvalidatePermission(ctx context.Context, tenant, permission string) error
}

var _ invalidator = (*Cache)(nil)

func scoped(text, tenant, permission string) *model.Request {
	r := req(text, tenant)
	r.Scope.Permission = permission
	return r
}

func TestInvalidation(t *testing.T) {
	t.Parallel()
	const para = "Hi, how can I export all invoices of 2024 as one CSV file?"
	for _, tc := range []struct {
		name       string
		invalidate func(context.Context, *Cache) error
		ask        *model.Request
		want       string
	}{
		{"tenant drops its own entries", func(ctx context.Context, c *Cache) error { return c.InvalidateTenant(ctx, "acme") }, scoped(para, "acme", "admin"), model.CacheMiss},
		{"tenant spares other tenants", func(ctx context.Context, c *Cache) error { return c.InvalidateTenant(ctx, "globex") }, scoped(para, "acme", "admin"), model.CacheHit},
		{"permission drops its entries", func(ctx context.Context, c *Cache) error { return c.InvalidatePermission(ctx, "acme", "admin") }, scoped(para, "acme", "admin"), model.CacheMiss},
		{"permission spares the tenant's other permissions", func(ctx context.Context, c *Cache) error { return c.InvalidatePermission(ctx, "acme", "admin") }, scoped(para, "acme", "viewer"), model.CacheHit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, m, _ := newStack(t, Config{Threshold: 0.9, CheckOnHit: true}, guarded(t))
			ctx := context.Background()
			for _, r := range []*model.Request{scoped(q, "acme", "admin"), scoped(q, "acme", "viewer")} {
				if got, _ := m.Complete(ctx, r); got.Trace.Cache != model.CacheMiss {
					t.Fatalf("first ask: %s; want miss", got.Trace.Cache)
				}
			}
			if err := tc.invalidate(ctx, c); err != nil {
				t.Fatal(err)
			}
			got, _ := m.Complete(ctx, tc.ask)
			if got.Trace.Cache != tc.want {
				t.Errorf("paraphrase after invalidation: %s; want %s", got.Trace.Cache, tc.want)
			}
			st := c.Stats()
			if wantInv := uint64(0); tc.want == model.CacheMiss {
				wantInv = 1
				if st.Invalidated != wantInv {
					t.Errorf("invalidated %d; want %d", st.Invalidated, wantInv)
				}
			}
			if st.Invalidations != 1 {
				t.Errorf("invalidations %d; want 1", st.Invalidations)
			}
			// The miss stored a fresh answer, which is served again.
			if again, _ := m.Complete(ctx, tc.ask); again.Trace.Cache != model.CacheHit {
				t.Errorf("after the fresh answer: %s; want hit", again.Trace.Cache)
			}
		})
	}
}

// An answer still in flight when its tenant is invalidated is never
// served: it was built from what the invalidation replaced.
func TestInvalidationInFlight(t *testing.T) {
	t.Parallel()
	c, err := New(Config{Threshold: 0.9, CheckOnHit: true}, guarded(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	be := model.ModelFunc(func(ctx context.Context, r *model.Request) (*model.Response, error) {
		if err := c.InvalidateTenant(ctx, "acme"); err != nil { // while the answer is being built
			return nil, err
		}
		return &model.Response{Content: "old answer", FinishReason: model.FinishStop, Scope: r.Scope}, nil
	})
	m := model.Chain(be, c.Middleware())
	if _, err := m.Complete(ctx, req(q, "acme")); err != nil {
		t.Fatal(err)
	}
	after := model.Chain(&echo{}, c.Middleware())
	if got, _ := after.Complete(ctx, req(q, "acme")); got.Trace.Cache != model.CacheMiss || got.Content == "old answer" {
		t.Errorf("after an in-flight invalidation: %s %q; want a miss and a fresh answer", got.Trace.Cache, got.Content)
	}
}
