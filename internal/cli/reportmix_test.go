package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
