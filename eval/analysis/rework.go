package analysis

import (
	"fmt"
	"math"
	"slices"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
)

// Rework is what redoing a task by hand costs when the stack did not pass
// it: a failed task does not disappear, someone does it again. Set, it is
// added to the cost of every request that does not pass, so an arm's cost,
// cost per pass, paired cost delta and guardrails all carry it. A rate per
// failure cause (timeout, error, contract_fail, contract, wrong_answer)
// wins over one per input group, which wins over the default.
type Rework struct {
	CostPerTask    float64               `yaml:"cost_per_task" json:"cost_per_task"`
	MinutesPerTask float64               `yaml:"minutes_per_task" json:"minutes_per_task,omitempty"`
	Groups         map[string]ReworkRate `yaml:"groups" json:"groups,omitempty"`
	Causes         map[string]ReworkRate `yaml:"causes" json:"causes,omitempty"`
}

// ReworkRate is the cost and time of redoing one task.
type ReworkRate struct {
	Cost    float64 `yaml:"cost" json:"cost"`
	Minutes float64 `yaml:"minutes" json:"minutes,omitempty"`
}

// ReworkCauses are the failure causes a rate may be given for.
var ReworkCauses = []string{records.OutcomeTimeout, records.OutcomeError, records.OutcomeContractFail, records.OutcomeCancelled, "contract", "wrong_answer"}

// ReworkStats is what an arm's failures cost to redo.
type ReworkStats struct {
	Tasks   int     `json:"tasks"` // requests that did not pass: tasks that need a person
	Cost    float64 `json:"cost"`  // included in the arm's cost
	Minutes float64 `json:"minutes,omitempty"`
}

// Check returns the first problem of w as a field (below rework.) and a
// message; "" when none.
func (w *Rework) Check() (field, msg string) {
	if w == nil {
		return "", ""
	}
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
	if bad(w.CostPerTask) {
		return "cost_per_task", fmt.Sprintf("a cost, 0 or more, got %v", w.CostPerTask)
	}
	if bad(w.MinutesPerTask) {
		return "minutes_per_task", fmt.Sprintf("minutes, 0 or more, got %v", w.MinutesPerTask)
	}
	for _, k := range sortedKeys(w.Causes) {
		if !slices.Contains(ReworkCauses, k) {
			return "causes." + k, fmt.Sprintf("unknown failure cause %q (want one of %v)", k, ReworkCauses)
		}
		if r := w.Causes[k]; bad(r.Cost) || bad(r.Minutes) {
			return "causes." + k, "cost and minutes must be 0 or more"
		}
	}
	for _, k := range sortedKeys(w.Groups) {
		if r := w.Groups[k]; bad(r.Cost) || bad(r.Minutes) {
			return "groups." + k, "cost and minutes must be 0 or more"
		}
	}
	return "", ""
}

// rate is what redoing r costs.
func (w *Rework) rate(t *records.Symbols, r *records.Rec) ReworkRate {
	if c, ok := w.Causes[lostCause(t, r)]; ok {
		return c
	}
	if g, ok := w.Groups[t.Str(t.Attrs(r).Group)]; ok {
		return g
	}
	return ReworkRate{Cost: w.CostPerTask, Minutes: w.MinutesPerTask}
}

// applyRework replaces every non-passing record of recs by a copy whose
// cost carries its rework, and returns what the rework came to.
func applyRework(t *records.Symbols, w *Rework, recs []*records.Rec) *ReworkStats {
	st := &ReworkStats{}
	for i, r := range recs {
		if t.Attrs(r).Pass {
			continue
		}
		rt := w.rate(t, r)
		c := *r
		c.Cost += rt.Cost
		recs[i] = &c
		st.Tasks++
		st.Cost += rt.Cost
		st.Minutes += rt.Minutes
	}
	return st
}

// reworkNote states the rework rule in force for the report's notes.
func reworkNote(w *Rework) string {
	s := "rework: every request that does not pass needs a person, at " + figure.Cost(w.CostPerTask) + " a task"
	if w.MinutesPerTask > 0 {
		s += " and " + figure.Trim(fmt.Sprint(w.MinutesPerTask)) + " minutes"
	}
	if len(w.Causes) > 0 || len(w.Groups) > 0 {
		s += fmt.Sprintf(" (%d failure causes and %d groups at rates of their own)", len(w.Causes), len(w.Groups))
	}
	return s + "; that cost is in every arm's cost, cost per pass and paired cost delta"
}
