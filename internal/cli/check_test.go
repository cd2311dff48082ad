package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	checkContract = "fixtures/triage.schema.json"
	checkData     = "testdata/check/"
	voiceData     = "testdata/voice/"
)

// TestCheckGolden runs crab check on the files under testdata/check and
// compares stdout, stderr and the exit code with golden files named after
// the test (refresh them with go test -run TestCheckGolden -update).
func TestCheckGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  int
	}{
		{name: "lint_shipped", args: []string{"--lint", checkContract}, want: 0},
		{name: "lint_broken", args: []string{"--lint", checkData + "broken.schema.json"}, want: 1},
		{name: "valid", args: []string{"--contract", checkContract, checkData + "valid.jsonl"}, want: 0},
		{name: "violations", args: []string{"--contract", checkContract, checkData + "violations.jsonl"}, want: 1},
		{name: "violations_max_listed", args: []string{"--contract", checkContract, "--max-listed", "2", checkData + "violations.jsonl"}, want: 1},
		{name: "run_dir", args: []string{"--contract", checkContract, checkData + "run"}, want: 0},
		{name: "stdin", stdin: `{"task_id":"s1","output":"{\"category\":\"refund\"}"}` + "\n", args: []string{"--contract", checkContract, "-"}, want: 1},
		{name: "proof_pass", args: []string{"--contract", checkContract, "--experiment", "fixtures/default.yaml", "--full", checkData + "full.jsonl", "--short", checkData + "short_ok.jsonl"}, want: 0},
		{name: "proof_span_with_tasks", args: []string{"--contract", checkContract, "--experiment", "fixtures/default.yaml", "--tasks", checkData + "tasks.jsonl", "--full", checkData + "full.jsonl", "--short", checkData + "short_span.jsonl"}, want: 0},
		{name: "proof_span_without_tasks", args: []string{"--contract", checkContract, "--experiment", "fixtures/default.yaml", "--full", checkData + "full.jsonl", "--short", checkData + "short_span.jsonl"}, want: 1},
		{name: "proof_over_short", args: []string{"--contract", checkContract, "--experiment", "fixtures/default.yaml", "--full", checkData + "full.jsonl", "--short", checkData + "short_over.jsonl"}, want: 1},
		{name: "proof_changed", args: []string{"--contract", checkContract, "--experiment", "fixtures/default.yaml", "--tasks", checkData + "tasks.jsonl", "--full", checkData + "full.jsonl", "--short", checkData + "short_changed.jsonl"}, want: 1},
		{name: "proof_truncated", args: []string{"--contract", checkContract, "--experiment", "fixtures/default.yaml", "--full", checkData + "full.jsonl", "--short", checkData + "short_truncated.jsonl"}, want: 1},
		{name: "proof_full_timeout", args: []string{"--contract", checkContract, "--experiment", "fixtures/default.yaml", "--full", checkData + "full_timeout.jsonl", "--short", checkData + "short_ok.jsonl"}, want: 0},
		{name: "proof_missing_task", args: []string{"--contract", checkContract, "--experiment", "fixtures/default.yaml", "--full", checkData + "full.jsonl", "--short", checkData + "short_missing.jsonl", "--max-listed", "0"}, want: 1},
		{name: "proof_span_derived", args: []string{"--contract", checkContract, "--full", checkData + "full.jsonl", "--short", checkData + "short_span.jsonl"}, want: 0},
		{name: "proof_voice_derived", args: []string{"--contract", voiceData + "voice.schema.json", "--full", voiceData + "full.jsonl", "--short", voiceData + "short.jsonl"}, want: 1},
		{name: "proof_voice_declared", args: []string{"--contract", voiceData + "voice.schema.json", "--decide", "intent.name,confirm", "--keep", "slots.value", "--full", voiceData + "full.jsonl", "--short", voiceData + "short.jsonl"}, want: 1},
		{name: "proof_voice_experiment", args: []string{"--contract", voiceData + "voice.schema.json", "--experiment", voiceData + "experiment.yaml", "--full", voiceData + "full.jsonl", "--short", voiceData + "short.jsonl"}, want: 1},
		{name: "proof_run_short", args: []string{"--contract", checkContract, "--run", checkData + "run", "--full", "baseline", "--short", "short"}, want: 0},
		{name: "proof_run_over_short", args: []string{"--contract", checkContract, "--run", checkData + "run", "--full", "baseline", "--short", "over_short"}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := crab(t, tt.stdin, append([]string{"check"}, tt.args...)...)
			if code != tt.want {
				t.Errorf("exit %d; want %d (stderr %q)", code, tt.want, errs)
			}
			got := out + "--- stderr\n" + errs + "--- exit " + strconv.Itoa(code) + "\n"
			path := filepath.Join(checkData+"golden", filepath.FromSlash(t.Name())+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestCheckGolden -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s:\ngot\n%s\nwant\n%s", path, got, want)
			}
		})
	}
}

// TestCheckBadInput: bad usage and bad input exit 2 with one message that
// names the file, line and field at fault.
func TestCheckBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noTask := write("notask.jsonl", `{"task_id":"a","output":{}}`+"\n"+`{"output":{}}`+"\n")
	badOutcome := write("outcome.jsonl", `{"task_id":"a","outcome":"done"}`+"\n")
	dup := write("dup.jsonl", `{"task_id":"a","output":{}}`+"\n"+`{"task_id":"a","output":{}}`+"\n")
	notJSON := write("notjson.jsonl", "task_id,output\n")
	empty := write("empty.jsonl", "\n")
	badContract := write("bad.schema.json", "{\n  \"type\": \"object\",\n  \"properties\": {\"a\": {\"type\": 5}}\n}")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no mode", args: []string{}, wantErr: "--lint FILE or --contract FILE"},
		{name: "lint with contract", args: []string{"--lint", checkContract, "--contract", checkContract}, wantErr: "no other option"},
		{name: "lint missing file", args: []string{"--lint", filepath.Join(dir, "none.json")}, wantErr: "none.json: cannot read"},
		{name: "contract missing file", args: []string{"--contract", filepath.Join(dir, "none.json"), checkData + "valid.jsonl"}, wantErr: "none.json: cannot read"},
		{name: "contract not a schema", args: []string{"--contract", badContract, checkData + "valid.jsonl"}, wantErr: `bad.schema.json:3: field "/properties/a/type"`},
		{name: "no outputs", args: []string{"--contract", checkContract}, wantErr: "needs OUTPUTS"},
		{name: "full without short", args: []string{"--contract", checkContract, "--full", checkData + "full.jsonl"}, wantErr: "both --full and --short"},
		{name: "proof with outputs", args: []string{"--contract", checkContract, "--full", "a", "--short", "b", checkData + "valid.jsonl"}, wantErr: "no OUTPUTS"},
		{name: "tasks without proof", args: []string{"--contract", checkContract, "--tasks", checkData + "tasks.jsonl", checkData + "valid.jsonl"}, wantErr: "--tasks is for"},
		{name: "unknown arm", args: []string{"--contract", checkContract, "--run", checkData + "run", "--full", "baseline", "--short", "nope"}, wantErr: `no arm "nope"`},
		{name: "answer without task_id", args: []string{"--contract", checkContract, noTask}, wantErr: `notask.jsonl:2: field "task_id"`},
		{name: "unknown outcome", args: []string{"--contract", checkContract, badOutcome}, wantErr: `outcome.jsonl:1: field "outcome"`},
		{name: "duplicate answer", args: []string{"--contract", checkContract, dup}, wantErr: `dup.jsonl:2: field "task_id"`},
		{name: "not JSONL", args: []string{"--contract", checkContract, notJSON}, wantErr: "notjson.jsonl:1"},
		{name: "no answers", args: []string{"--contract", checkContract, empty}, wantErr: "no answers"},
		{name: "missing outputs file", args: []string{"--contract", checkContract, filepath.Join(dir, "none.jsonl")}, wantErr: "none.jsonl: cannot read"},
		{name: "negative max-listed", args: []string{"--contract", checkContract, "--max-listed", "-1", checkData + "valid.jsonl"}, wantErr: "--max-listed"},
		{name: "decided field the contract lacks", args: []string{"--contract", voiceData + "voice.schema.json", "--decide", "intent.nope", "--full", voiceData + "full.jsonl", "--short", voiceData + "short.jsonl"},
			wantErr: `voice.schema.json: field "--decide": the contract has no field intent.nope (given "intent.nope")`},
		{name: "evidence not an array", args: []string{"--contract", voiceData + "voice.schema.json", "--evidence", "reply", "--full", voiceData + "full.jsonl", "--short", voiceData + "short.jsonl"},
			wantErr: `field "--evidence": reply is not an array`},
		{name: "experiment proof field the contract lacks", args: []string{"--contract", voiceData + "voice.schema.json", "--experiment", voiceData + "bad_proof.yaml", "--full", voiceData + "full.jsonl", "--short", voiceData + "short.jsonl"},
			wantErr: `bad_proof.yaml:14: field "proof.decide[1]": "slots.kind": the contract has no field slots.kind`},
		{name: "proof flags without a proof", args: []string{"--contract", checkContract, "--decide", "category", checkData + "valid.jsonl"}, wantErr: "are for the shortening proof"},
		{name: "several arms in one proof file", args: []string{"--contract", checkContract, "--full", checkData + "run/records.jsonl", "--short", checkData + "short_ok.jsonl"}, wantErr: "one arm per file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, errs := crab(t, "", append([]string{"check"}, tt.args...)...)
			if code != 2 || !strings.Contains(errs, tt.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit 2 and a message containing %q", code, errs, tt.wantErr)
			}
			if strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Errorf("stderr has several lines: %q; want one message", errs)
			}
		})
	}
}

// TestCheckEndToEnd runs a small experiment with the full, short and
// over_short output modes on the simulated models and checks what crab
// check and crab report say about its run directory.
func TestCheckEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exp := filepath.Join(dir, "shorten.yaml")
	if err := os.WriteFile(exp, []byte(`name: shorten
tasks: embedded:tasks.jsonl
contract: embedded:triage.schema.json
seed: 5
time_scale: 0
arrival: {pattern: burst}
concurrency: 32
timeout: 2s
models:
  # deterministic answers: the proof compares the two arms task by task
  - {name: large, kind: large, vary: {share: 0}, faults: {malformed: 0.02, error: 0.02}}
arms:
  - {name: baseline, model: large}
  - {name: short, model: large, mode: short, max_tokens: 160}
  - {name: over_short, model: large, mode: over_short, max_tokens: 160}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	if code, _, errs := crab(t, "", "run", "-q", "-e", exp, "-o", out); code != 0 {
		t.Fatalf("crab run: exit %d; want 0 (stderr %s)", code, errs)
	}

	tests := []struct {
		name     string
		args     []string
		want     int
		contains []string
	}{
		{name: "delivered answers all meet the contract", args: []string{"check", "--contract", checkContract, out}, want: 0,
			contains: []string{"0 invalid", "contract_fail ones were refused by the contract during the run"}},
		{name: "short passes the proof", args: []string{"check", "--contract", checkContract, "--run", out, "--full", "baseline", "--short", "short"}, want: 0,
			contains: []string{"verdict: PASS", "0 failed", "ticket text: embedded:tasks.jsonl (480 tasks, hash matches"}},
		{name: "over_short fails the proof naming the dropped fields", args: []string{"check", "--contract", checkContract, "--run", out, "--full", "baseline", "--short", "over_short"}, want: 1,
			contains: []string{"verdict: FAIL", "dropped fields: evidence (", "FAIL t0001: dropped evidence"}},
		{name: "the gate rejects over_short", args: []string{"report", "--fail-on-reject", out}, want: 1,
			contains: []string{"over_short: reject"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, errs := crab(t, "", tt.args...)
			if code != tt.want {
				t.Errorf("exit %d; want %d (stderr %s)", code, tt.want, errs)
			}
			for _, s := range tt.contains {
				if !strings.Contains(stdout, s) {
					t.Errorf("output lacks %q:\n%s", s, stdout)
				}
			}
		})
	}

	// Every record names the contract it was validated against.
	raw, err := os.ReadFile(filepath.Join(out, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		ContractHash string `json:"contract_hash"`
	}
	mraw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mraw, &m); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r struct {
			Contract string `json:"contract"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Contract == "" || r.Contract != m.ContractHash {
			t.Fatalf("record %d: contract %q; want the manifest's %q", i+1, r.Contract, m.ContractHash)
		}
	}
}

// TestReportContractChange: a candidate validated against another contract
// than the baseline's is rejected as different work, unless the change is
// allowed; either way the report warns.
func TestReportContractChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csv := filepath.Join(dir, "c.csv")
	body := "arm,task_id,latency_ms,outcome,pass,cost,contract\n"
	for _, arm := range []struct{ name, latency, contract string }{
		{"baseline", "100", "aaaaaaaaaaaaaaaa"}, {"cand", "5", "bbbbbbbbbbbbbbbb"}, {"same", "5", "aaaaaaaaaaaaaaaa"},
	} {
		for i := range 6 { // enough pairs for a verdict under the sample rule net (the outcomes are fixed)
			body += fmt.Sprintf("%s,t%d,%s%d,ok,true,1,%s\n", arm.name, i, arm.latency, i, arm.contract)
		}
	}
	if err := os.WriteFile(csv, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		args        []string
		want        int
		wantVerdict string
		wantText    []string
	}{
		{name: "rejected by default", args: []string{"report", "--rule", "net", "--fail-on-reject", csv}, want: 1, wantVerdict: "reject",
			wantText: []string{"ran different work: validated against contract bbbbbbbbbbbb vs aaaaaaaaaaaa for baseline", "cand: validated against contract", "same: accept"}},
		{name: "allowed", args: []string{"report", "--rule", "net", "--fail-on-reject", "--allow-contract-change", csv}, want: 0, wantVerdict: "accept",
			wantText: []string{"compared anyway because the contract change was allowed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := crab(t, "", tt.args...)
			if code != tt.want {
				t.Errorf("exit %d; want %d (stderr %s)", code, tt.want, errs)
			}
			if !strings.Contains(out, "cand: "+tt.wantVerdict) {
				t.Errorf("report lacks %q:\n%s", "cand: "+tt.wantVerdict, out)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(out, s) {
					t.Errorf("report lacks %q:\n%s", s, out)
				}
			}
		})
	}
}

// TestCheckProofVarying runs the shortening proof end to end on a run whose
// answers vary from call to call: without a noise floor it cannot tell
// (exit 1, naming a twin or repeats), with a twin or with repeats of the
// baseline it passes within the floor (its test at the run's error rate),
// and over_short still fails outright on the fields it drops.
func TestCheckProofVarying(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The first 160 tasks: enough for some to vary, few enough for -race.
	raw, err := os.ReadFile("fixtures/tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	if err := os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(strings.Join(lines[:160], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name, extra string) string {
		exp := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(exp, []byte(`name: `+name+`
tasks: tasks.jsonl
contract: embedded:triage.schema.json
seed: 7
time_scale: 0
arrival: {pattern: burst}
concurrency: 32
timeout: 2s
`+extra+`models:
  - {name: large, kind: large, vary: {share: 0.1, flip: 0.5}}
arms:
  - {name: baseline, model: large}
  - {name: short, model: large, mode: short, max_tokens: 160}
  - {name: over_short, model: large, mode: over_short, max_tokens: 160}
proof:
  decide: [category, needs_human_review]
  superset: [risk_flags]
  evidence: evidence
`), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name)
		if code, _, errs := crab(t, "", "run", "-q", "-e", exp, "-o", out); code != 0 {
			t.Fatalf("crab run %s: exit %d; want 0 (stderr %s)", name, code, errs)
		}
		return out
	}
	plain, twin, repeats := run("plain", ""), run("twin", "control: twin\ngate: {alpha: 0.01}\n"), run("repeats", "repeats: 2\n")
	tests := []struct {
		name     string
		run      string
		short    string
		want     int
		contains []string
	}{
		{"no floor: cannot tell", plain, "short", 1, []string{
			"answers vary from call to call: model large varies (share 0.1, flip 0.5)\n",
			"noise floor: not measured (no twin of baseline, no repeats of it)",
			"verdict: CANNOT TELL: ", "\nDIFFERS t"}},
		{"twin: within the floor", twin, "short", 0, []string{
			"noise floor (twin, an identical copy of baseline): ", "test: exact one-sided sign test over the ",
			"the proof fails when p < 0.01, so a shortening that changes nothing fails in at most 1% of runs",
			"\nDIFFERS WITHIN NOISE t", "verdict: PASS: "}},
		{"repeats: within the floor", repeats, "short", 0, []string{
			"noise floor (repeats of baseline: repeat 1 against repeat 0", "verdict: PASS: "}},
		{"twin: a dropped field fails outright", twin, "over_short", 1, []string{
			"FAIL t0001: dropped evidence", "verdict: FAIL: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, errs := crab(t, "", "check", "--contract", checkContract, "--run", tt.run, "--full", "baseline", "--short", tt.short, "--max-listed", "3")
			if code != tt.want {
				t.Errorf("exit %d; want %d (stderr %s)\n%s", code, tt.want, errs, stdout)
			}
			for _, s := range tt.contains {
				if !strings.Contains(stdout, s) {
					t.Errorf("output lacks %q:\n%s", s, stdout)
				}
			}
		})
	}
	// JSON carries the floor.
	code, stdout, _ := crab(t, "", "check", "--format", "json", "--contract", checkContract, "--run", twin, "--full", "baseline", "--short", "short")
	var doc struct {
		Proof struct {
			OK    bool `json:"ok"`
			Noise *struct {
				Source  string   `json:"source"`
				Units   int      `json:"units"`
				P       *float64 `json:"p"`
				Verdict string   `json:"verdict"`
			} `json:"noise"`
		} `json:"proof"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("exit %d: %v\n%s", code, err, stdout)
	}
	if n := doc.Proof.Noise; code != 0 || !doc.Proof.OK || n == nil || n.Source != "twin" || n.Units == 0 || n.P == nil || n.Verdict != "within_noise" {
		t.Errorf("exit %d, proof ok %v, noise %+v; want a pass within a twin's floor", code, doc.Proof.OK, n)
	}
}
