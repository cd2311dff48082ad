package records

import (
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
)

// TestFillUnpriced: a response that called a model without a price leaves
// the record's cost unmeasured, with 0 as its placeholder, whatever the
// priced calls cost; a priced one keeps its cost.
func TestFillUnpriced(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name     string
		usage    model.Usage
		cost     float64
		measured bool
	}{
		{"priced", model.Usage{TokensIn: 10, Cost: 0.5}, 0.5, true},
		{"unpriced", model.Usage{TokensIn: 10, Cost: 0.5, Unpriced: true}, 0, false},
	} {
		rec := Record{IntendedAt: at, DoneAt: at.Add(time.Second), Outcome: OutcomeOK}
		Fill(&rec, &model.Response{Usage: tc.usage, Trace: model.Trace{EscalationCost: 0.25}})
		if rec.Cost != tc.cost || rec.Measured(FigureCost) != tc.measured || rec.TokensIn != 10 {
			t.Errorf("%s: cost %v, unmeasured %v, tokens in %d; want cost %v, cost measured %v, 10 tokens",
				tc.name, rec.Cost, rec.Unmeasured, rec.TokensIn, tc.cost, tc.measured)
		}
		if !tc.measured && rec.EscalationCost != 0 {
			t.Errorf("%s: escalation cost %v; want 0 (a placeholder)", tc.name, rec.EscalationCost)
		}
	}
}

// TestAddOverheadCost: a shadow or grading call to a model without a
// price leaves that cost unmeasured, 0 as its placeholder, however much
// the priced calls before or after it cost; the request's own cost is
// not touched.
func TestAddOverheadCost(t *testing.T) {
	t.Parallel()
	rec := Record{Cost: 1}
	rec.AddGradeCost(0.5, false)
	rec.AddShadowCost(0.25, false)
	if rec.GradeCost != 0.5 || rec.ShadowCost != 0.25 || len(rec.Unmeasured) != 0 {
		t.Fatalf("priced: grade %v, shadow %v, unmeasured %v; want 0.5, 0.25, none", rec.GradeCost, rec.ShadowCost, rec.Unmeasured)
	}
	rec.AddGradeCost(0.5, true)
	rec.AddGradeCost(0.5, false)
	if rec.GradeCost != 0 || rec.Measured(FigureGradeCost) || rec.ShadowCost != 0.25 || !rec.Measured(FigureCost) || rec.Cost != 1 {
		t.Errorf("after an unpriced grading call: grade %v, shadow %v, cost %v, unmeasured %v; want grade 0 unmeasured, the rest kept",
			rec.GradeCost, rec.ShadowCost, rec.Cost, rec.Unmeasured)
	}
}
