package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

// A grading command that crashes turns every answer that would have passed
// into a grading error: recorded, counted, warned about, never a pass.
func TestRunGradeCommandErrors(t *testing.T) {
	t.Parallel()
	dir, _ := quickDir(t)
	exp := filepath.Join(dir, "graded.yaml")
	// Twenty tasks are enough: every answer costs a process.
	all, err := os.ReadFile(filepath.Join("fixtures", "tasks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(all), "\n")[:20]
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(quickExperiment, "embedded:tasks.jsonl", "tasks.jsonl", 1) +
		"grade:\n  command: {run: [sh, -c, 'echo cannot grade >&2; exit 3'], timeout: 5s}\n"
	if err := os.WriteFile(exp, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	code, stdout, errs := crab(t, "", "run", "-e", exp, "-o", out, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	raw, err := os.ReadFile(filepath.Join(out, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []records.Record
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var r records.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	graded, passed := 0, 0
	for _, r := range recs {
		if r.Pass {
			passed++
		}
		if r.GradeError != "" {
			graded++
			if r.GradeError != "command: exit status 3: cannot grade" || r.Correct {
				t.Fatalf("record %s/%s: grade_error %q, correct %v", r.Arm, r.TaskID, r.GradeError, r.Correct)
			}
		}
	}
	if passed != 0 || graded == 0 {
		t.Errorf("%d passes and %d grading errors; want none and some", passed, graded)
	}
	if !strings.Contains(stdout, "baseline: ") || !strings.Contains(stdout, "grading errors (a grader could not decide") {
		t.Errorf("the report does not warn about grading errors:\n%s", stdout)
	}
	if !strings.Contains(stdout, "and the command sh -c echo cannot grade >&2; exit 3 accepts it (timeout 5s); a grader that cannot decide is a grading error, counted, never a pass") {
		t.Errorf("the report does not state the pass rule with the command:\n%s", stdout)
	}
}

// A grading command with protocol lines grades every answer of a run from
// a few kept processes: one verdict per line, matched by id.
func TestRunGradeCommandLines(t *testing.T) {
	t.Parallel()
	dir, _ := quickDir(t)
	exp := filepath.Join(dir, "graded.yaml")
	script := `echo start >> "$0.starts"
while IFS= read -r line; do
  id=${line#'{"id":'}; id=${id%%,*}
  echo "{\"id\": $id, \"pass\": true, \"reason\": \"kept\"}"
done
`
	if err := os.WriteFile(filepath.Join(dir, "grade.sh"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := quickExperiment + "grade:\n  command: {run: [./grade.sh], protocol: lines, concurrency: 2, timeout: 30s}\n"
	if err := os.WriteFile(exp, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	passed := 0
	for _, r := range runRecords(t, exp, out) {
		if r.GradeError != "" {
			t.Fatalf("record %s/%s: grade_error %q", r.Arm, r.TaskID, r.GradeError)
		}
		if r.Pass {
			passed++
		}
	}
	starts, err := os.ReadFile(filepath.Join(dir, "grade.sh.starts"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(starts), "start"); passed < 10 || n < 1 || n > 2 {
		t.Errorf("%d passes from %d processes; want some from at most 2", passed, n)
	}
	manifest, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), "(timeout 30s, one process per worker, one answer per line)") {
		t.Errorf("the manifest's pass rule does not state the protocol:\n%s", manifest)
	}
}
