package cli

import (
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

const quickExperiment = `name: quick
tasks: embedded:tasks.jsonl
contract: embedded:triage.schema.json
seed: 7
time_scale: 0
arrival: {pattern: burst}
concurrency: 16
max_in_flight: 16  # a client pool of 16: repeats in the burst find earlier answers cached
timeout: 2s
retry: {max_attempts: 2}
# At time_scale 0 latency is scheduler noise: judge on cost, no p95 guardrail.
gate: {objective: cost, p95_regress_pct: 1000000}
models:
  - {name: small, kind: small, price_in_per_mtok: 0.15, price_out_per_mtok: 0.6, faults: {error: 0.02, malformed: 0.02}}
  - {name: large, kind: large, price_in_per_mtok: 2.5, price_out_per_mtok: 10, faults: {error: 0.02, malformed: 0.01}}
arms:
  - {name: baseline, model: large}
  - {name: cache_scoped, model: large, cache: {key: full}}
  - {name: cache_naive, model: large, cache: {key: text, check_on_hit: false}}
  - {name: router, router: {threshold: 0.5, small: small, large: large}}
  - {name: short, model: large, mode: short, max_tokens: 160}
  - {name: cascade, router: {mode: cascade, small: small, large: large, confidence: 0.88}}
`

// quickDir writes quickExperiment into a fresh directory and returns both.
func quickDir(t *testing.T) (dir, exp string) {
	t.Helper()
	dir = t.TempDir()
	exp = filepath.Join(dir, "quick.yaml")
	if err := os.WriteFile(exp, []byte(quickExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, exp
}

// A run writes its directory, and `crab report` on that directory rebuilds
// exactly the summary the run wrote.
func TestRunThenReportReproduces(t *testing.T) {
	skipShort(t)
	t.Parallel()
	dir, exp := quickDir(t)
	out := filepath.Join(dir, "run")
	code, stdout, errs := crab(t, "", "run", "-e", exp, "-o", out, "--quiet", "--format", "json")
	if code != 0 {
		t.Fatalf("run: exit %d; stderr %s", code, errs)
	}
	for _, f := range []string{"records.jsonl", "manifest.json", "summary.json", "report.md", "report.txt"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	written, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if stdout != string(written) {
		t.Errorf("printed summary differs from summary.json")
	}
	code, again, errs := crab(t, "", "report", "--format", "json", out)
	if code != 0 {
		t.Fatalf("report: exit %d; stderr %s", code, errs)
	}
	if again != string(written) {
		t.Errorf("report on the run directory differs from the run's summary.json:\n%s\nvs\n%s", again, written)
	}
	var s summaryJSON
	if err := json.Unmarshal(written, &s); err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, a := range s.Arms {
		verdicts[a.Name] = a.Verdict
		if a.N != 480 {
			t.Errorf("%s: n = %d; want 480 (every scheduled request recorded)", a.Name, a.N)
		}
	}
	if verdicts["cache_naive"] != "reject" || verdicts["cache_scoped"] != "accept" {
		t.Errorf("verdicts %v; want cache_naive rejected and cache_scoped accepted", verdicts)
	}
	var m struct {
		Status       string `json:"status"`
		TasksHash    string `json:"tasks_hash"`
		ContractHash string `json:"contract_hash"`
		Passes       []any  `json:"passes"`
	}
	raw, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Status != "finished" || len(m.TasksHash) != 64 || len(m.ContractHash) != 64 || len(m.Passes) != 6 {
		t.Errorf("manifest: status %q, hashes %q %q, %d passes; want finished, two sha256, 6", m.Status, m.TasksHash, m.ContractHash, len(m.Passes))
	}
}

// Bad input: exit 2, one line naming file, line and field, nothing written.
func TestRunBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, edit, want string
	}{
		{"unknown field", strings.Replace(quickExperiment, "seed: 7", "seed: 7\nsede: 8", 1), "quick.yaml:5: field \"sede\""},
		{"bad threshold", strings.Replace(quickExperiment, "threshold: 0.5", "threshold: 3.5", 1), "arms.router.threshold"},
		{"bad cache key", strings.Replace(quickExperiment, "key: text", "key: 'text,colour'", 1), "arms.cache.key"},
		{"missing task file", strings.Replace(quickExperiment, "embedded:tasks.jsonl", "nowhere.jsonl", 1), "nowhere.jsonl"},
		{"broken task file", strings.Replace(quickExperiment, "embedded:tasks.jsonl", "tasks.jsonl", 1), "tasks.jsonl:2: field \"priority\""},
		{"broken contract", strings.Replace(quickExperiment, "embedded:triage.schema.json", "c.json", 1), "c.json:3"},
		{"expected outside the enum", strings.Replace(quickExperiment, "embedded:tasks.jsonl", "labelled.jsonl", 1),
			`labelled.jsonl:2: field "expected/category": enum: got "payments"; want one of "billing", "refund", "technical", "account", "shipping", "security", "other"`},
		{"expected field the contract lacks", strings.Replace(quickExperiment, "embedded:tasks.jsonl", "unknown.jsonl", 1),
			`unknown.jsonl:1: field "expected/priority": the contract has no field /priority`},
		{"unknown grade rule", quickExperiment + "grade:\n  fields:\n    - {field: /category, rule: similar}\n",
			`quick.yaml:25: field "grade.fields.rule": unknown rule "similar"`},
		{"grade field the contract lacks", quickExperiment + "grade:\n  fields:\n    - {field: /details/priority}\n",
			`quick.yaml:25: field "grade.fields.field": the contract has no field /details`},
		{"judge on no model", quickExperiment + "grade:\n  judge: {model: nobody, instructions: judge it}\n",
			`quick.yaml:24: field "grade.judge.model": no model "nobody" among the experiment's models`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(`{"id":"a","text":"x","tenant":"t","permission":"p","lang":"en","doc_version":"v1"}`+"\n"+
				`{"id":"b","text":"x","tenant":"t","permission":"p","lang":"en","doc_version":"v1","priority":1}`+"\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "labelled.jsonl"), []byte(`{"id":"a","text":"x","tenant":"t","permission":"p","lang":"en","doc_version":"v1","expected":{"category":"billing"}}`+"\n"+
				`{"id":"b","text":"x","tenant":"t","permission":"p","lang":"en","doc_version":"v1","group":"medium","expected":{"category":"payments"}}`+"\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "unknown.jsonl"), []byte("\xef\xbb\xbf"+`{"id":"a","text":"x","tenant":"t","permission":"p","lang":"en","doc_version":"v1","expected":{"priority":"high"}}`+"\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "c.json"), []byte("{\n  \"type\": \"object\",\n  \"properties\": {\"a\": {\"type\": 5}}\n}\n"), 0o644)
			exp := filepath.Join(dir, "quick.yaml")
			os.WriteFile(exp, []byte(tc.edit), 0o644)
			out := filepath.Join(dir, "run")
			code, _, errs := crab(t, "", "run", "-e", exp, "-o", out)
			if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line containing %q", code, errs, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("run directory created on bad input")
			}
		})
	}
}
