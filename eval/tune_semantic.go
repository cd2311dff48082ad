package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/semantic"
	routertune "github.com/crab-testbed/crab/router/tune"
)

// Pair kinds of the task set's own pairs (beside semantic.GeneratePairs'
// kinds): two questions of one split, the second the nearest to the first
// in meaning, labelled by whether their expected answers agree.
const PairTaskSet = "task_set"

// SemanticTuneConfig configures TuneSemantic.
type SemanticTuneConfig struct {
	// Holdout is the fraction of every group kept out of calibration and
	// Seed the split's seed: the same split routertune.Split gives the
	// router (repeated questions on one side).
	Holdout float64
	Seed    int64
	// MaxFalseHitRate is the share of the calibration hard negatives the
	// chosen threshold may serve (0: none).
	MaxFalseHitRate float64
	// Pairs is the number of pairs semantic.GeneratePairs draws from each
	// side's texts (default 1000).
	Pairs int
}

// SemanticTune is the threshold chosen for one semantic-cache arm: chosen
// on the calibration side's pairs only, measured once on the holdout's.
type SemanticTune struct {
	Arm             string  `json:"arm"`
	Embedder        string  `json:"embedder"`
	Calibrated      int     `json:"calibration_tasks"`
	Held            int     `json:"holdout_tasks"`
	MaxFalseHitRate float64 `json:"max_false_hit_rate"`
	*semantic.TuneResult
	// CalibrationPairs and HoldoutPairs count each side's pairs by source
	// (generated, task_set); BySource is the holdout outcome by source.
	CalibrationPairs map[string]int              `json:"calibration_pairs"`
	HoldoutPairs     map[string]int              `json:"holdout_pairs"`
	BySource         map[string]semantic.Outcome `json:"holdout_by_source"`
}

// Pair sources of a SemanticTune.
const (
	SourceGenerated = "generated"
	SourceTaskSet   = "task_set"
)

// SemanticArms are the experiment's arms with a semantic cache, in order.
func (s *Setup) SemanticArms() []ArmSpec {
	var out []ArmSpec
	for _, a := range s.Exp.Arms {
		if a.Cache != nil && a.Cache.Kind == cache.KindSemantic {
			out = append(out, a)
		}
	}
	return out
}

// TuneSemantic chooses the similarity threshold of a semantic-cache arm
// with its own embedder. The task set is split into calibration and
// holdout (routertune.Split, stratified by group, repeats on one side);
// on each side the labelled pairs are
//
//   - generated pairs (semantic.GeneratePairs over the side's texts):
//     paraphrases (reworded, a typo, a greeting) and hard negatives (a
//     negation, another number, identifier or product);
//   - the task set's own pairs: each distinct question with an expected
//     answer and the nearest other question of the same side, the pair a
//     cache would serve; the same question when their expected answers
//     agree, a hard negative when they differ (the answer one would be
//     served is not the one it should get).
//
// semantic.Tune chooses the threshold on the calibration pairs only and
// measures it once on the holdout pairs.
func (s *Setup) TuneSemantic(ctx context.Context, arm ArmSpec, cfg SemanticTuneConfig) (*SemanticTune, error) {
	cs := arm.Cache
	if cs == nil || cs.Kind != cache.KindSemantic {
		return nil, &InputError{File: s.Exp.File, Field: "arms.cache.kind", Msg: fmt.Sprintf("arm %s has no semantic cache", arm.Name)}
	}
	if cfg.Pairs == 0 {
		cfg.Pairs = 1000
	}
	emb, err := semantic.OpenEmbedder(cache.EmbedderConfig{Kind: cs.Embedder, BaseURL: cs.EmbedBaseURL, Model: cs.EmbedModel, APIKey: getenv(cs.EmbedAPIKeyEnv)})
	if err != nil {
		return nil, &InputError{File: s.Exp.File, Field: "arms.cache.embedder", Msg: fmt.Sprintf("arm %s: %v", arm.Name, err)}
	}
	samples := make([]routertune.Sample, len(s.Tasks))
	for i := range s.Tasks {
		t := &s.Tasks[i]
		samples[i] = routertune.Sample{ID: t.ID, Group: t.Group, Key: routertune.QuestionKey(t.Text)}
	}
	calibIdx, holdIdx, err := routertune.Split(samples, cfg.Holdout, cfg.Seed)
	if err != nil {
		return nil, err
	}
	side := func(idx []int, seed int64, ref string) ([]semantic.Scored, map[string]int, error) {
		tasks := make([]*Task, len(idx))
		for i, j := range idx {
			tasks[i] = &s.Tasks[j]
		}
		gen, err := semantic.GeneratePairs(distinctTexts(tasks), cfg.Pairs, seed, ref)
		if err != nil {
			return nil, nil, err
		}
		scored, err := semantic.Score(ctx, emb, gen)
		if err != nil {
			return nil, nil, err
		}
		for i := range scored {
			scored[i].Kind = SourceGenerated + ":" + scored[i].Kind
		}
		own, err := taskSetPairs(ctx, emb, tasks)
		if err != nil {
			return nil, nil, err
		}
		counts := map[string]int{SourceGenerated: len(scored), SourceTaskSet: len(own)}
		return append(scored, own...), counts, nil
	}
	calib, calibN, err := side(calibIdx, cfg.Seed+1, "cal")
	if err != nil {
		return nil, err
	}
	hold, holdN, err := side(holdIdx, cfg.Seed+2, "hold")
	if err != nil {
		return nil, err
	}
	res, err := semantic.Tune(calib, hold, semantic.TuneOptions{MaxFalseHitRate: cfg.MaxFalseHitRate})
	if err != nil {
		return nil, err
	}
	by := map[string]semantic.Outcome{}
	for _, src := range []string{SourceGenerated, SourceTaskSet} {
		var sub []semantic.Scored
		for _, p := range hold {
			if pairSource(p.Kind) == src {
				sub = append(sub, p)
			}
		}
		by[src] = semantic.Evaluate(sub, res.Threshold)
	}
	name := cs.Embedder
	if name == "" {
		name = semantic.EmbedBuiltinGuarded
	}
	return &SemanticTune{Arm: arm.Name, Embedder: name, Calibrated: len(calibIdx), Held: len(holdIdx), MaxFalseHitRate: cfg.MaxFalseHitRate,
		TuneResult: res, CalibrationPairs: calibN, HoldoutPairs: holdN, BySource: by}, nil
}

func getenv(name string) string {
	if name == "" {
		return ""
	}
	return os.Getenv(name)
}

func pairSource(kind string) string {
	if kind == PairTaskSet {
		return SourceTaskSet
	}
	return SourceGenerated
}

// distinctTexts are the tasks' texts, each once, in task order.
func distinctTexts(tasks []*Task) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tasks {
		k := cache.NormalizeText(t.Text)
		if k != "" && !seen[k] {
			seen[k] = true
			out = append(out, t.Text)
		}
	}
	return out
}

// taskSetPairs pairs each distinct question of tasks that has an expected
// answer with the nearest other question (another text) by emb: labelled
// the same question when their expected answers agree. An unordered pair
// is counted once.
func taskSetPairs(ctx context.Context, emb semantic.Embedder, tasks []*Task) ([]semantic.Scored, error) {
	type unit struct{ text, exp string }
	seen := map[[2]string]bool{}
	var units []unit
	for _, t := range tasks {
		if len(t.Expected) == 0 {
			continue
		}
		raw, err := json.Marshal(t.Expected) // map keys sorted: one encoding per answer
		if err != nil {
			return nil, err
		}
		k := [2]string{cache.NormalizeText(t.Text), string(raw)}
		if k[0] == "" || seen[k] {
			continue
		}
		seen[k] = true
		units = append(units, unit{text: k[0], exp: k[1]})
	}
	if len(units) < 2 {
		return nil, nil
	}
	texts := make([]string, len(units))
	for i, u := range units {
		texts[i] = u.text
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("eval: %d vectors for %d texts", len(vecs), len(texts))
	}
	done := map[[2]int]bool{}
	var out []semantic.Scored
	for i := range units {
		best, bestSim := -1, float32(-2)
		for j := range units {
			if j == i || units[j].text == units[i].text || len(vecs[j]) != len(vecs[i]) {
				continue
			}
			if sim := dot32(vecs[i], vecs[j]); sim > bestSim {
				best, bestSim = j, sim
			}
		}
		if best < 0 {
			continue
		}
		key := [2]int{min(i, best), max(i, best)}
		if done[key] {
			continue
		}
		done[key] = true
		out = append(out, semantic.Scored{Kind: PairTaskSet, Same: units[i].exp == units[best].exp, Similarity: float64(bestSim)})
	}
	return out, nil
}

func dot32(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// WriteText writes the semantic tuning result: the threshold, the pairs it
// was chosen on, and its one report on the holdout pairs.
func (r *SemanticTune) WriteText(w io.Writer) error {
	allowed := "no false hit allowed"
	if r.MaxFalseHitRate > 0 {
		allowed = fmt.Sprintf("false-hit rate at most %s", pct1(r.MaxFalseHitRate))
	}
	fmt.Fprintf(w, "semantic cache arm %s (embedder %s): threshold %.4f, chosen on calibration (%d tasks: %d generated pairs, %d task-set pairs; %s)\n",
		r.Arm, r.Embedder, r.Threshold, r.Calibrated, r.CalibrationPairs[SourceGenerated], r.CalibrationPairs[SourceTaskSet], allowed)
	fmt.Fprintf(w, "holdout (%d tasks), reported once:\n", r.Held)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pairs\tparaphrase_hits\tfalse_hits\tfalse_hit_upper_95")
	row := func(name string, o semantic.Outcome) {
		fmt.Fprintf(tw, "%s\t%d/%d %s\t%d/%d\t%s\n", name, o.Hits, o.Paraphrases, pct1(o.HitRate), o.FalseHits, o.HardNegatives, pct3(o.FalseHitUpper95))
	}
	row("generated", r.BySource[SourceGenerated])
	row("task set", r.BySource[SourceTaskSet])
	row("all", r.Holdout)
	if err := tw.Flush(); err != nil {
		return err
	}
	c := r.Calibration
	_, err := fmt.Fprintf(w, "calibration (optimistic: the threshold was chosen on it): paraphrase hits %d/%d %s, false hits %d/%d\n"+
		"generated pairs: rewording, typo, greeting (should hit); negation, another number, identifier or product (must not hit). "+
		"task-set pairs: each question and its nearest other one, the same when their expected answers agree. "+
		"false_hit_upper_95: one-sided 95%% upper bound per hard negative (Clopper–Pearson)\n",
		c.Hits, c.Paraphrases, pct1(c.HitRate), c.FalseHits, c.HardNegatives)
	return err
}

func pct1(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// pct3 writes a bound with three significant digits.
func pct3(v float64) string {
	s := fmt.Sprintf("%.3g", 100*v)
	if !strings.Contains(s, "e") {
		return s + "%"
	}
	return fmt.Sprintf("%.4f%%", 100*v)
}
