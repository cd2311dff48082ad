package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/fitted"
)

// The documented flow — crab tune -o DIR, then crab run -c DIR/tuned.yaml
// — judges every arm on the holdout only: its verdicts and figures are
// those of the same experiment run on a task file holding only the tasks
// the tuned values never saw, and its report says how many were left out.
func TestTuneThenRunIsHoldoutOnly(t *testing.T) {
	t.Parallel()
	dir, exp, tasks := tuneFixture(t, 6, 6)
	out := filepath.Join(dir, "out")
	if code, _, errs := crab(t, "", "tune", "-e", exp, "-o", out, "-q"); code != 0 {
		t.Fatalf("tune: exit %d (stderr %s)", code, errs)
	}
	var tj struct {
		Fitted *fitted.Set `json:"fitted"`
	}
	readJSON(t, filepath.Join(out, "tune.json"), &tj)
	if tj.Fitted == nil || len(tj.Fitted.Tasks) == 0 {
		t.Fatalf("tune.json names no fitted tasks")
	}
	var scorer struct {
		Fitted *fitted.Set `json:"fitted"`
	}
	readJSON(t, filepath.Join(out, "scorer.json"), &scorer)
	if scorer.Fitted == nil || len(scorer.Fitted.Tasks) != len(tj.Fitted.Tasks) {
		t.Fatalf("scorer.json fitted %v; want the calibration tasks of tune.json", scorer.Fitted)
	}
	// The holdout by hand: every task whose identity tune.json lacks.
	var held bytes.Buffer
	total, kept := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(mustReadFile(t, tasks)))
	for sc.Scan() {
		var task struct{ ID, Text string }
		if err := json.Unmarshal(sc.Bytes(), &task); err != nil {
			t.Fatal(err)
		}
		total++
		if !tj.Fitted.Has(fitted.Key(task.ID, task.Text)) {
			kept++
			held.Write(sc.Bytes())
			held.WriteByte('\n')
		}
	}
	holdTasks := filepath.Join(dir, "holdout.jsonl")
	os.WriteFile(holdTasks, held.Bytes(), 0o644)
	tuned := string(mustReadFile(t, filepath.Join(out, "tuned.yaml")))
	var manual []string
	for _, line := range strings.Split(tuned, "\n") {
		switch {
		case strings.HasPrefix(line, "fitted:"):
		case strings.HasPrefix(line, "tasks:"):
			manual = append(manual, "tasks: "+holdTasks)
		default:
			manual = append(manual, line)
		}
	}
	os.WriteFile(filepath.Join(dir, "manual.yaml"), []byte(strings.Join(manual, "\n")), 0o644)

	summary := func(expFile, runDir string) (summaryJSON, []string) {
		t.Helper()
		if code, _, errs := crab(t, "", "run", "-e", expFile, "-o", runDir, "-q", "--format", "json"); code != 0 && code != 1 {
			t.Fatalf("run %s: exit %d (stderr %s)", expFile, code, errs)
		}
		var s summaryJSON
		readJSON(t, filepath.Join(runDir, "summary.json"), &s)
		var n struct {
			Notes []string `json:"notes"`
		}
		readJSON(t, filepath.Join(runDir, "summary.json"), &n)
		return s, n.Notes
	}
	flow, notes := summary(filepath.Join(out, "tuned.yaml"), filepath.Join(dir, "flow"))
	hold, _ := summary(filepath.Join(dir, "manual.yaml"), filepath.Join(dir, "manual"))
	if len(flow.Arms) != len(hold.Arms) {
		t.Fatalf("%d arms in the flow's run, %d in the holdout-only run", len(flow.Arms), len(hold.Arms))
	}
	for i, a := range flow.Arms {
		h := hold.Arms[i]
		if a.Name != h.Name || a.N != kept || a.N != h.N || a.Pass != h.Pass || a.Cost != h.Cost || a.Verdict != h.Verdict {
			t.Errorf("arm %s: flow n %d pass %d cost %v verdict %s; holdout-only n %d pass %d cost %v verdict %s (want n %d)",
				a.Name, a.N, a.Pass, a.Cost, a.Verdict, h.N, h.Pass, h.Cost, h.Verdict, kept)
		}
	}
	left := total - kept
	found := false
	for _, n := range notes {
		if strings.HasPrefix(n, "holdout only:") && strings.Contains(n, fmt.Sprintf("the %d tasks", left)) {
			found = true
		}
	}
	if !found {
		t.Errorf("notes %q; want one saying the %d fitted tasks were left out", notes, left)
	}
	// crab report on the run directory says it too.
	_, rep, _ := crab(t, "", "report", "--format", "json", filepath.Join(dir, "flow"))
	if !strings.Contains(rep, "holdout only:") {
		t.Errorf("crab report of the run lacks the holdout note")
	}
}

// A fitted section or scorer file that does not fit the run is bad input,
// refused before any request with the file, line and field.
func TestFittedBadInput(t *testing.T) {
	t.Parallel()
	dir, exp, _ := tuneFixture(t, 6, 6)
	out := filepath.Join(dir, "out")
	if code, _, errs := crab(t, "", "tune", "-e", exp, "-o", out, "-q"); code != 0 {
		t.Fatalf("tune: exit %d (stderr %s)", code, errs)
	}
	tuned := string(mustReadFile(t, filepath.Join(out, "tuned.yaml")))
	var tj map[string]any
	readJSON(t, filepath.Join(out, "tune.json"), &tj)
	tj["fitted"].(map[string]any)["task_set"] = strings.Repeat("0", 64)
	other, _ := json.Marshal(tj)
	os.WriteFile(filepath.Join(dir, "other.json"), other, 0o644)
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"scorer fitted on these tasks", dropLine(tuned, "fitted:"), `field "arms.router.scorer": arm router: ` + filepath.Join(out, "scorer.json") + " was fitted on"},
		{"fitted on another task set", strings.Replace(tuned, "fitted: "+filepath.Join(out, "tune.json"), "fitted: "+filepath.Join(dir, "other.json"), 1), `field "fitted": ` + filepath.Join(dir, "other.json") + " was fitted on another task set"},
		{"fitted names no tasks", strings.Replace(tuned, "fitted: "+filepath.Join(out, "tune.json"), "fitted: "+filepath.Join(dir, "tasks.jsonl"), 1), `field "fitted"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "exp.yaml")
			os.WriteFile(f, []byte(tc.yaml), 0o644)
			runDir := filepath.Join(t.TempDir(), "run")
			code, _, errs := crab(t, "", "run", "-e", f, "-o", runDir, "-q")
			if code != 2 || !strings.Contains(errs, f+":") || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 with %q", code, errs, tc.want)
			}
			if _, err := os.Stat(runDir); err == nil {
				t.Errorf("a refused run wrote %s", runDir)
			}
			// crab serve --experiment reads the experiment the same way and
			// refuses it before it listens.
			code, _, errs = crab(t, "", "serve", "--experiment", f, "--arm", "router", "--keys", filepath.Join(t.TempDir(), "keys"), "--listen", "127.0.0.1:0")
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("serve: exit %d, stderr %q; want 2 with %q", code, errs, tc.want)
			}
		})
	}
}

// dropLine removes the lines of s that start with prefix.
func dropLine(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
