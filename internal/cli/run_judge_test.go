package cli

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJudgeGraderRun: a run graded by a judge model (a simulated one that
// fails a fifth of its calls) records every judge decision or grading
// error per request, never passes an answer the judge could not decide,
// and reports grading errors and grading cost per arm apart from the
// arms' own cost.
func TestJudgeGraderRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const plain = `name: judged
tasks: embedded:tasks.jsonl
contract: embedded:triage.schema.json
seed: 5
repeats: 1
time_scale: 0
arrival: {pattern: burst}
concurrency: 16
timeout: 2s
gate: {objective: cost, p95_regress_pct: 1000000}
models:
  - {name: large, kind: large, price_in_per_mtok: 2.5, price_out_per_mtok: 10}
  - {name: small, kind: small, price_in_per_mtok: 0.15, price_out_per_mtok: 0.6}
  - {name: judge, kind: large, price_in_per_mtok: 1, price_out_per_mtok: 1, faults: {error: 0.2}}
arms:
  - {name: baseline, model: large}
  - {name: cheap, model: small}
`
	exp, plainExp := filepath.Join(dir, "judged.yaml"), filepath.Join(dir, "plain.yaml")
	judged := plain + `grade:
  judge: {model: judge, instructions: "Is the category right for this ticket? Answer with pass and a reason."}
`
	if err := os.WriteFile(exp, []byte(judged), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plainExp, []byte(plain), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")

	type tally struct {
		judged, errors, passes int
		cost                   float64
	}
	per := map[string]*tally{}
	for _, r := range runRecords(t, exp, out) {
		a := per[r.Arm]
		if a == nil {
			a = &tally{}
			per[r.Arm] = a
		}
		a.cost += r.GradeCost
		switch {
		case r.GradeError != "":
			a.errors++
			if r.Pass {
				t.Errorf("%s/%s: passes with a grading error (%s)", r.Arm, r.TaskID, r.GradeError)
			}
		case r.GradeCost > 0:
			a.judged++
		}
		if r.Pass {
			a.passes++
			if r.GradeCost <= 0 {
				t.Errorf("%s/%s: passes without a judge decision", r.Arm, r.TaskID)
			}
		}
	}

	type summary struct {
		Arms []struct {
			Name        string  `json:"name"`
			Pass        int     `json:"pass"`
			Cost        float64 `json:"cost"`
			GradeErrors int     `json:"grade_errors"`
			GradeCost   float64 `json:"grade_cost"`
		} `json:"arms"`
	}
	var sum summary
	readJSON(t, filepath.Join(out, "summary.json"), &sum)
	if len(sum.Arms) != 2 {
		t.Fatalf("%d arms in summary.json; want 2", len(sum.Arms))
	}
	for _, a := range sum.Arms {
		got := per[a.Name]
		if got == nil {
			t.Fatalf("arm %s: no records", a.Name)
		}
		// The judge fails about a fifth of its calls: both outcomes must
		// occur, and the errors must be a plausible share of the calls.
		calls := got.judged + got.errors
		if got.judged == 0 || got.errors == 0 || float64(got.errors) > 0.35*float64(calls) || float64(got.errors) < 0.08*float64(calls) {
			t.Errorf("arm %s: %d judge decisions and %d grading errors; want both, errors near a fifth", a.Name, got.judged, got.errors)
		}
		if a.GradeErrors != got.errors || a.Pass != got.passes {
			t.Errorf("arm %s: summary grade_errors %d, pass %d; the records have %d and %d", a.Name, a.GradeErrors, a.Pass, got.errors, got.passes)
		}
		if math.Abs(a.GradeCost-got.cost) > 1e-9 || a.GradeCost <= 0 {
			t.Errorf("arm %s: summary grade_cost %v; the records sum to %v", a.Name, a.GradeCost, got.cost)
		}
	}

	// The same run without the judge costs the arms exactly as much.
	runRecords(t, plainExp, filepath.Join(dir, "plain"))
	var without summary
	readJSON(t, filepath.Join(dir, "plain", "summary.json"), &without)
	for i, a := range without.Arms {
		if a.Name != sum.Arms[i].Name || math.Abs(a.Cost-sum.Arms[i].Cost) > 1e-12 || a.Cost <= 0 {
			t.Errorf("arm %s: cost %v with the judge, %v without; want the judge's calls outside the arm's cost", a.Name, sum.Arms[i].Cost, a.Cost)
		}
	}
	report := string(mustReadFile(t, filepath.Join(out, "report.txt")))
	if !strings.Contains(report, "grading errors (a grader could not decide") || !strings.Contains(report, "grading cost (judge model calls; part of no arm's cost or latency)") {
		t.Errorf("report does not warn of grading errors and state the grading cost:\n%s", report)
	}
}
