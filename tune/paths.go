package tune

import (
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/router"
)

// resolveTunedPaths rewrites every file reference of an experiment's YAML
// that TunedExperiment does not set itself — the grading command's program
// and script arguments, the judge's contract, every arm's scorer file and
// threshold_from — to an absolute path, so that tuned.yaml, written into
// another folder, names the same files. base is the experiment's folder
// ("" for the embedded default, whose references stay embedded).
func resolveTunedPaths(doc *yaml.Node, base string) {
	if base == "" {
		return
	}
	abs := func(n *yaml.Node) {
		if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" || filepath.IsAbs(n.Value) || strings.HasPrefix(n.Value, eval.EmbeddedPrefix) {
			return
		}
		if p, err := filepath.Abs(filepath.Join(base, n.Value)); err == nil {
			n.Value, n.Tag, n.Style = p, "!!str", 0
		}
	}
	if g := mapGet(doc, "grade"); g != nil {
		if run := mapGet(mapGet(g, "command"), "run"); run != nil && run.Kind == yaml.SequenceNode {
			// The same rule as grade.NewCommand: a program with a slash is
			// a path, a bare name stays for $PATH; an argument naming a
			// file beside the experiment is that file.
			for i, a := range run.Content {
				switch {
				case a.Kind != yaml.ScalarNode:
				case i == 0 && strings.ContainsRune(a.Value, '/'):
					abs(a)
				case i > 0 && a.Value != "" && !strings.HasPrefix(a.Value, "-") && !filepath.IsAbs(a.Value):
					if st, err := os.Stat(filepath.Join(base, a.Value)); err == nil && st.Mode().IsRegular() {
						abs(a)
					}
				}
			}
		}
		abs(mapGet(mapGet(g, "judge"), "contract"))
	}
	if arms := mapGet(doc, "arms"); arms != nil && arms.Kind == yaml.SequenceNode {
		for _, a := range arms.Content {
			r := mapGet(a, "router")
			if sc := mapGet(r, "scorer"); sc != nil && router.IsScorerFile(sc.Value) {
				abs(sc)
			}
			abs(mapGet(r, "threshold_from"))
		}
	}
}
