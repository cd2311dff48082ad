package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
)

// A directory that holds a run is refused before anything is written, and
// replaced whole with --overwrite.
func TestRunRefusesRunDirectory(t *testing.T) {
	t.Parallel()
	dir, exp := smallDir(t)
	out := filepath.Join(dir, "run")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	old := []byte("{\"old\":true}\n")
	if err := os.WriteFile(filepath.Join(out, "records.jsonl"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := crab(t, "", "run", "-q", "-e", exp, "-o", out)
	if code != exitBadInput || !strings.Contains(stderr, "holds a run (records.jsonl)") {
		t.Fatalf("exit %d, stderr %q; want %d and the held file named", code, stderr, exitBadInput)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "records.jsonl")); !bytes.Equal(b, old) {
		t.Errorf("refused run changed records.jsonl")
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
		t.Errorf("refused run wrote manifest.json")
	}
	if code, _, stderr := crab(t, "", "run", "-q", "--overwrite", "-e", exp, "-o", out); code != 0 && code != exitCheck {
		t.Fatalf("--overwrite: exit %d, stderr %q", code, stderr)
	}
	b, _ := os.ReadFile(filepath.Join(out, "records.jsonl"))
	if bytes.Contains(b, []byte(`"old"`)) {
		t.Errorf("--overwrite kept the old records")
	}
	for _, f := range []string{"manifest.json", "summary.json", "report.md"} {
		fi, err := os.Stat(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s mode %v; want 0644", f, fi.Mode().Perm())
		}
	}
}

// Values that used to surface only after the run are bad input before
// anything is written.
func TestRunRejectsBeforeWriting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, edit, want string
	}{
		{"warm-up covers every task", "seed: 7\nwarmup: 100000\n", `quick.yaml:5: field "warmup": 100000 warm-up requests leave none of the`},
		{"NaN temperature", "seed: 7\n", "temperature"},
		{"timeout under a millisecond", "seed: 7\n", `field "timeout": must be at least 1ms, got 1ns`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			exp := filepath.Join(dir, "quick.yaml")
			body := strings.Replace(quickExperiment, "seed: 7\n", tc.edit, 1)
			if tc.name == "timeout under a millisecond" {
				body = strings.Replace(body, "timeout: 2s\n", "timeout: 1ns\n", 1)
			}
			if tc.name == "NaN temperature" {
				body = strings.Replace(body, "mode: short, max_tokens: 160}", "mode: short, max_tokens: 160, temperature: .nan}", 1)
			}
			if err := os.WriteFile(exp, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "run")
			code, _, stderr := crab(t, "", "run", "-q", "-e", exp, "-o", out)
			if code != exitBadInput || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitBadInput, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("run directory created for bad input")
			}
		})
	}
}

// A run writes its directory, and `crab report` on that directory rebuilds
// exactly the summary the run wrote.
func TestRunThenReportReproduces(t *testing.T) {
	skipShort(t)
	t.Parallel()
	out, stdout := quickRun(t)
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

// fullDisk passes the first room bytes on and then fails every write
// with ENOSPC, as a file on a full disk does.
type fullDisk struct {
	mu   sync.Mutex
	w    io.Writer
	room int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(p) <= d.room {
		d.room -= len(p)
		return d.w.Write(p)
	}
	n, _ := d.w.Write(p[:d.room])
	d.room = 0
	return n, &os.PathError{Op: "write", Path: "records.jsonl", Err: syscall.ENOSPC}
}

// TestRunDiskFull: a disk that fills up during a run ends it incomplete,
// with the reason in the manifest, the run's report and crab report's.
func TestRunDiskFull(t *testing.T) {
	t.Parallel()
	dir, exp := quickDir(t)
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), runOptions{
		Experiment: exp, OutDir: out, Quiet: true, Format: "text", Stdout: &stdout, Stderr: &stderr,
		recordsWriter: func(w io.Writer) io.Writer { return &fullDisk{w: w, room: 200 << 10} },
	})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitCheck || !strings.Contains(err.Error(), "run incomplete: disk full while writing records.jsonl (no space left on device)") {
		t.Fatalf("run: %v; want exit %d naming the full disk", err, exitCheck)
	}
	raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Status       string `json:"status"`
		StatusReason string `json:"status_reason"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Status != "incomplete" || !strings.Contains(m.StatusReason, "disk full") {
		t.Errorf("manifest status %q, reason %q; want incomplete, disk full", m.Status, m.StatusReason)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	code, rebuilt, errs := crab(t, "", "report", out)
	if code != 0 {
		t.Fatalf("crab report: exit %d (stderr %s)", code, errs)
	}
	for name, text := range map[string]string{"report.txt": string(report), "crab report": rebuilt, "printed summary": stdout.String()} {
		if !strings.Contains(text, "is incomplete: disk full while writing records.jsonl") || strings.Contains(text, "the process died") || !strings.Contains(text, "incomplete") {
			t.Errorf("%s does not name the full disk:\n%s", name, text)
		}
	}
}

// A bug of crab's own on some requests (here a panic in one arm's stack on
// one task) fails those requests, never the run: every record is written,
// the manifest says incomplete naming the bug, no candidate gets a
// verdict, the panic's stack goes to stderr, and the command fails its
// check.
func TestRunBugIsIncomplete(t *testing.T) {
	t.Parallel()
	dir, exp := smallDir(t)
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), runOptions{
		Experiment: exp, OutDir: out, Quiet: true, Format: "text", Stdout: &stdout, Stderr: &stderr,
		armStack: func(arm string, next model.Model) model.Model {
			if arm != "short" {
				return next
			}
			return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				if req.TaskID == bugTask {
					var none []int
					_ = none[len(req.TaskID)]
				}
				return next.Complete(ctx, req)
			})
		},
	})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitCheck || !strings.Contains(err.Error(), "failed on a bug in crab") {
		t.Fatalf("run: %v; want exit %d naming crab's bug", err, exitCheck)
	}
	if !strings.Contains(stderr.String(), "index out of range") || !strings.Contains(stderr.String(), "run_test.go") {
		t.Errorf("stderr lacks the panic and its stack:\n%s", stderr.String())
	}
	recs, _, err := records.ReadAll([]string{filepath.Join(out, records.RecordsFile)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	bugs, total := 0, 0
	for _, r := range recs {
		total++
		if strings.HasPrefix(r.Error, "crab internal error") {
			bugs++
			if r.Arm != "short" || r.TaskID != bugTask || r.Outcome != records.OutcomeError {
				t.Errorf("%s/%s: %s %q; want only short/%s failed by the bug", r.Arm, r.TaskID, r.Outcome, r.Error, bugTask)
			}
		}
	}
	if bugs != 1 || total != 6*24 {
		t.Errorf("%d records, %d failed by the bug; want %d and 1", total, bugs, 6*24)
	}
	for _, want := range []string{"is incomplete: 1 requests failed on a bug in crab", "incomplete"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("printed summary lacks %q:\n%s", want, stdout.String())
		}
	}
	// No candidate is accepted, found inconclusive or without gain in the
	// arms table; a hard failure (a leaking cache) is still a rejection.
	incomplete := 0
	for _, line := range strings.Split(stdout.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !slices.Contains([]string{"cache_scoped", "cache_naive", "router", "short", "cascade"}, f[0]) || f[1] != "24" {
			continue
		}
		if f[len(f)-1] == "incomplete" {
			incomplete++
		}
		if v := f[len(f)-1]; v == "accept" || v == "inconclusive" || v == "no_gain" {
			t.Errorf("%s: verdict %s on a run crab failed; want incomplete (or a hard reject)", f[0], v)
		}
	}
	if incomplete == 0 {
		t.Errorf("no candidate called incomplete in the arms table:\n%s", stdout.String())
	}
}

// bugTask is the embedded task the bug test's stack fails on.
const bugTask = "t0003"
