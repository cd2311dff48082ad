package replay

import (
	"context"
	"testing"

	"github.com/crab-testbed/crab/model"
)

// TestReplayUnpriced: a call recorded from a model without a declared
// price replays with its cost unknown (Usage.Unpriced), unless prices
// re-price its tokens.
func TestReplayUnpriced(t *testing.T) {
	t.Parallel()
	unpriced := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		resp, err := fake{}.Complete(ctx, req)
		resp.Usage.Cost, resp.Usage.Unpriced = 0, true
		return resp, err
	})
	path := recordWith(t, unpriced, []*model.Request{req("a", "four", model.ModeFull, 1)})
	for _, tc := range []struct {
		name     string
		cfg      Config
		unpriced bool
	}{{"recorded cost", Config{}, true}, {"re-priced", Config{PriceIn: 1, PriceOut: 10}, false}} {
		resp, err := backend(t, path, tc.cfg).Complete(context.Background(), req("a", "four", model.ModeFull, 1))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage.Unpriced != tc.unpriced {
			t.Errorf("%s: unpriced %v; want %v", tc.name, resp.Usage.Unpriced, tc.unpriced)
		}
	}
}
