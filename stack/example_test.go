package stack_test

import (
	"context"
	"fmt"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

// Example validates an arm with a cache in front of a simulated model,
// builds its stack and asks the same question twice: the second answer
// comes from the cache.
func Example() {
	models := []stack.ModelSpec{{Name: "large", Kind: "large"}}
	arms := []stack.ArmSpec{{Name: "cached", Model: "large", Cache: &stack.CacheSpec{Key: "full"}}}
	if errs := stack.Validate(models, arms); errs != nil {
		fmt.Println(errs)
		return
	}
	backends, err := stack.Backends(models, stack.BackendOptions{Seed: 42, Nominal: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer backends.Close()
	arm, err := stack.Build(arms[0], backends, stack.Options{WaitForStore: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer arm.Close()
	for _, id := range []string{"first", "second"} {
		req := &model.Request{TaskID: id, Text: "I was charged twice for my plan.", Scope: model.Scope{Tenant: "acme", Permission: "agent"}, Mode: arms[0].Mode}
		resp, err := arm.Model.Complete(context.Background(), req)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(id, resp.Trace.Cache, resp.Model)
	}
	// Output:
	// first miss large
	// second hit large
}
