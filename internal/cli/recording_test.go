package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// crab run with record: true keeps every call in recording.jsonl and says
// so in the manifest; a run with backend replay on it calls no model,
// gives the same passes and costs, and its manifest names the recording.
func TestRunRecordsAndReplays(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	raw, _ := os.ReadFile("fixtures/tasks.jsonl")
	os.WriteFile(filepath.Join(dir, "tasks.jsonl"), bytes.Join(bytes.SplitAfter(raw, []byte("\n"))[:30], nil), 0o644)
	c, _ := os.ReadFile("fixtures/triage.schema.json")
	os.WriteFile(filepath.Join(dir, "triage.schema.json"), c, 0o644)
	head := "tasks: tasks.jsonl\ncontract: triage.schema.json\ntime_scale: 0\nmax_in_flight: 1\narrival: {pattern: constant, rate: 2000}\n"
	arms := "arms:\n  - {name: baseline, model: large}\n  - {name: router, router: {threshold: 0.4, small: small, large: large}}\n"
	// Deterministic answers: a recording keeps one answer per request, and
	// both arms ask the large model the same requests.
	sim := "record: true\nmodels:\n  - {name: small, kind: small, price_in_per_mtok: 0.15, price_out_per_mtok: 0.6, vary: {share: 0}}\n  - {name: large, kind: large, price_in_per_mtok: 2.5, price_out_per_mtok: 10, vary: {share: 0}}\n"
	rep := "models:\n  - {name: small, backend: replay, recording: run1/recording.jsonl, price_in_per_mtok: 0.15, price_out_per_mtok: 0.6}\n" +
		"  - {name: large, backend: replay, recording: run1/recording.jsonl, price_in_per_mtok: 2.5, price_out_per_mtok: 10}\n"
	os.WriteFile(filepath.Join(dir, "sim.yaml"), []byte(head+sim+arms), 0o644)
	os.WriteFile(filepath.Join(dir, "rep.yaml"), []byte(head+rep+arms), 0o644)
	type arm struct {
		Name string  `json:"name"`
		Pass int     `json:"pass"`
		Cost float64 `json:"cost"`
	}
	summary := func(run string) []arm {
		var s struct{ Arms []arm }
		b, _ := os.ReadFile(filepath.Join(dir, run, "summary.json"))
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s.Arms
	}
	var m struct {
		Recording     string `json:"recording"`
		RecordedCalls int    `json:"recorded_calls"`
		Replays       []struct {
			Model, Recording, Source string
		} `json:"replays"`
	}
	for _, run := range []string{"run1", "run2"} {
		exp := map[string]string{"run1": "sim.yaml", "run2": "rep.yaml"}[run]
		if code, _, errs := crab(t, "", "run", "-e", filepath.Join(dir, exp), "-o", filepath.Join(dir, run), "-q"); code != 0 {
			t.Fatalf("%s: exit %d: %s", run, code, errs)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "run1", "manifest.json"))
	if err := json.Unmarshal(b, &m); err != nil || m.Recording != "recording.jsonl" || m.RecordedCalls < 60 {
		t.Fatalf("manifest: recording %q, %d calls (%v); want recording.jsonl with every call", m.Recording, m.RecordedCalls, err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "run2", "manifest.json"))
	m.Recording = ""
	if err := json.Unmarshal(b, &m); err != nil || m.Recording != "" || len(m.Replays) != 2 || m.Replays[0].Source != "run" {
		t.Fatalf("replay manifest: recording %q, replays %+v (%v); want no recording and both models replayed", m.Recording, m.Replays, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run2", "recording.jsonl")); err == nil {
		t.Errorf("a run without record: true wrote a recording")
	}
	a, r := summary("run1"), summary("run2")
	for i := range a {
		if a[i] != r[i] {
			t.Errorf("arm %s: replay %+v; recorded run %+v", a[i].Name, r[i], a[i])
		}
	}
	// A recording with a figure no call can have is refused before any
	// request, naming the recording's line and field, not a records file.
	rec, _ := os.ReadFile(filepath.Join(dir, "run1", "recording.jsonl"))
	lines := strings.SplitAfter(string(rec), "\n")
	lines[2] = regexp.MustCompile(`"cost":[0-9.e-]+`).ReplaceAllString(lines[2], `"cost":-0.5`)
	os.WriteFile(filepath.Join(dir, "run1", "recording.jsonl"), []byte(strings.Join(lines, "")), 0o644)
	code, _, errs := crab(t, "", "run", "-e", filepath.Join(dir, "rep.yaml"), "-o", filepath.Join(dir, "run3"), "-q")
	if want := `recording.jsonl:3: field "cost": must not be negative, got -0.5`; code != 2 || !strings.Contains(errs, want) || strings.Contains(errs, "records.jsonl") {
		t.Errorf("negative cost in the recording: exit %d, stderr %q; want 2 and %q", code, errs, want)
	}
}

// Bad outcome tables exit 2 naming file, line and column, and write nothing.
func TestRecordingImportBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(`{"type":"object","properties":{"answer":{"type":"string","enum":["A","B"]}},"required":["answer"],"additionalProperties":false}`), 0o644)
	for name, tc := range map[string]struct{ table, want string }{
		"unknown column": {"task_id,text,model,correct,score\nq1,x,m,true,3\n", `t.csv:1: field "score": unknown column`},
		"duplicate":      {"task_id,text,model,correct\nq1,x,m,true\nq1,,m,false\n", `t.csv:3: field "model": duplicate row`},
		"task lacks":     {"task_id,text,model,correct\nq1,x,m,true\nq2,y,n,true\n", `t.csv:2: field "model": task q1 has no row for model n`},
	} {
		os.WriteFile(filepath.Join(dir, "t.csv"), []byte(tc.table), 0o644)
		tasks, rec := filepath.Join(dir, name+"-tasks.jsonl"), filepath.Join(dir, name+"-rec.jsonl")
		code, _, errs := crab(t, "", "recording", "import", "--contract", filepath.Join(dir, "c.json"), "--tasks", tasks, "--recording", rec, filepath.Join(dir, "t.csv"))
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", name, code, errs, tc.want)
		}
		for _, f := range []string{tasks, rec} {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("%s: %s written on bad input", name, f)
			}
		}
	}
}
