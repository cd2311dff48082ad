package stack

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
)

// TestUnpricedBackend: a server model with no declared price answers with
// Usage.Unpriced set, and costs nothing only as a placeholder; a declared
// price of 0, a single declared price and a simulated model without
// prices are priced.
func TestUnpricedBackend(t *testing.T) {
	t.Parallel()
	cfg := sim.Large()
	cfg.TimeScale = 0
	m, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simserver.New(simserver.Config{Models: []*sim.Model{m}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	url := hs.URL + "/v1"
	specs := []ModelSpec{
		{Name: "unpriced", Backend: BackendOpenAI, BaseURL: url, Model: "large"},
		{Name: "free", Backend: BackendOpenAI, BaseURL: url, Model: "large", PriceInPerMTok: new(0.0)},
		{Name: "half", Backend: BackendOpenAI, BaseURL: url, Model: "large", PriceOutPerMTok: new(4.0)},
		{Name: "simulated", Kind: sim.KindLarge},
	}
	for i, want := range []bool{false, true, true, true} {
		if got := specs[i].Priced(); got != want {
			t.Errorf("%s: Priced() = %v; want %v", specs[i].Name, got, want)
		}
	}
	set, err := Backends(specs, BackendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	for _, tc := range []struct {
		name     string
		unpriced bool
		costs    bool
	}{{"unpriced", true, false}, {"free", false, false}, {"half", false, true}, {"simulated", false, false}} {
		resp, err := set[tc.name].Complete(context.Background(), &model.Request{TaskID: "t1", Text: "Where is my refund?", Scope: model.Scope{Tenant: "acme"}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if resp.Usage.Unpriced != tc.unpriced || (resp.Usage.Cost > 0) != tc.costs {
			t.Errorf("%s: unpriced %v, cost %v; want unpriced %v, cost above 0 %v", tc.name, resp.Usage.Unpriced, resp.Usage.Cost, tc.unpriced, tc.costs)
		}
	}
	// An unpriced attempt makes the whole request's cost unknown.
	u := model.Usage{Cost: 1}
	u.Add(model.Usage{Unpriced: true})
	if !u.Unpriced {
		t.Errorf("Usage.Add dropped Unpriced")
	}
}

// Models names every model an arm may call once: its own, its router's,
// its contract's escalation target.
func TestArmSpecModels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		arm  ArmSpec
		want []string
	}{
		{"model", ArmSpec{Model: "a"}, []string{"a"}},
		{"router", ArmSpec{Router: &RouterSpec{Small: "s", Large: "l"}}, []string{"s", "l"}},
		{"escalation to a routed model", ArmSpec{Router: &RouterSpec{Small: "s", Large: "l"}, Contract: &ContractSpec{Policy: "escalate", EscalateTo: "l"}}, []string{"s", "l"}},
		{"escalation", ArmSpec{Model: "a", Contract: &ContractSpec{Policy: "escalate", EscalateTo: "b"}}, []string{"a", "b"}},
	} {
		if got := tc.arm.Models(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v; want %v", tc.name, got, tc.want)
		}
	}
}
