package stack

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/model"
)

// TestLayerOrderIsNoHiddenRule: every cache kind decides what to store
// from the answer and its own contract check, not from the contract
// layer's trace fields, so it never serves an answer that breaks the
// contract, whether the contract layer runs inside it (the stack's order)
// or outside it. A cache that trusted the trace instead would store the
// first, unchecked answer in the second order and serve it on the next
// request: this test fails then.
func TestLayerOrderIsNoHiddenRule(t *testing.T) {
	t.Parallel()
	k := loadContract(t)
	for _, kind := range []string{cache.KindExact, cache.KindSemantic} {
		for _, order := range []string{"cache outside contract", "contract outside cache"} {
			t.Run(kind+"/"+order, func(t *testing.T) {
				t.Parallel()
				cs := &CacheSpec{Kind: kind}
				if kind == cache.KindSemantic {
					cs.Settings = semantic.Settings{Threshold: 0.9}
				}
				models := append([]ModelSpec(nil), simModels...) // Validate fills defaults in place
				spec := validated(t, models, ArmSpec{Name: "a", Model: "large", Cache: cs})
				arm := &Arm{}
				if err := Builtin().cacheLayer(arm, spec.Cache, Options{Contract: k, WaitForStore: true}); err != nil {
					t.Fatal(err)
				}
				defer arm.Close()
				cmw, err := contract.New(k, contract.Config{Policy: contract.PolicyReask})
				if err != nil {
					t.Fatal(err)
				}
				var calls atomic.Int64
				backend := model.ModelFunc(func(_ context.Context, req *model.Request) (*model.Response, error) {
					content := validAnswer
					if calls.Add(1) == 1 {
						content = "Refund one charge." // free text: breaks the contract
					}
					return &model.Response{Content: content, FinishReason: model.FinishStop, Scope: req.Scope,
						Trace: model.Trace{Attempts: 1}}, nil
				})
				badHits := 0
				watch := func(next model.Model) model.Model { // right outside the cache
					return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
						resp, err := next.Complete(ctx, req)
						if resp != nil && resp.Trace.Cache == model.CacheHit && len(k.Validate(resp.Content, resp.FinishReason)) > 0 {
							badHits++
						}
						return resp, err
					})
				}
				layers := []model.Middleware{watch, arm.Cache.Middleware(), cmw}
				if order == "contract outside cache" {
					layers = []model.Middleware{cmw, watch, arm.Cache.Middleware()}
				}
				m := model.Chain(backend, layers...)
				for i, id := range []string{"t1", "t2"} {
					resp, err := m.Complete(context.Background(), request(id))
					if err != nil || !resp.Trace.Validated || !resp.Trace.ContractOK {
						t.Fatalf("request %d: err %v, validated %v, contract ok %v; want a valid answer", i+1, err, resp.Trace.Validated, resp.Trace.ContractOK)
					}
				}
				if badHits > 0 {
					t.Errorf("%d hits served an answer that breaks the contract; want 0", badHits)
				}
				// Outside the contract, the cache sees the failing first
				// answer itself and must refuse to store it.
				wantNotCached := uint64(0)
				if order == "contract outside cache" {
					wantNotCached = 1
				}
				if st := arm.Cache.Stats(); st.Stored == 0 || st.NotCached != wantNotCached {
					t.Errorf("Stored %d, NotCached %d; want the valid answer stored and %d refused (%+v)", st.Stored, st.NotCached, wantNotCached, st)
				}
			})
		}
	}
}
