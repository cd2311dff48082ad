package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestResolveTunedPaths: every file tuned.yaml names is absolute, by the
// same rule the command grader resolves its program and arguments with.
func TestResolveTunedPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "grade.py"), []byte("print()\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `grade:
  command: {run: [./bin/g, grade.py, --strict, word, /abs/x]}
  judge: {model: m, contract: judge.schema.json}
arms:
  - {name: a, router: {scorer: scorers/s.json, threshold_from: out/tune.json}}
  - {name: b, router: {scorer: feature}}
`
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(src), &root); err != nil {
		t.Fatal(err)
	}
	resolveTunedPaths(root.Content[0], dir)
	out, err := yaml.Marshal(&root)
	if err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string { a, _ := filepath.Abs(filepath.Join(dir, p)); return a }
	for _, want := range []string{abs("bin/g"), abs("grade.py"), "--strict", " word", "/abs/x", abs("judge.schema.json"), abs("scorers/s.json"), abs("out/tune.json"), "scorer: feature"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("resolved YAML lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), abs("word")) {
		t.Errorf("an argument naming no file was resolved:\n%s", out)
	}
}
