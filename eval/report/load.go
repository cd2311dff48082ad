package report

import (
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/figure"
)

// offeredTable lists, per arm and backend, the load the arm offered and the
// load the backend carried meanwhile; nil when no arm has them.
func offeredTable(s *analysis.Summary) *Table {
	t := &Table{Header: []string{"arm", "backend", "requests", "calls_per_s", "tokens_out_per_s", "backend_calls_per_s"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		if a.Load == nil {
			continue
		}
		for _, l := range a.Load.Offered {
			t.add(textCell(a.Name), textCell(l.Backend), count(l.Requests), figureCell(figure.Sig(l.CallsPerS, 3)),
				figureCell(figure.Sig(l.TokensOutPerS, 3)), figureCell(figure.Sig(l.BackendCallsPerS, 3)))
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// interferenceTable lists the interference tests; nil without any.
func interferenceTable(s *analysis.Summary) *Table {
	t := &Table{Header: []string{"arm", "backend", "requests", "beside_others", "rank_corr", "p", "beyond_chance"}}
	for _, in := range s.Interference {
		rho, p := missing(), missing()
		if in.Rho != nil {
			rho, p = figureCell(figure.Sig(*in.Rho, 2)), figureCell(figure.P(*in.P))
		}
		beyond := textCell("no")
		if in.Beyond {
			beyond = textCell("yes")
		}
		t.add(textCell(in.Arm), textCell(in.Backend), count(in.Requests), count(in.Exposed), rho, p, beyond)
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}
