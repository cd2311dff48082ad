package analysis

import (
	"fmt"
	"slices"
	"testing"
)

func TestAnswerWarnings(t *testing.T) {
	t.Parallel()
	var recs []Record
	for i := range 10 {
		id := fmt.Sprintf("t%d", i)
		// The baseline's answers break the contract on 8 tasks, mostly on /intent.
		b := Record{Arm: "baseline", TaskID: id, Outcome: OutcomeContractFail, E2EMs: 10, Cost: 1,
			Violations: []string{`/intent: enum: got "urgent"; want one of "a", "b"`, "/x: required: missing"}}
		if i >= 6 {
			b.Violations = []string{`/priority: type: got string; want integer`}
		}
		if i >= 8 {
			b.Outcome, b.ContractOK, b.Violations, b.GradeReason = OutcomeOK, true, nil, `/intent: equals: got "a"; want "b"`
		}
		// The candidate answers within the contract; its grader fails twice.
		c := Record{Arm: "cand", TaskID: id, Outcome: OutcomeOK, ContractOK: true, Correct: true, Pass: true, E2EMs: 5, Cost: 1, GradeCost: 0.5}
		if i < 2 {
			c.Correct, c.Pass, c.GradeError = false, false, "command: timed out after 10s"
		}
		recs = append(recs, b, c)
	}
	s, err := summarizeRecs(recs, Options{PassRule: "pass rule: test"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"baseline: 8 of 10 answers break the contract; most often /intent: enum (6 answers): the arm is measuring the contract more than the task",
		"the baseline baseline passes none of its 10 requests, so no candidate can be judged on quality; its answers break the contract (above)",
		"cand: 2 grading errors (a grader could not decide: timeout, crash, bad output or a failed judge); counted as not passing, see grade_error in the records",
	}
	for _, w := range want {
		if !slices.Contains(s.Decision.Warnings, w) {
			t.Errorf("warning %q missing from %q", w, s.Decision.Warnings)
		}
	}
	if !slices.Contains(s.Notes, "pass rule: test") {
		t.Errorf("notes %q lack the pass rule", s.Notes)
	}
	if note := "grading cost (judge model calls; part of no arm's cost or latency): cand 5"; !slices.Contains(s.Notes, note) {
		t.Errorf("notes %q lack %q", s.Notes, note)
	}
	if a := s.Arms[1]; a.GradeErrors != 2 || a.Cost != 10 {
		t.Errorf("cand: grade errors %d, cost %v; want 2 and 10 (grading cost apart)", a.GradeErrors, a.Cost)
	}

	// A baseline within the contract that fails every grade names the check.
	for i := range recs {
		if recs[i].Arm == "baseline" {
			recs[i].Outcome, recs[i].ContractOK, recs[i].Violations, recs[i].GradeReason = OutcomeOK, true, nil, `/intent: equals: got "a"; want "b"`
		}
	}
	s, err = summarizeRecs(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := "the baseline baseline passes none of its 10 requests, so no candidate can be judged on quality; the most common failed check is /intent: equals (10 answers): check the tasks' expected answers and the grade section against the contract"
	if !slices.Contains(s.Decision.Warnings, w) {
		t.Errorf("warning %q missing from %q", w, s.Decision.Warnings)
	}
}
