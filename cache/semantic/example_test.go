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

// Choosing the threshold: on calibration pairs, the lowest threshold
// that serves no hard negative; its hit and false-hit rates measured once
// on holdout pairs.
func ExampleChooseThreshold() {
	texts := []string{
		"How do I export all invoices of 2024 as one CSV file?",
		"Why was my card charged 49 EUR twice for the Pro plan?",
		"Can you reset the password of user 1042?",
	}
	emb, _ := embed.NewHashed(embed.HashedConfig{Guards: true})
	calibPairs, _ := semantic.GeneratePairs(texts, 400, 1, "cal")
	holdPairs, _ := semantic.GeneratePairs(texts, 400, 2, "hold")
	calib, _ := semantic.Score(context.Background(), emb, calibPairs)
	hold, _ := semantic.Score(context.Background(), emb, holdPairs)
	res, _ := semantic.ChooseThreshold(calib, hold, semantic.ThresholdOptions{})
	fmt.Printf("threshold %.4f: holdout hit rate %.2f, false hits %d/%d\n",
		res.Threshold, res.Holdout.HitRate, res.Holdout.FalseHits, res.Holdout.HardNegatives)
	// Output:
	// threshold 0.9495: holdout hit rate 0.87, false hits 0/203
}
