//go:build unix

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

// hostileExperiment is the quick experiment on its first ten tasks, with
// grade appended.
func hostileExperiment(t *testing.T, grade string) (dir, exp string) {
	t.Helper()
	dir, _ = quickDir(t)
	exp = filepath.Join(dir, "graded.yaml")
	all, err := os.ReadFile(filepath.Join("fixtures", "tasks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(all), "\n")[:10] // every answer costs a process
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(quickExperiment, "embedded:tasks.jsonl", "tasks.jsonl", 1) + grade
	if err := os.WriteFile(exp, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, exp
}

// TestRunHostileGrader: in a crab run, a grader that answers {"Pass":
// true} passes nothing — every answer it grades is a grading error — and
// it never sees the model key in crab's environment.
func TestRunHostileGrader(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-crab-test-not-for-graders-0123")
	dir, exp := hostileExperiment(t, "grade:\n  command: {run: [./grade.sh], timeout: 30s}\n")
	script := "#!/bin/sh\nif [ -n \"$OPENAI_API_KEY\" ]; then echo '{\"pass\": false, \"reason\": \"saw the key\"}'; exit 0; fi\necho '{\"Pass\":true}'\n"
	if err := os.WriteFile(filepath.Join(dir, "grade.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	if code, _, errs := crab(t, "", "run", "-e", exp, "-o", out, "-q"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	raw, err := os.ReadFile(filepath.Join(out, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	graded := 0
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var r records.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Pass || strings.Contains(r.GradeReason, "saw the key") {
			t.Fatalf("record %s/%s: pass %v, reason %q; want no pass and no key", r.Arm, r.TaskID, r.Pass, r.GradeReason)
		}
		if r.GradeError != "" {
			graded++
			if !strings.Contains(r.GradeError, `unknown key "Pass" (keys are lowercase: pass, reason)`) {
				t.Fatalf("record %s/%s: grade_error %q", r.Arm, r.TaskID, r.GradeError)
			}
		}
	}
	if graded == 0 {
		t.Error("no answer reached the grader")
	}
}

// TestRunGraderEnvBadInput: an env entry that names no variable is the
// experiment's fault, found before any request, on its line.
func TestRunGraderEnvBadInput(t *testing.T) {
	t.Parallel()
	dir, exp := hostileExperiment(t, "grade:\n  command:\n    run: [sh, -c, 'echo {}']\n    env: [\"MY KEY=1\"]\n")
	code, _, errs := crab(t, "", "run", "-e", exp, "-o", filepath.Join(dir, "run"), "-q")
	if want := `graded.yaml:26: field "grade.command.env": "MY KEY=1": want NAME (passed from crab's environment) or NAME=value`; code != 2 || !strings.Contains(errs, want) {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, errs, want)
	}
}
