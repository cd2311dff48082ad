package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Usage faults are bad input: exit 2, one line on stderr naming the fault,
// nothing on stdout (no help page dumped).
func TestUsageExitCodes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "out.txt")
	if err := os.WriteFile(file, []byte("not a run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"rnu"}, `unknown command "rnu". Did you mean "run"?`},
		{"missing required flag", []string{"serve"}, "serve needs --config"},
		{"missing experiment file", []string{"run", "-e", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml: cannot read: "},
		{"missing records", []string{"report", filepath.Join(t.TempDir(), "none.jsonl")}, "none.jsonl"},
		{"run onto a file", []string{"run", "-q", "-o", file}, "out.txt is a file, not a directory"},
		{"run under a file", []string{"run", "-q", "-o", filepath.Join(file, "run")}, "a parent of it is a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := crab(t, "", tc.args...)
			if code != exitBadInput {
				t.Errorf("exit %d; want %d (stderr %q)", code, exitBadInput, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q; want nothing", stdout)
			}
			if n := strings.Count(strings.TrimRight(stderr, "\n"), "\n"); n != 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q; want one line containing %q", stderr, tc.want)
			}
		})
	}
}

// A directory that holds a run is refused before anything is written, and
// replaced whole with --overwrite.
func TestRunRefusesRunDirectory(t *testing.T) {
	t.Parallel()
	dir, exp := quickDir(t)
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

// A run killed mid-write leaves a torn last line and a manifest that still
// says running: crab report uses every complete record, calls every
// candidate incomplete and says why, and exits 0 (never 2).
func TestReportOnKilledRun(t *testing.T) {
	skipShort(t)
	t.Parallel()
	dir, exp := quickDir(t)
	out := filepath.Join(dir, "run")
	if code, _, stderr := crab(t, "", "run", "-q", "-e", exp, "-o", out); code != 0 && code != exitCheck {
		t.Fatalf("run: exit %d, stderr %q", code, stderr)
	}
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
