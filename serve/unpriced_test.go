package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crab-testbed/crab/internal/metrictest"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/model/simserver"
)

// TestUnpricedCost: an answer of a model that declares no price adds
// nothing to crab_serve_cost_total and one to crab_serve_unpriced_total;
// a priced model's answer adds its cost and no unpriced response.
func TestUnpricedCost(t *testing.T) {
	t.Parallel()
	_, url := upstream(t, sim.Config{}, simserver.Faults{})
	cfg := "keys: keys.yaml\ntimeout: 5s\nmodels:\n" +
		"  - {name: small, base_url: '" + url + "', price_in_per_mtok: 1, price_out_per_mtok: 4}\n" +
		"  - {name: large, base_url: '" + url + "'}\n" +
		"default_model: large\n"
	s, hs, reg := configServer(t, cfg, Options{})
	for _, m := range []string{"large", "small"} {
		if r := post(t, hs.URL, "sk-acme", chatBody(m, ticket, false, ""), nil); r.status != 200 {
			t.Fatalf("%s: status %d: %s", m, r.status, r.body)
		}
	}
	// What the priced attempts of an unpriced request cost is a part of
	// an unknown figure: left out, not added.
	s.m.charge("large", "acme", model.Usage{Cost: 0.5, Unpriced: true})
	for _, c := range []struct {
		name, model string
		want        float64
	}{
		{"crab_serve_unpriced_total", "model=large", 2},
		{"crab_serve_cost_total", "model=large", 0},
		{"crab_serve_unpriced_total", "model=small", 0},
	} {
		if got := metrictest.Sum(t, reg, c.name, c.model, "tenant=acme"); got != c.want {
			t.Errorf("%s{%s, tenant=acme} = %v; want %v", c.name, c.model, got, c.want)
		}
	}
	if got := metrictest.Sum(t, reg, "crab_serve_cost_total", "model=small", "tenant=acme"); got <= 0 {
		t.Errorf("crab_serve_cost_total{model=small, tenant=acme} = %v; want above 0 (a priced model)", got)
	}
	if got := seriesOf(t, reg, "crab_serve_unpriced_total", "tenant=globex"); got == 0 {
		t.Error("crab_serve_unpriced_total{tenant=globex}: no series; want them at zero before any request")
	}
}

// TestShadowUnpricedBudget: a cost budget over a shadow arm calling a
// model without a price is refused at load; with requests or tokens as
// the limit the same shadow loads.
func TestShadowUnpricedBudget(t *testing.T) {
	t.Parallel()
	base := "keys: keys.yaml\nmodels:\n  - {name: small, base_url: http://127.0.0.1:1/v1, price_in_per_mtok: 1}\n" +
		"  - {name: large, base_url: http://127.0.0.1:1/v1}\n" +
		"default_model: small\narms:\n  - {name: cand, model: small, router: {small: small, large: large}}\n"
	for _, tc := range []struct{ budget, want string }{
		{"{cost: 2}", `serve.yaml:10: field "shadow.budget.cost": the shadow arm cand calls model large, which declares no price: ` +
			`a cost budget could never be spent; declare models[1].price_in_per_mtok (and price_out_per_mtok), or limit requests or tokens`},
		{"{requests: 10, tokens: 100}", ""},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "keys.yaml"), []byte(testKeys), 0o644)
		path := filepath.Join(dir, "serve.yaml")
		os.WriteFile(path, []byte(base+"shadow:\n  arm: cand\n  budget: "+tc.budget+"\n"), 0o644)
		_, err := Load(path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("budget %s: %v; want it loaded", tc.budget, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("budget %s: got %v; want a ConfigError containing %q", tc.budget, err, tc.want)
		}
	}
}

// TestShadowUnpricedSpend: a mirrored call whose cost is unknown (a
// replayed call recorded without one) books no cost and, under a cost
// budget, pauses shadowing with one log line until the next window.
func TestShadowUnpricedSpend(t *testing.T) {
	t.Parallel()
	_, url := upstream(t, sim.Config{}, simserver.Faults{})
	var mu sync.Mutex
	var lines []string
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if line := fmt.Sprintf(format, args...); strings.HasPrefix(line, "shadow") {
			lines = append(lines, line)
		}
	}
	cfg := "keys: keys.yaml\ntimeout: 5s\nrecords: {dir: recs}\nmodels:\n" +
		"  - {name: small, base_url: '" + url + "', price_in_per_mtok: 1, price_out_per_mtok: 4}\n" +
		"default_model: small\narms:\n  - {name: cand, model: small}\n" +
		"shadow: {arm: cand, budget: {cost: 5, window: 1h}}\n"
	s, _, _ := configServer(t, cfg, Options{Now: now, Logf: logf})
	x := s.shadow
	offer := func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		ok := x.admit(now())
		if ok {
			x.pending++
		}
		return ok
	}
	if !offer() {
		t.Fatal("the first request of a window was not admitted")
	}
	x.spend(model.Usage{TokensIn: 10, TokensOut: 5, Cost: 0.25, Unpriced: true})
	for range 2 {
		if offer() {
			t.Error("admitted after a call of unknown cost; want shadowing paused for the window")
		}
	}
	x.mu.Lock()
	booked, tokens := x.cost, x.tokens
	x.mu.Unlock()
	if booked != 0 || tokens != 15 || testutil.ToFloat64(x.mCost) != 0 || testutil.ToFloat64(x.mPaused) != 1 || testutil.ToFloat64(x.mBudget) != 2 {
		t.Errorf("booked cost %v, tokens %d, cost metric %v, paused %v, budget paused %v; want 0, 15, 0, 1, 2",
			booked, tokens, testutil.ToFloat64(x.mCost), testutil.ToFloat64(x.mPaused), testutil.ToFloat64(x.mBudget))
	}
	mu.Lock()
	got := slices.Clone(lines)
	clock = clock.Add(time.Hour)
	mu.Unlock()
	if len(got) != 1 || !strings.Contains(got[0], "cost is unmeasured") {
		t.Errorf("log lines %q; want one saying the cost is unmeasured", got)
	}
	if !offer() {
		t.Error("not admitted in the next window; want shadowing resumed")
	}
	x.spend(model.Usage{TokensIn: 10, Cost: 0.5})
	if c := testutil.ToFloat64(x.mCost); c != 0.5 {
		t.Errorf("cost metric %v after a priced call; want 0.5", c)
	}
}
