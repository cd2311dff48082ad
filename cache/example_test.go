package cache_test

import (
	"context"
	"fmt"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/model"
)

// A scoped cache in front of a model: the repeat hits, the same question from
// another tenant does not get the first tenant's answer.
func Example() {
	store, err := cache.NewRistretto(cache.RistrettoConfig{}) // defaults
	if err != nil {
		panic(err)
	}
	defer store.Close()
	fields, err := cache.ParseFields("full")
	if err != nil {
		panic(err)
	}
	c, err := cache.New(cache.Config{Fields: fields, CheckOnHit: true, WaitForStore: true}, store)
	if err != nil {
		panic(err)
	}
	backend := model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Content: "answer for " + req.Scope.Tenant, FinishReason: model.FinishStop, Scope: req.Scope}, nil
	})
	stack := model.Chain(backend, c.Middleware())

	for _, tenant := range []string{"acme", "acme", "globex"} {
		req := &model.Request{Text: "Why was I charged twice?", Scope: model.Scope{Tenant: tenant, Permission: "agent", Lang: "en", DocVersion: "v1"}}
		resp, err := stack.Complete(context.Background(), req)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s, %q, leak=%q\n", tenant, resp.Trace.Cache, resp.Content, resp.Trace.Leak)
	}
	st := c.Stats()
	fmt.Printf("key %s: hits=%d misses=%d leaks=%d\n", c.Key(), st.Hits, st.Misses, st.Leaks.Total())
	// Output:
	// acme: miss, "answer for acme", leak=""
	// acme: hit, "answer for acme", leak=""
	// globex: miss, "answer for globex", leak=""
	// key tenant,permission,doc_version,lang,model,mode,max_tokens,sampling,contract,system,history,text: hits=1 misses=2 leaks=0
}

// The naive text-only key, run on purpose to measure what it leaks.
func ExampleLeakKind() {
	stored := model.Scope{Tenant: "acme", Permission: "admin", Lang: "en-US", DocVersion: "v1"}
	fmt.Println(cache.LeakKind(stored, model.Scope{Tenant: "acme", Permission: "admin", Lang: "en_us", DocVersion: "v1"}) == "")
	fmt.Println(cache.LeakKind(stored, model.Scope{Tenant: "acme", Permission: "viewer", Lang: "en-US", DocVersion: "v2"}))
	// Output:
	// true
	// permission
}

// A tenant's document set moves to a new version: every answer built for
// the tenant before that is no longer served, even one still in flight.
func ExampleCache_InvalidateTenant() {
	store, err := cache.NewRistretto(cache.RistrettoConfig{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	c, err := cache.New(cache.Config{CheckOnHit: true, WaitForStore: true}, store)
	if err != nil {
		panic(err)
	}
	backend := model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Content: "answer from " + req.Scope.DocVersion, FinishReason: model.FinishStop, Scope: req.Scope}, nil
	})
	stack := model.Chain(backend, c.Middleware())
	ctx := context.Background()
	req := &model.Request{Text: "What does the Pro plan include?", Scope: model.Scope{Tenant: "acme", Permission: "agent", Lang: "en", DocVersion: "v3"}}
	for _, step := range []string{"ask", "ask", "invalidate", "ask"} {
		if step == "invalidate" {
			if err := c.InvalidateTenant(ctx, "acme"); err != nil {
				panic(err)
			}
			fmt.Println("acme's documents changed")
			continue
		}
		resp, err := stack.Complete(ctx, req)
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.Trace.Cache, resp.Content)
	}
	fmt.Printf("invalidated entries refused: %d\n", c.Stats().Invalidated)
	// Output:
	// miss answer from v3
	// hit answer from v3
	// acme's documents changed
	// miss answer from v3
	// invalidated entries refused: 1
}
