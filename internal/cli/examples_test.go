package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
)

// importLine is the `crab tasks import` (or `crab recording import`)
// command a workload example's experiment file documents in its comments,
// as arguments.
func importLine(t *testing.T, experiment string) []string {
	t.Helper()
	raw, err := os.ReadFile(experiment)
	if err != nil {
		t.Fatal(err)
	}
	var cmd strings.Builder
	in := false
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(l, "#"))
		if strings.HasPrefix(l, "crab tasks import") || strings.HasPrefix(l, "crab recording import") {
			in = true
		}
		if !in {
			continue
		}
		cmd.WriteString(strings.TrimSuffix(l, "\\") + " ")
		if !strings.HasSuffix(l, "\\") {
			break
		}
	}
	if !in {
		t.Fatalf("%s documents no crab tasks import or crab recording import line", experiment)
	}
	return strings.Fields(cmd.String())[1:]
}

// The workload example: its documented import line turns the CSV export
// into exactly its task file, and the experiment runs end to end with its
// grade section stated in the report.
func TestExampleWorkload(t *testing.T) {
	t.Parallel()
	exp := filepath.Join("examples", "workload", "experiment.yaml")
	args := importLine(t, exp)
	dir := t.TempDir()
	for i, a := range args {
		if a == "-o" {
			args[i+1] = filepath.Join(dir, "tasks.jsonl")
		}
	}
	code, _, errs := crab(t, "", args...)
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "tasks.jsonl"))
	want, _ := os.ReadFile(filepath.Join("examples", "workload", "tasks.jsonl"))
	if string(got) != string(want) {
		t.Errorf("the documented import line does not reproduce examples/workload/tasks.jsonl:\n%s", got)
	}
	setup, err := eval.LoadSetup(exp, fixtures.FS)
	if err != nil {
		t.Fatal(err)
	}
	langs := map[string]bool{}
	for _, tk := range setup.Tasks {
		langs[tk.Lang] = true
		if tk.ID == "" || tk.User == "" || tk.Group == "" || tk.Difficulty == "" || len(tk.Expected) == 0 {
			t.Errorf("task %s lacks a field; the example shows every one", tk.ID)
		}
	}
	if len(langs) != 7 {
		t.Errorf("%d languages; the example has 7", len(langs))
	}
	out := filepath.Join(dir, "run")
	code, stdout, errs := crab(t, "", "run", "-e", exp, "-o", out, "-q")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	if !regexp.MustCompile(`(?m)^  - pass rule: .*/amount_claimed within tolerance of the expected value \(± 1\)`).MatchString(stdout) {
		t.Errorf("the report does not state the pass rule:\n%s", stdout)
	}
	set, err := records.ReadSet([]string{out}, nil)
	if err != nil || set.Len() != 3*8*2 {
		t.Errorf("records: %v; want 48", err)
		if err == nil {
			t.Errorf("%d records; want 48", set.Len())
		}
	}
}

// The Ollama example loads and validates without a server (nothing is
// called until a run starts).
func TestExampleOllama(t *testing.T) {
	t.Parallel()
	setup, err := eval.LoadSetup(filepath.Join("examples", "ollama", "experiment.yaml"), fixtures.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range setup.Exp.Models {
		if m.Backend != "openai" || !strings.HasPrefix(m.BaseURL, "http://127.0.0.1:") {
			t.Errorf("model %s: backend %q at %q; want a local OpenAI-compatible server", m.Name, m.Backend, m.BaseURL)
		}
	}
	if len(setup.Tasks) != 8 {
		t.Errorf("%d tasks; want the 8 of the workload example", len(setup.Tasks))
	}
}
