package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Declared figures alone size a run: 10% of tasks flipping with
// probability 0.5 at a 5-point margin need 159 tasks at one repeat (see
// eval/plan's tests for the formula).
func TestPlanDeclared(t *testing.T) {
	t.Parallel()
	code, out, errs := crab(t, "", "plan", "--noise-share", "0.1", "--flip", "0.5", "--margin-pp", "5", "--latency-mean-ms", "500", "--latency-sd-ms", "150", "--repeats", "1,3")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	for _, want := range []string{"identical calls disagree on 5.00% of tasks", "1        159", "3        117"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A pilot's records give the figures: the exercise's candidate_a, which
// loses one task of six, points to a reject, candidate_b to an accept.
func TestPlanPilot(t *testing.T) {
	t.Parallel()
	code, out, errs := crab(t, "", "plan", "fixtures/exercise.csv")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	for _, want := range []string{"pilot of 3 arms, 6 tasks × 1 repeat(s)", "candidate_a  6      -16.67", "reject", "candidate_b  6      +0.00", "accept"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Bad input is one line naming the flag, or the file, line and field, and
// exit 2.
func TestPlanBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("arm,task_id,latency_ms,outcome,pass,cost\nbaseline,t1,100,ok,true,1\nbaseline,t2,-5,ok,true,1\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"alpha", []string{"--alpha", "0.5", "--pass-rate", "0.9"}, "--alpha 0.5"},
		{"margin", []string{"--margin-pp", "100", "--pass-rate", "0.9"}, "--margin-pp 100"},
		{"negative margin", []string{"--margin-pp", "-1", "--pass-rate", "0.9"}, "--margin-pp -1"},
		{"power", []string{"--power", "1", "--pass-rate", "0.9"}, "--power 1"},
		{"repeats", []string{"--repeats", "1,0"}, `--repeats "1,0"`},
		{"nothing to size on", nil, "needs a PILOT"},
		{"discordance", []string{"--discordance", "1.5"}, "--discordance 1.5"},
		{"pass rate", []string{"--pass-rate", "0"}, "--pass-rate 0"},
		{"effect", []string{"--latency-effect-pct", "0", "--pass-rate", "0.9"}, "--latency-effect-pct 0"},
		{"file line field", []string{bad}, "bad.csv:3"},
		{"missing file", []string{filepath.Join(dir, "none.jsonl")}, "none.jsonl"},
		{"unknown baseline", []string{"--baseline", "nope", "fixtures/exercise.csv"}, `unknown baseline arm "nope"`},
	}
	for _, tc := range tests {
		code, _, errs := crab(t, "", append([]string{"plan"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line naming %q", tc.name, code, errs, tc.want)
		}
	}
}
