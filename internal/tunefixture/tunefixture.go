// Package tunefixture holds what the tests of the packages that run, tune
// or cache share: the first tasks of the embedded workload, a small tuning
// experiment on them, and the embedded scenario texts.
package tunefixture

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/fixtures"
)

// Dir writes the first n embedded tasks and an experiment on them
// (time-scale 0, the default faults) into a temporary directory and returns
// the experiment's path.
func Dir(t testing.TB, n int, extraArms string) string {
	t.Helper()
	dir := t.TempDir()
	WriteTasks(t, filepath.Join(dir, "tasks.jsonl"), n)
	exp := `name: tune
tasks: tasks.jsonl
contract: embedded:triage.schema.json
seed: 42
time_scale: 0
arrival: {pattern: burst}
concurrency: 16
timeout: 500ms
retry: {max_attempts: 2}
# deterministic answers: the tests compare an outcome table with a run task by task
models:
  - {name: small, kind: small, price_in_per_mtok: 0.15, price_out_per_mtok: 0.6, vary: {share: 0}, faults: {error: 0.01, malformed: 0.01}}
  - {name: large, kind: large, price_in_per_mtok: 2.5, price_out_per_mtok: 10, vary: {share: 0}, faults: {error: 0.01, malformed: 0.005}}
arms:
  - {name: baseline, model: large}
  - {name: small_only, model: small}
  - {name: router, router: {threshold: 0.5, small: small, large: large}}
` + extraArms
	path := filepath.Join(dir, "exp.yaml")
	if err := os.WriteFile(path, []byte(exp), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ScenarioTexts are the texts of the embedded cache-audit scenarios, the
// questions the semantic cache's pairs and thresholds are tested on.
func ScenarioTexts(t testing.TB) []string {
	t.Helper()
	raw, err := fixtures.FS.ReadFile("scenarios.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if i := strings.Index(l, `"text":"`); i >= 0 {
			rest := l[i+8:]
			out = append(out, rest[:strings.Index(rest, `"`)])
		}
	}
	return out
}

// WriteTasks writes the first n tasks of the embedded workload to path.
func WriteTasks(t testing.TB, path string, n int) {
	t.Helper()
	raw, err := fixtures.FS.ReadFile("tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for i := 0; i < n && sc.Scan(); i++ {
		b.Write(sc.Bytes())
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
