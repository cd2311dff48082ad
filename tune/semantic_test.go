package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/fixtures"
)

// semanticTuneDir writes an experiment with one semantic-cache arm and a
// task set of n invoices asked three ways: a ticket, a paraphrase (same
// expected answer) and a negation (another one). edit, when not nil, may
// rewrite a task's text by id, and label its expected category ("": the
// default).
func semanticTuneDir(t *testing.T, n int, edit func(id, text string) string, label func(id string) string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	add := func(id, text, cat, group string) {
		if edit != nil {
			text = edit(id, text)
		}
		if label != nil && label(id) != "" {
			cat = label(id)
		}
		line, _ := json.Marshal(map[string]any{"id": id, "text": text, "tenant": "acme", "user": "u", "permission": "agent",
			"lang": "en", "doc_version": "v1", "group": group, "expected": map[string]string{"category": cat}})
		b.Write(line)
		b.WriteByte('\n')
	}
	for i := range n {
		g := []string{"short", "tool"}[i%2]
		add(fmt.Sprintf("p%02d", i), fmt.Sprintf("My invoice %d was charged twice this month, please refund", 100+i), "billing", g)
		add(fmt.Sprintf("q%02d", i), fmt.Sprintf("Hello! My invoice %d was charged twice this month, please refund.", 100+i), "billing", g)
		add(fmt.Sprintf("r%02d", i), fmt.Sprintf("My invoice %d was not charged twice this month, please refund", 100+i), "account", g)
	}
	os.WriteFile(filepath.Join(dir, "tasks.jsonl"), []byte(b.String()), 0o644)
	exp := filepath.Join(dir, "exp.yaml")
	os.WriteFile(exp, []byte(`name: sem
tasks: tasks.jsonl
contract: embedded:triage.schema.json
seed: 7
time_scale: 0
arrival: {pattern: burst}
models:
  - {name: large, kind: large}
arms:
  - {name: baseline, model: large}
  - {name: sem, model: large, cache: {kind: semantic, threshold: 0.5}}
`), 0o644)
	return exp
}

func tuneSemanticArm(t *testing.T, exp string) (*Tuner, *SemanticResult) {
	t.Helper()
	s, err := loadTuner(exp, fixtures.FS)
	if err != nil {
		t.Fatal(err)
	}
	arms := s.SemanticArms()
	if len(arms) != 1 {
		t.Fatalf("%d semantic arms; want 1", len(arms))
	}
	res, err := s.Semantic(context.Background(), arms[0], SemanticConfig{Holdout: 0.3, Seed: 7, Pairs: 300})
	if err != nil {
		t.Fatal(err)
	}
	return s, res
}

// The threshold is chosen on the calibration tasks alone: relabelling
// every holdout task changes the holdout figures and not the threshold;
// a pair's questions (a ticket, its paraphrase and its negation) stay on
// one side of the split.
func TestSemanticCalibrationOnly(t *testing.T) {
	t.Parallel()
	_, first := tuneSemanticArm(t, semanticTuneDir(t, 20, nil, nil))
	if first.ThresholdChoice == nil || first.Threshold <= 0.5 || first.Threshold > 1 || first.Held == 0 || first.Calibrated+first.Held != 60 {
		t.Fatalf("%+v; want a threshold in (0.5, 1] and 60 tasks split", first)
	}
	if first.CalibrationPairs[SourceTaskSet] == 0 || first.Calibration.HardNegatives == 0 || first.HoldoutPairs[SourceGenerated] == 0 {
		t.Errorf("pairs %v / %v, calibration %+v; want own pairs with hard negatives and generated holdout pairs", first.CalibrationPairs, first.HoldoutPairs, first.Calibration)
	}
	calib := map[string]bool{}
	for _, id := range first.CalibrationTasks() {
		calib[id] = true
	}
	for i := range 20 {
		p, q, r := calib[fmt.Sprintf("p%02d", i)], calib[fmt.Sprintf("q%02d", i)], calib[fmt.Sprintf("r%02d", i)]
		if p != q || p != r {
			t.Errorf("question %d: calibration p %v, q %v, r %v; want the three on one side", i, p, q, r)
		}
	}
	_, second := tuneSemanticArm(t, semanticTuneDir(t, 20, nil, func(id string) string {
		if !calib[id] && id[0] == 'q' {
			return "account" // the paraphrase now expects another answer
		}
		return ""
	}))
	if second.ThresholdChoice == nil || second.Threshold != first.Threshold || second.Calibration.Hits != first.Calibration.Hits || second.Calibration.FalseHits != first.Calibration.FalseHits {
		t.Fatalf("after relabelling the holdout: %+v; want threshold %v and calibration %+v", second.ThresholdChoice, first.Threshold, first.Calibration)
	}
	if second.Holdout.FalseHits == first.Holdout.FalseHits {
		t.Errorf("holdout %+v unchanged by relabelling every holdout paraphrase; want false hits", second.Holdout)
	}
}

// When no threshold keeps the task set's own hard negatives out (a word
// swap, same words, another answer), tune says so, returns no threshold,
// and the tuned experiment leaves the semantic arm out.
func TestSemanticNoThreshold(t *testing.T) {
	t.Parallel()
	swap := func(id, text string) string {
		if id[0] == 'r' {
			return strings.Replace(strings.Replace(text, "was not charged", "was charged", 1), "twice this month", "this month twice", 1)
		}
		return text
	}
	s, res := tuneSemanticArm(t, semanticTuneDir(t, 10, swap, nil))
	if res.ThresholdChoice != nil || res.NoThreshold == "" {
		t.Fatalf("%+v; want no threshold", res)
	}
	var b strings.Builder
	res.WriteText(&b)
	if !strings.Contains(b.String(), "no threshold") || !strings.Contains(b.String(), "recommendation: no semantic arm") {
		t.Errorf("text %q; want it to say no threshold and recommend no semantic arm", b.String())
	}
	out, err := s.TunedExperiment(Target{}, nil, 7, "", []*SemanticResult{res}, "")
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "tuned.yaml")
	os.WriteFile(moved, out, 0o644)
	s2, err := loadTuner(moved, fixtures.FS)
	if err != nil {
		t.Fatalf("tuned experiment does not load: %v\n%s", err, out)
	}
	if len(s2.SemanticArms()) != 0 || len(s2.Exp.Arms) != 1 {
		t.Errorf("tuned experiment arms %+v; want the semantic arm left out", s2.Exp.Arms)
	}
}

func TestTunedExperimentSemantic(t *testing.T) {
	t.Parallel()
	s, res := tuneSemanticArm(t, semanticTuneDir(t, 10, nil, nil))
	if res.ThresholdChoice == nil {
		t.Fatalf("%+v; want a threshold", res)
	}
	out, err := s.TunedExperiment(Target{}, nil, 7, "", []*SemanticResult{res}, "")
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "tuned.yaml")
	os.WriteFile(moved, out, 0o644)
	s2, err := loadTuner(moved, fixtures.FS)
	if err != nil {
		t.Fatalf("tuned experiment does not load: %v\n%s", err, out)
	}
	arms := s2.SemanticArms()
	if len(arms) != 1 || arms[0].Cache.Threshold != res.Threshold || !strings.Contains(string(out), "similarity threshold chosen by crab tune") {
		t.Errorf("tuned experiment's semantic arms %+v; want threshold %v and a note:\n%s", arms, res.Threshold, out)
	}
}
