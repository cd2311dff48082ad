package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The six-request exercise, through the command line.
func TestReportExercise(t *testing.T) {
	t.Parallel()
	code, out, errs := crab(t, "", "report", "--rule", "net", "--format", "json", "fixtures/exercise.csv")
	if code != 0 {
		t.Fatalf("exit %d; want 0 (stderr %s)", code, errs)
	}
	var s summaryJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name              string
		pass              int
		p95, cost, perPas float64
		verdict           string
	}{
		{"baseline", 6, 900, 120, 20.00, "baseline"},
		{"candidate_a", 5, 300, 80, 16.00, "reject"},
		{"candidate_b", 6, 500, 100, 100.0 / 6, "accept"},
	}
	if len(s.Arms) != len(want) {
		t.Fatalf("got %d arms; want %d", len(s.Arms), len(want))
	}
	for i, w := range want {
		a := s.Arms[i]
		if a.Name != w.name || a.Pass != w.pass || a.P95 != w.p95 || a.Cost != w.cost || a.CostPerPass == nil || *a.CostPerPass != w.perPas || a.Verdict != w.verdict {
			t.Errorf("arm %d: got %+v; want %+v", i, a, w)
		}
	}
	if !strings.Contains(strings.Join(s.Arms[1].Reasons, " "), "t6") {
		t.Errorf("candidate_a reasons %q; want the lost task t6 named", s.Arms[1].Reasons)
	}
}

func TestReportExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("arm,task_id,latency_ms,outcome,pass,cost\nb,t1,fast,ok,true,1\n"), 0o644)
	cases := []struct {
		name    string
		stdin   string
		args    []string
		want    int
		wantErr string
	}{
		{"reject fails the check", "", []string{"report", "--rule", "net", "--fail-on-reject", "fixtures/exercise.csv"}, 1, "candidate_a"},
		{"unknown baseline", "", []string{"report", "--baseline", "nope", "fixtures/exercise.csv"}, 2, "nope"},
		{"bad csv names file line field", "", []string{"report", bad}, 2, "bad.csv:2"},
		{"missing file", "", []string{"report", filepath.Join(dir, "none.csv")}, 2, "none.csv"},
		{"no paths", "", []string{"report"}, 2, "PATH"},
		{"unknown format", "", []string{"report", "--format", "xml", "fixtures/exercise.csv"}, 2, "xml"},
		{"unknown flag", "", []string{"report", "--bogus", "fixtures/exercise.csv"}, 2, "bogus"},
		{"stdin", "arm,task_id,latency_ms,outcome,pass,cost\nbaseline,t1,5,ok,true,1\n", []string{"report", "-"}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, errs := crab(t, tc.stdin, tc.args...)
			if code != tc.want || !strings.Contains(errs, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d and a message naming %q", code, errs, tc.want, tc.wantErr)
			}
			if strings.Contains(errs, "goroutine ") {
				t.Errorf("stack trace on stderr: %s", errs)
			}
		})
	}
}

// A run killed mid-write leaves a torn last line and a manifest that still
// says running: crab report uses every complete record, calls every
// candidate incomplete and says why, and exits 0 (never 2).
func TestReportOnKilledRun(t *testing.T) {
	skipShort(t)
	t.Parallel()
	out, _ := quickRun(t)
	recPath := filepath.Join(out, "records.jsonl")
	raw, err := os.ReadFile(recPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(raw, []byte("\n"))
	// Cut the file in the middle of its last record.
	last := bytes.LastIndexByte(raw[:len(raw)-1], '\n')
	torn := raw[:last+1+(len(raw)-last-1)/2]
	if err := os.WriteFile(recPath, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	man, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	man = bytes.Replace(man, []byte(`"status": "finished"`), []byte(`"status": "running"`), 1)
	if err := os.WriteFile(filepath.Join(out, "manifest.json"), man, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := crab(t, "", "report", "--format", "json", out)
	if code != 0 {
		t.Fatalf("report on a killed run: exit %d; want 0 (stderr %q)", code, stderr)
	}
	var s struct {
		Arms []struct {
			Name    string   `json:"name"`
			N       int      `json:"n"`
			Verdict string   `json:"verdict"`
			Reasons []string `json:"reasons"`
		} `json:"arms"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range s.Arms {
		n += a.N
		if a.Name == "baseline" {
			continue
		}
		if a.Name == "cache_naive" { // leaks: nothing excuses them, complete run or not
			if a.Verdict != "reject" {
				t.Errorf("cache_naive verdict %s; want reject (it leaks)", a.Verdict)
			}
			continue
		}
		if a.Verdict != "incomplete" {
			t.Errorf("%s verdict %s; want incomplete", a.Name, a.Verdict)
		}
		if r := strings.Join(a.Reasons, " "); !strings.Contains(r, "still says running") || !strings.Contains(r, "cut short") {
			t.Errorf("%s reasons %q; want the manifest and the torn line named", a.Name, a.Reasons)
		}
	}
	if n != lines-1 {
		t.Errorf("report used %d records; want the %d complete ones", n, lines-1)
	}
}

// TestReportStoreErrors: store failures a run's manifest counts are a
// warning of crab report, with their effect on the arm's hit rate.
func TestReportStoreErrors(t *testing.T) {
	t.Parallel()
	out, _ := quickRun(t)
	path := filepath.Join(out, "manifest.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["passes"] = []any{map[string]any{"arm": "cache_scoped", "repeat": 0, "metrics": map[string]any{"store": map[string]any{"errors": 45}}}}
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := crab(t, "", "report", out)
	if code != 0 || !strings.Contains(stdout, "cache_scoped: 45 cache store calls failed during the run") || !strings.Contains(stdout, "is lower than with the store reachable: at most") {
		t.Errorf("crab report: exit %d, output lacks the store warning (stderr %s):\n%s", code, errs, stdout)
	}
}

// crab report refuses to merge runs of different experiments unless told
// the merge is intended, and then says so in its warnings.
func TestReportRefusesMixedExperiments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("examples", "triage", "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := filepath.Abs(filepath.Join("examples", "triage", "tasks.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	exp := strings.Replace(string(src), "tasks: tasks.jsonl", "tasks: "+tasks, 1)
	other := strings.NewReplacer("name: baseline", "name: large_b", "name: short", "name: short_b", "name: router", "name: router_b", "seed: 1", "seed: 2").Replace(exp)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, r := range []struct{ out, yaml string }{{a, exp}, {b, other}} {
		path := r.out + ".yaml"
		if err := os.WriteFile(path, []byte(r.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := crab(t, "", "run", "-q", "-e", path, "-o", r.out); code != 0 {
			t.Fatalf("run %s: exit %d: %s", path, code, errs)
		}
	}
	code, _, errs := crab(t, "", "report", a, b)
	if code != exitBadInput || !strings.Contains(errs, "are not one experiment: experiment") || !strings.Contains(errs, "--allow-mixed") {
		t.Errorf("report of two experiments: exit %d, %q; want exit 2 naming the difference", code, errs)
	}
	code, out, errs := crab(t, "", "report", "--allow-mixed", a, b)
	if code != 0 || !strings.Contains(out, "merged on purpose (--allow-mixed)") {
		t.Errorf("report --allow-mixed: exit %d, %s %s; want the merge named in the warnings", code, out, errs)
	}
}
