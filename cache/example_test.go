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
	c, err := cache.New(cache.Config{Fields: fields, CheckOnHit: true}, store)
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
	// key tenant,permission,doc_version,lang,model,mode,max_tokens,sampling,contract,system,text: hits=1 misses=2 leaks=0
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
