package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/crab-testbed/crab/cache"
	"github.com/crab-testbed/crab/cache/semantic"
	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/stack"
)

// PairTaskSet is the kind of the task set's own pairs (beside
// semantic.GeneratePairs' kinds): two questions of one side of the split,
// the second the nearest to the first of the same expected answer (a
// paraphrase) or of another (a hard negative).
const PairTaskSet = "task_set"

// SemanticConfig configures Semantic.
type SemanticConfig struct {
	// Holdout is the fraction of every group kept out of calibration and
	// Seed the split's seed (Split, repeated questions on one
	// side, and a question with its nearest question of another answer).
	Holdout float64
	Seed    int64
	// MaxFalseHitRate is the share of the calibration hard negatives the
	// chosen threshold may serve (0: none).
	MaxFalseHitRate float64
	// Pairs is the number of pairs semantic.GeneratePairs draws from the
	// holdout's texts, reported apart (default 1000).
	Pairs int
}

// SemanticResult is the threshold chosen for one semantic-cache arm: chosen
// on the calibration side's own labelled pairs only, measured once on the
// holdout's. Its headline (ThresholdChoice's calibration and holdout figures)
// is the task set's own pairs; generated pairs are reported apart, by
// kind, in Generated.
type SemanticResult struct {
	Arm             string  `json:"arm"`
	Embedder        string  `json:"embedder"`
	Calibrated      int     `json:"calibration_tasks"`
	Held            int     `json:"holdout_tasks"`
	MaxFalseHitRate float64 `json:"max_false_hit_rate"`
	// NoThreshold, when set, says why no threshold meets the limit on the
	// calibration pairs: crab recommends no semantic arm (ThresholdChoice is
	// then nil and tuned.yaml leaves the arm out).
	NoThreshold string `json:"no_threshold,omitempty"`
	*semantic.ThresholdChoice
	// CalibrationPairs and HoldoutPairs count each side's pairs by source
	// (task_set, generated).
	CalibrationPairs map[string]int `json:"calibration_pairs"`
	HoldoutPairs     map[string]int `json:"holdout_pairs"`
	// Generated is the holdout outcome of the generated pairs at the
	// chosen threshold, by kind group: paraphrases crab wrote (reworded,
	// a typo, a greeting) and hard negatives made by editing the holdout's
	// texts (a word swap, a negation, another number, identifier or
	// product). They test the embedder on crab's own edits, not on the
	// user's traffic, so they never enter the headline.
	Generated map[string]semantic.Outcome `json:"holdout_generated,omitempty"`

	calibTasks []string // ids of the calibration tasks (the fitted set)
}

// CalibrationTasks are the ids of the tasks the threshold was chosen on.
func (r *SemanticResult) CalibrationTasks() []string { return r.calibTasks }

// Pair sources of a SemanticResult.
const (
	SourceGenerated = "generated"
	SourceTaskSet   = "task_set"
)

// Generated pair groups of SemanticResult.Generated.
const (
	GenParaphrases = "paraphrases"
	GenNegatives   = "hard_negatives"
	GenSwaps       = "word_swaps"
)

// SemanticArms are the experiment's arms with a semantic cache, in order.
func (s *Tuner) SemanticArms() []stack.ArmSpec {
	var out []stack.ArmSpec
	for _, a := range s.Exp.Arms {
		if a.Cache != nil && a.Cache.Kind == cache.KindSemantic {
			out = append(out, a)
		}
	}
	return out
}

// Semantic chooses the similarity threshold of a semantic-cache arm
// with its own embedder, on the task set's own labelled pairs: each
// distinct question with an expected answer paired with its nearest other
// question of the same answer (a paraphrase: serving it is right) and its
// nearest of another answer (a hard negative: serving it is a false hit).
//
// The split (Split over SplitKeys, stratified by group: the
// router's split) keeps every hard negative on one side: a question and
// its nearest question of another answer over the whole task set are one
// cluster (under the built-in guarded embedder; an arm with another
// embedder may find some partners elsewhere), so a side's negatives are
// the ones its questions would meet in traffic, not easier ones left when
// a partner went to the other side. semantic.ChooseThreshold chooses the threshold on the calibration
// side's pairs and measures it once on the holdout's; when no threshold
// meets the limit, NoThreshold says so. Generated pairs of each side's
// texts (semantic.GeneratePairs and word swaps, semantic.Vary) are
// reported apart, never in the headline.
func (s *Tuner) Semantic(ctx context.Context, arm stack.ArmSpec, cfg SemanticConfig) (*SemanticResult, error) {
	cs := arm.Cache
	if cs == nil || cs.Kind != cache.KindSemantic {
		return nil, &records.InputError{File: s.Exp.File, Field: "arms.cache.kind", Msg: fmt.Sprintf("arm %s has no semantic cache", arm.Name)}
	}
	if cfg.Pairs == 0 {
		cfg.Pairs = 1000
	}
	emb, err := semantic.OpenEmbedder(semantic.EmbedderConfig{Kind: cs.Embedder, BaseURL: cs.EmbedBaseURL, Model: cs.EmbedModel, APIKey: getenv(cs.EmbedAPIKeyEnv)})
	if err != nil {
		return nil, &records.InputError{File: s.Exp.File, Field: "arms.cache.embedder", Msg: fmt.Sprintf("arm %s: %v", arm.Name, err)}
	}
	own, err := ownPairUnits(ctx, emb, s.Tasks)
	if err != nil {
		return nil, err
	}
	if len(own.units) < 2 {
		return nil, fmt.Errorf("%w: %s has %d distinct question(s) with an expected answer; a similarity threshold is chosen on the task set's own labelled pairs", semantic.ErrBadConfig, s.TasksName, len(own.units))
	}
	keys, err := s.SplitKeys()
	if err != nil {
		return nil, err
	}
	samples := make([]Sample, len(s.Tasks))
	for i := range s.Tasks {
		t := &s.Tasks[i]
		samples[i] = Sample{ID: t.ID, Group: t.Group, Key: keys[i]}
	}
	calibIdx, holdIdx, err := Split(samples, cfg.Holdout, cfg.Seed)
	if err != nil {
		return nil, err
	}
	calibOwn, holdOwn := own.pairs(calibIdx), own.pairs(holdIdx)
	name := cs.Embedder
	if name == "" {
		name = semantic.EmbedBuiltinGuarded
	}
	out := &SemanticResult{Arm: arm.Name, Embedder: name, Calibrated: len(calibIdx), Held: len(holdIdx), MaxFalseHitRate: cfg.MaxFalseHitRate,
		CalibrationPairs: map[string]int{SourceTaskSet: len(calibOwn)}, HoldoutPairs: map[string]int{SourceTaskSet: len(holdOwn)}}
	for _, i := range calibIdx {
		out.calibTasks = append(out.calibTasks, s.Tasks[i].ID)
	}
	res, err := semantic.ChooseThreshold(calibOwn, holdOwn, semantic.ThresholdOptions{MaxFalseHitRate: cfg.MaxFalseHitRate})
	var none *semantic.NoThresholdError
	switch {
	case errors.As(err, &none):
		out.NoThreshold = none.Error()
		return out, nil
	case errors.Is(err, semantic.ErrBadConfig) && cfg.MaxFalseHitRate >= 0 && cfg.MaxFalseHitRate < 1:
		out.NoThreshold = fmt.Sprintf("the calibration tasks give %d labelled pairs of their own (%d hard negatives): too few to choose a threshold on "+
			"(a task-set pair is a question with an expected answer and its nearest question of the same answer, or of another)", len(calibOwn), countNeg(calibOwn))
		return out, nil
	case err != nil:
		return nil, err
	}
	out.ThresholdChoice = res
	gen, n, err := s.generatedPairs(ctx, emb, holdIdx, cfg)
	if err != nil {
		return nil, err
	}
	out.HoldoutPairs[SourceGenerated] = n
	out.Generated = map[string]semantic.Outcome{}
	for g, ps := range gen {
		out.Generated[g] = semantic.Evaluate(ps, res.Threshold)
	}
	return out, nil
}

// OwnPairs are the labelled pairs of the whole task set under the arm's
// embedder, made as Semantic makes each side's: the population a
// side's pairs are drawn from, for checking how well a holdout bound
// covers it (bench/semanticbound).
func (s *Tuner) OwnPairs(ctx context.Context, arm stack.ArmSpec) ([]semantic.Scored, error) {
	cs := arm.Cache
	if cs == nil || cs.Kind != cache.KindSemantic {
		return nil, &records.InputError{File: s.Exp.File, Field: "arms.cache.kind", Msg: fmt.Sprintf("arm %s has no semantic cache", arm.Name)}
	}
	emb, err := semantic.OpenEmbedder(semantic.EmbedderConfig{Kind: cs.Embedder, BaseURL: cs.EmbedBaseURL, Model: cs.EmbedModel, APIKey: getenv(cs.EmbedAPIKeyEnv)})
	if err != nil {
		return nil, err
	}
	own, err := ownPairUnits(ctx, emb, s.Tasks)
	if err != nil {
		return nil, err
	}
	all := make([]int, len(s.Tasks))
	for i := range all {
		all[i] = i
	}
	return own.pairs(all), nil
}

func countNeg(ps []semantic.Scored) int {
	n := 0
	for _, p := range ps {
		if !p.Same {
			n++
		}
	}
	return n
}

// generatedPairs scores crab's own pairs of the holdout's texts, by group.
func (s *Tuner) generatedPairs(ctx context.Context, emb semantic.Embedder, idx []int, cfg SemanticConfig) (map[string][]semantic.Scored, int, error) {
	tasks := make([]*eval.Task, len(idx))
	for i, j := range idx {
		tasks[i] = &s.Tasks[j]
	}
	texts := distinctTexts(tasks)
	pairs, err := semantic.GeneratePairs(texts, cfg.Pairs, cfg.Seed+2, "hold")
	if err != nil {
		return nil, 0, err
	}
	for i, t := range texts {
		if b, ok := semantic.Vary(t, semantic.PairSwap, cfg.Seed+int64(i)); ok {
			pairs = append(pairs, semantic.Pair{Kind: semantic.PairSwap, A: t, B: b})
		}
	}
	scored, err := semantic.Score(ctx, emb, pairs)
	if err != nil {
		return nil, 0, err
	}
	out := map[string][]semantic.Scored{}
	for _, p := range scored {
		g := GenNegatives
		switch {
		case p.Kind == semantic.PairSwap:
			g = GenSwaps
		case p.Same:
			g = GenParaphrases
		}
		out[g] = append(out[g], p)
	}
	return out, len(scored), nil
}

func getenv(name string) string {
	if name == "" {
		return ""
	}
	return os.Getenv(name)
}

// distinctTexts are the tasks' texts, each once, in task order.
func distinctTexts(tasks []*eval.Task) []string {
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

// ownUnits are the task set's distinct (question, expected answer)
// units with their embeddings and their nearest other question, for
// pairing and for the split's clusters.
type ownUnits struct {
	units   []ownUnit
	ofTask  []int // unit of each task, -1 for a task without an expected answer
	cluster []int // union-find parent of each unit
	vecs    [][]float32
}

type ownUnit struct {
	text, exp string
}

// ownPairUnits embeds the distinct questions with an expected answer and
// links each to its nearest question of another answer over the whole
// task set (its hardest negative), for the split's clusters.
func ownPairUnits(ctx context.Context, emb semantic.Embedder, tasks []eval.Task) (*ownUnits, error) {
	o := &ownUnits{ofTask: make([]int, len(tasks))}
	index := map[[2]string]int{}
	for i := range tasks {
		t := &tasks[i]
		o.ofTask[i] = -1
		if len(t.Expected) == 0 {
			continue
		}
		raw, err := json.Marshal(t.Expected) // map keys sorted: one encoding per answer
		if err != nil {
			return nil, err
		}
		k := [2]string{cache.NormalizeText(t.Text), string(raw)}
		if k[0] == "" {
			continue
		}
		u, ok := index[k]
		if !ok {
			u = len(o.units)
			index[k] = u
			o.units = append(o.units, ownUnit{text: k[0], exp: k[1]})
		}
		o.ofTask[i] = u
	}
	o.cluster = make([]int, len(o.units))
	for i := range o.cluster {
		o.cluster[i] = i
	}
	if len(o.units) < 2 {
		return o, nil
	}
	texts := make([]string, len(o.units))
	for i, u := range o.units {
		texts[i] = u.text
	}
	var err error
	if o.vecs, err = emb.Embed(ctx, texts); err != nil {
		return nil, err
	}
	if len(o.vecs) != len(texts) {
		return nil, fmt.Errorf("tune: %d vectors for %d texts", len(o.vecs), len(texts))
	}
	byText := map[string]int{}
	for i := range o.units {
		// A negative below the lowest threshold semantic.ChooseThreshold considers is
		// never served: it need not hold its partner to its side.
		if j := o.nearestIn(i, nil, false); j >= 0 && dot32(o.vecs[i], o.vecs[j]) >= linkFloor {
			o.union(i, j)
		}
		if j, ok := byText[o.units[i].text]; ok {
			o.union(i, j) // one question with two answers stays on one side
		}
		byText[o.units[i].text] = i
	}
	return o, nil
}

// linkFloor is the least similarity at which a question and its nearest
// question of another answer are kept on one side of the split: the lowest
// threshold semantic.ChooseThreshold considers.
const linkFloor = 0.5

// nearestIn is the unit most similar to unit i among those in (nil: all)
// with another text and the same expected answer (same) or another one,
// or -1.
func (o *ownUnits) nearestIn(i int, in map[int]bool, same bool) int {
	best, bestSim := -1, float32(-2)
	for j := range o.units {
		if j == i || o.units[j].text == o.units[i].text || len(o.vecs[j]) != len(o.vecs[i]) || (in != nil && !in[j]) ||
			(o.units[j].exp == o.units[i].exp) != same {
			continue
		}
		if sim := dot32(o.vecs[i], o.vecs[j]); sim > bestSim {
			best, bestSim = j, sim
		}
	}
	return best
}

func (o *ownUnits) find(i int) int {
	for o.cluster[i] != i {
		o.cluster[i] = o.cluster[o.cluster[i]]
		i = o.cluster[i]
	}
	return i
}

func (o *ownUnits) union(a, b int) { o.cluster[o.find(a)] = o.find(b) }

// clusterKey is the split key of task i: its pair cluster, or, for a task
// outside every pair, its question.
func (o *ownUnits) clusterKey(i int, text string) string {
	if u := o.ofTask[i]; u >= 0 {
		return fmt.Sprintf("\x00pair:%d", o.find(u))
	}
	return QuestionKey(text)
}

// pairs are the labelled pairs of the tasks idx: each unit of theirs with
// its nearest other question of the same expected answer among them (a
// paraphrase: a hit would be right) and with its nearest of another
// answer (a hard negative: a hit would be false; the clusters keep it on
// the unit's side). An unordered pair is counted once.
func (o *ownUnits) pairs(idx []int) []semantic.Scored {
	in := map[int]bool{}
	for _, i := range idx {
		if u := o.ofTask[i]; u >= 0 {
			in[u] = true
		}
	}
	done := map[[2]int]bool{}
	var out []semantic.Scored
	for i := range o.units {
		if !in[i] || o.vecs == nil {
			continue
		}
		for _, same := range []bool{true, false} {
			j := o.nearestIn(i, in, same)
			if j < 0 {
				continue
			}
			key := [2]int{min(i, j), max(i, j)}
			if done[key] {
				continue
			}
			done[key] = true
			out = append(out, semantic.Scored{Kind: PairTaskSet, Same: same, Similarity: float64(dot32(o.vecs[i], o.vecs[j]))})
		}
	}
	return out
}

func dot32(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// WriteText writes the semantic tuning result: the threshold, the pairs it
// was chosen on, its one report on the holdout's own pairs (the headline),
// and the generated pairs apart; or why no threshold fits.
func (r *SemanticResult) WriteText(w io.Writer) error {
	allowed := "no false hit allowed"
	if r.MaxFalseHitRate > 0 {
		allowed = fmt.Sprintf("false-hit rate at most %s", pct1(r.MaxFalseHitRate))
	}
	if r.ThresholdChoice == nil {
		_, err := fmt.Fprintf(w, "semantic cache arm %s (embedder %s): no threshold (%s; %d calibration tasks, %d pairs of their own): %s\n"+
			"recommendation: no semantic arm for these texts and this embedder (an exact cache serves only repeats, and serves them right); tuned.yaml leaves arm %s out\n",
			r.Arm, r.Embedder, allowed, r.Calibrated, r.CalibrationPairs[SourceTaskSet], r.NoThreshold, r.Arm)
		return err
	}
	fmt.Fprintf(w, "semantic cache arm %s (embedder %s): threshold %.4f, chosen on the calibration tasks' own labelled pairs (%d tasks, %d pairs; %s)\n",
		r.Arm, r.Embedder, r.Threshold, r.Calibrated, r.CalibrationPairs[SourceTaskSet], allowed)
	h := r.Holdout
	fmt.Fprintf(w, "holdout (%d tasks, %d pairs of their own), reported once:\n", r.Held, r.HoldoutPairs[SourceTaskSet])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  paraphrase_hits\tfalse_hits per hard negative\tfalse_hit_upper_95\tsimilarity hits served\tfalse per served hit\tper_hit_upper_95")
	fmt.Fprintf(tw, "  %d/%d %s\t%d/%d\t%s\t%d\t%s\t%s\n", h.Hits, h.Paraphrases, pct1(h.HitRate), h.FalseHits, h.HardNegatives, pct3(h.FalseHitUpper95),
		h.Served, perHit(h), optPct(h.FalseHitPerHitUpper95))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Generated) > 0 {
		p, n, sw := r.Generated[GenParaphrases], r.Generated[GenNegatives], r.Generated[GenSwaps]
		fmt.Fprintf(w, "generated pairs of the holdout texts, reported apart (crab's own edits test the embedder, not your traffic; never the headline): "+
			"paraphrases (reworded, typo, greeting) hit %d/%d %s; hard negatives (negation, number, identifier, product) served %d/%d (<= %s); word swaps (same words, another meaning) served %d/%d (<= %s)\n",
			p.Hits, p.Paraphrases, pct1(p.HitRate), n.FalseHits, n.HardNegatives, pct3(n.FalseHitUpper95), sw.FalseHits, sw.HardNegatives, pct3(sw.FalseHitUpper95))
	}
	c := r.Calibration
	_, err := fmt.Fprintf(w, "calibration (optimistic: the threshold was chosen on it): paraphrase hits %d/%d %s, false hits %d/%d\n"+
		"own pairs: each question with an expected answer and its nearest question of the same answer (should hit) and of another (must not); "+
		"a hard negative's two questions stay on one side of the split. false_hit_upper_95: one-sided 95%% upper bound per hard negative, "+
		"per_hit_upper_95: per pair served by similarity (Clopper–Pearson)\n",
		c.Hits, c.Paraphrases, pct1(c.HitRate), c.FalseHits, c.HardNegatives)
	return err
}

// perHit writes false hits per served pair, "-" when none was served.
func perHit(o semantic.Outcome) string {
	if o.Served == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", o.FalseHits, o.Served)
}

func optPct(v *float64) string {
	if v == nil {
		return "-"
	}
	return pct3(*v)
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
