package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/fixtures"
	routertune "github.com/crab-testbed/crab/router/tune"
)

// semanticTuneDir writes an experiment with one semantic-cache arm and a
// task set of n invoices asked three ways: a ticket, a paraphrase (same
// expected answer) and a negation (another one). edit, when not nil, may
// rewrite a task's text by id.
func semanticTuneDir(t *testing.T, n int, edit func(id, text string) string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	add := func(id, text, cat, group string) {
		if edit != nil {
			text = edit(id, text)
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
		add(fmt.Sprintf("r%02d", i), fmt.Sprintf("My invoice %d was not charged twice this month, please check my account", 100+i), "account", g)
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

func tuneSemanticArm(t *testing.T, exp string) (*Setup, *SemanticTune) {
	t.Helper()
	s, err := LoadSetup(exp, fixtures.FS)
	if err != nil {
		t.Fatal(err)
	}
	arms := s.SemanticArms()
	if len(arms) != 1 {
		t.Fatalf("%d semantic arms; want 1", len(arms))
	}
	res, err := s.TuneSemantic(context.Background(), arms[0], SemanticTuneConfig{Holdout: 0.3, Seed: 7, Pairs: 300})
	if err != nil {
		t.Fatal(err)
	}
	return s, res
}

// The threshold is chosen on the calibration tasks alone: rewriting every
// holdout task changes the holdout figures and not the threshold.
func TestTuneSemanticCalibrationOnly(t *testing.T) {
	t.Parallel()
	s, first := tuneSemanticArm(t, semanticTuneDir(t, 20, nil))
	if first.Threshold <= 0.5 || first.Threshold > 1 || first.Held == 0 || first.Calibrated+first.Held != 60 {
		t.Fatalf("threshold %v on %d + %d tasks; want a threshold in (0.5, 1] and 60 tasks split", first.Threshold, first.Calibrated, first.Held)
	}
	if first.CalibrationPairs[SourceTaskSet] == 0 || first.HoldoutPairs[SourceGenerated] != 300 {
		t.Errorf("pairs %v / %v; want task-set pairs and 300 generated holdout pairs", first.CalibrationPairs, first.HoldoutPairs)
	}
	samples := make([]routertune.Sample, len(s.Tasks))
	for i, tk := range s.Tasks {
		samples[i] = routertune.Sample{ID: tk.ID, Group: tk.Group, Key: routertune.QuestionKey(tk.Text)}
	}
	_, hold, err := routertune.Split(samples, 0.3, 7)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, i := range hold {
		held[s.Tasks[i].ID] = true
	}
	_, second := tuneSemanticArm(t, semanticTuneDir(t, 20, func(id, text string) string {
		if held[id] {
			return "Our shipment " + strings.ToUpper(text[:1]) + text[1:] + " arrived broken, the box was crushed"
		}
		return text
	}))
	if second.Threshold != first.Threshold || second.Calibration != first.Calibration {
		t.Errorf("threshold %v (calibration %+v) after rewriting the holdout; want %v (%+v)", second.Threshold, second.Calibration, first.Threshold, first.Calibration)
	}
	if second.Holdout == first.Holdout {
		t.Errorf("holdout %+v unchanged by rewriting every holdout task; want other figures", second.Holdout)
	}
}

func TestTunedExperimentSemantic(t *testing.T) {
	t.Parallel()
	s, res := tuneSemanticArm(t, semanticTuneDir(t, 10, nil))
	out, err := s.TunedExperiment(TuneTarget{}, nil, 7, "", []*SemanticTune{res}, "")
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "tuned.yaml")
	os.WriteFile(moved, out, 0o644)
	s2, err := LoadSetup(moved, fixtures.FS)
	if err != nil {
		t.Fatalf("tuned experiment does not load: %v\n%s", err, out)
	}
	arms := s2.SemanticArms()
	if len(arms) != 1 || arms[0].Cache.Threshold != res.Threshold || !strings.Contains(string(out), "similarity threshold chosen by crab tune") {
		t.Errorf("tuned experiment's semantic arms %+v; want threshold %v and a note:\n%s", arms, res.Threshold, out)
	}
}
