package semantic_test

import (
	"context"
	"fmt"

	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/embed"
)

// A semantic cache in front of a model: a reworded question in the same
// scope is served the stored answer, with its similarity; another tenant
// never sees it.
func ExampleNew() {
	emb, _ := embed.NewHashed(embed.HashedConfig{Guards: true})
	c, _ := semantic.New(semantic.Config{Threshold: 0.93, CheckOnHit: true}, emb)
	backend := model.ModelFunc(func(_ context.Context, r *model.Request) (*model.Response, error) {
		return &model.Response{Content: "Settings → Billing → Export", FinishReason: model.FinishStop, Scope: r.Scope}, nil
	})
	stack := model.Chain(backend, c.Middleware())
	ask := func(text, tenant string) {
		r, _ := stack.Complete(context.Background(), &model.Request{Text: text,
			Scope: model.Scope{Tenant: tenant, Permission: "agent", Lang: "en", DocVersion: "v1"}})
		fmt.Printf("%-6s %-4s %.2f %s\n", tenant, r.Trace.Cache, r.Trace.Similarity, text)
	}
	ask("How do I export all invoices of 2024 as one CSV file?", "acme")
	ask("Hi team, how can I export all invoices of 2024 as one CSV file?", "acme")
	ask("How do I export all invoices of 2025 as one CSV file?", "acme")
	ask("How do I export all invoices of 2024 as one CSV file?", "globex")
	// Output:
	// acme   miss 0.00 How do I export all invoices of 2024 as one CSV file?
	// acme   hit  0.99 Hi team, how can I export all invoices of 2024 as one CSV file?
	// acme   miss 0.00 How do I export all invoices of 2025 as one CSV file?
	// globex miss 0.00 How do I export all invoices of 2024 as one CSV file?
}
