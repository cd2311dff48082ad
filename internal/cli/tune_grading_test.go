package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuneGradingErrors: crab tune warns about outcomes a grader could not
// decide and refuses to write tuned.yaml from a table that is mostly
// grading errors; fixing the grading script invalidates the table, and the
// tuned.yaml written then names the script wherever it is run from.
func TestTuneGradingErrors(t *testing.T) {
	t.Parallel()
	dir, exp, _ := tuneFixture(t, 4, 4)
	script := filepath.Join(dir, "grade.sh")
	write := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(script, "echo cannot grade >&2\nexit 3\n")
	raw, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	write(exp, string(raw)+"grade:\n  command: {run: [sh, grade.sh], timeout: 10s}\n")
	out := filepath.Join(dir, "out")

	code, _, errs := crab(t, "", "tune", "-e", exp, "-o", out)
	if code != 1 || !strings.Contains(errs, "is mostly grading errors") || !strings.Contains(errs, "warning: outcome table") {
		t.Fatalf("broken grader: exit %d, stderr %q; want exit 1 refusing with a warning", code, errs)
	}
	if _, err := os.Stat(filepath.Join(out, "tuned.yaml")); err == nil {
		t.Error("tuned.yaml written from a table of grading errors")
	}
	code, stdout, errs := crab(t, "", "tune", "-e", exp, "-q")
	if code != 0 || !strings.Contains(stdout, "of 48 outcomes are grading errors") || !strings.Contains(stdout, "command: exit status 3: cannot grade") {
		t.Errorf("without -o: exit %d, stdout %q; want exit 0 and the grading errors in the summary (stderr %s)", code, stdout, errs)
	}

	write(script, "cat >/dev/null\necho '{\"pass\": true}'\n")
	code, stdout, errs = crab(t, "", "tune", "-e", exp, "-o", out)
	if code != 0 || strings.Contains(errs, "(read, no model calls)") || strings.Contains(stdout+errs, "grading errors") {
		t.Fatalf("fixed grader: exit %d, stderr %q; want the table rebuilt, no grading error", code, errs)
	}
	tuned, err := os.ReadFile(filepath.Join(out, "tuned.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(script)
	if !strings.Contains(string(tuned), abs) {
		t.Errorf("tuned.yaml does not name the grading script by its absolute path %s:\n%s", abs, tuned)
	}
	// From another folder than the experiment's, the grader is found.
	if code, _, errs := crab(t, "", "run", "-q", "-e", filepath.Join(out, "tuned.yaml"), "-o", filepath.Join(dir, "run")); code != 0 {
		t.Errorf("crab run -c tuned.yaml: exit %d (stderr %s)", code, errs)
	}
}
