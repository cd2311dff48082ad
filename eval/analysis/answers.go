package analysis

import (
	"fmt"
	"sort"
	"strings"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"

	"github.com/crab-testbed/crab/internal/words"
)

// answerWarnings fills each arm's grading figures and warns, after the
// verdicts, when an arm's answers mostly break the contract (naming the
// most common violation), when the baseline passes nothing (naming the
// most common reason), and when graders could not decide.
func answerWarnings(t *records.Symbols, s *Summary, byArm map[string][]*records.Rec) {
	for i := range s.Arms {
		a := &s.Arms[i]
		answered, broken := 0, 0
		violations, fails := map[string]int{}, map[string]int{}
		for _, r := range byArm[a.Name] {
			if t.Attrs(r).GradeError {
				a.GradeErrors++
			}
			a.GradeCost += t.Extras(r).GradeCost
			if t.Str(t.Attrs(r).Outcome) != records.OutcomeOK && t.Str(t.Attrs(r).Outcome) != records.OutcomeContractFail {
				continue // no answer to judge
			}
			answered++
			if !t.Attrs(r).ContractOK {
				broken++
				if v := t.Str(t.Attrs(r).Violation); v != "" {
					violations[v]++
				}
			} else if f := t.Str(t.Attrs(r).GradeFail); f != "" && !t.Attrs(r).Pass {
				fails[f]++
			}
		}
		if !a.Measured(records.FigureGradeCost) {
			a.GradeCost = 0 // a placeholder, as Cost's
		}
		if answered > 0 && 2*broken > answered {
			w := fmt.Sprintf("%s: %d of %d answers break the contract", a.Name, broken, answered)
			if top, n := most(violations); top != "" {
				w += fmt.Sprintf("; most often %s (%s)", top, words.Count(n, "answer"))
			}
			s.Decision.Warnings = append(s.Decision.Warnings, w+": the arm is measuring the contract more than the task")
		}
		if i == 0 && a.Pass == 0 && a.N > 0 && a.Measured(records.FigureQuality) {
			w := fmt.Sprintf("the baseline %s passes none of its %s, so no candidate can be judged on quality", a.Name, words.Count(a.N, "request"))
			switch top, n := most(fails); {
			case broken > 0 && 2*broken > answered:
				w += "; its answers break the contract (above)"
			case top != "":
				w += fmt.Sprintf("; the most common failed check is %s (%s): check the tasks' expected answers and the grade section against the contract", top, words.Count(n, "answer"))
			case answered == 0:
				w += "; no request got an answer (see outcomes)"
			}
			s.Decision.Warnings = append(s.Decision.Warnings, w)
		}
		if a.GradeErrors > 0 {
			s.Decision.Warnings = append(s.Decision.Warnings, fmt.Sprintf("%s: %s (a grader could not decide: timeout, crash, bad output or a failed judge); counted as not passing, see grade_error in the records",
				a.Name, words.Count(a.GradeErrors, "grading error")))
		}
		if rs := a.RouteStats; rs != nil && rs.ScorerFallbacks > 0 {
			s.Decision.Warnings = append(s.Decision.Warnings, fmt.Sprintf("%s: the router's scorer failed on %d of %d routed requests, which were routed on its fallback score instead; see route_fallback in the records",
				a.Name, rs.ScorerFallbacks, rs.Routed))
		}
	}
}

// gradeNotes states what the external graders cost, apart from the arms
// ("-" where a judge without a price left it unmeasured).
func gradeNotes(s *Summary) []string {
	var parts []string
	for i := range s.Arms {
		switch a := &s.Arms[i]; {
		case !a.Measured(records.FigureGradeCost):
			parts = append(parts, a.Name+" -")
		case a.GradeCost > 0:
			parts = append(parts, a.Name+" "+figure.Cost(a.GradeCost))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{"grading cost (judge model calls; part of no arm's cost or latency): " + strings.Join(parts, ", ")}
}

// most is the key with the highest count (the first in key order on a tie).
func most(m map[string]int) (string, int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	top, n := "", 0
	for _, k := range keys {
		if m[k] > n {
			top, n = k, m[k]
		}
	}
	return top, n
}
