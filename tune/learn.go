package tune

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/crab-testbed/crab/router"
)

// LearnConfig configures Fit. The zero value of every field takes its
// default.
type LearnConfig struct {
	// Buckets is the size of the hashed feature space, a power of two;
	// default 16384.
	Buckets int `json:"buckets"`
	// L2 candidates: the regularisation strengths tried by 3-fold cross
	// validation on the calibration side (by AUC); default 0.003, 0.03.
	L2 []float64 `json:"l2"`
	// Iterations of full-batch gradient descent; default 150.
	Iterations int `json:"iterations"`
}

func (c *LearnConfig) fill() error {
	if c.Buckets == 0 {
		c.Buckets = 1 << 14
	}
	if c.Buckets < 1 || c.Buckets > 1<<24 || c.Buckets&(c.Buckets-1) != 0 {
		return fmt.Errorf("%w: buckets %d, want a power of two up to 16777216", ErrConfig, c.Buckets)
	}
	if len(c.L2) == 0 {
		c.L2 = []float64{0.003, 0.03}
	}
	for _, l := range c.L2 {
		if !(l >= 0) || math.IsInf(l, 0) {
			return fmt.Errorf("%w: l2 %v, want a finite number >= 0", ErrConfig, l)
		}
	}
	if c.Iterations == 0 {
		c.Iterations = 150
	}
	if c.Iterations < 1 {
		return fmt.Errorf("%w: iterations %d, want 1 or more", ErrConfig, c.Iterations)
	}
	return nil
}

// Label is what a learned scorer predicts: the task needs the large
// model — the small one fails it and the large one passes. Tasks both
// pass, or both fail, are better left to the small model (no pass to
// gain, the large call's cost to save).
func Label(s *Sample) bool { return !s.Small.Pass && s.Large.Pass }

// example is one training row: dense features and summed hashed buckets.
type example struct {
	dense  [8]float64
	idx    []int32
	val    []float64
	y      float64
	weight float64
}

// Fit fits a logistic regression scorer on samples[idx] (each needs its
// Req): label Label, generic dense features standardised on these
// samples, hashed n-grams, classes weighted to equal total weight, L2
// chosen by 3-fold cross validation. It is deterministic.
func Fit(samples []Sample, idx []int, cfg LearnConfig) (*router.LearnedScorer, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if len(idx) == 0 {
		return nil, fmt.Errorf("%w: no samples to fit on", ErrTooFewSamples)
	}
	ex := make([]example, len(idx))
	pos := 0
	for k, i := range idx {
		s := &samples[i]
		if s.Req == nil {
			return nil, fmt.Errorf("tune: sample %s has no request to learn from", s.ID)
		}
		ex[k] = newExample(s, uint64(cfg.Buckets-1))
		if ex[k].y == 1 {
			pos++
		}
	}
	n := len(ex)
	mean, scale := standardise(ex, pos)
	lm := router.LearnedModel{Format: router.ScorerFormat, Kind: router.KindLogistic, Buckets: cfg.Buckets,
		Names: append([]string(nil), router.DenseFeatures...), Mean: mean[:], Scale: scale[:],
		Trained: map[string]any{"samples": n, "positives": pos, "label": "small fails, large passes"}}
	switch {
	case pos == 0 || pos == n:
		// Nothing to tell apart: a constant score on the side of the only class.
		lm.Bias = -10
		if pos == n {
			lm.Bias = 10
		}
		lm.Dense = make([]float64, len(router.DenseFeatures))
		return router.NewLearnedScorer(lm)
	}
	l2 := cfg.L2[0]
	if len(cfg.L2) > 1 {
		best := -1.0
		for _, l := range cfg.L2 {
			if a := crossAUC(ex, cfg, l); a > best {
				best, l2 = a, l
			}
		}
		lm.Trained["cv_auc"] = best
	}
	lm.Trained["l2"] = l2
	w := train(ex, nil, cfg, l2)
	lm.Bias = w.bias
	lm.Dense = append([]float64(nil), w.dense[:]...)
	lm.Hashed = map[string]float64{}
	for b, v := range w.hashed {
		if v != 0 {
			lm.Hashed[strconv.Itoa(b)] = v
		}
	}
	return router.NewLearnedScorer(lm)
}

// newExample is the training row of s: its dense features, its hashed
// n-grams summed per bucket (mask: buckets - 1), and its label.
func newExample(s *Sample, mask uint64) example {
	var e example
	router.DenseOf(s.Req, e.dense[:])
	type hit struct {
		b   int32
		fam int
	}
	var hits []hit
	words, tris := router.Hashed(s.Req, func(h uint64, fam int) { hits = append(hits, hit{int32(h & mask), fam}) })
	acc := map[int32]float64{}
	for _, x := range hits {
		acc[x.b] += router.FamilyValue(x.fam, words, tris)
	}
	e.idx = make([]int32, 0, len(acc))
	for b := range acc {
		e.idx = append(e.idx, b)
	}
	sort.Slice(e.idx, func(a, b int) bool { return e.idx[a] < e.idx[b] })
	e.val = make([]float64, len(e.idx))
	for j, b := range e.idx {
		e.val[j] = acc[b]
	}
	if Label(s) {
		e.y = 1
	}
	return e
}

// standardise scales every dense feature of ex to mean 0 and standard
// deviation 1 (a constant feature keeps scale 1) and weights the classes
// (pos positives) to equal total weight; it returns the mean and scale.
func standardise(ex []example, pos int) (mean, scale [8]float64) {
	n := len(ex)
	for _, e := range ex {
		for j, v := range e.dense {
			mean[j] += v / float64(n)
		}
	}
	for _, e := range ex {
		for j, v := range e.dense {
			scale[j] += (v - mean[j]) * (v - mean[j]) / float64(n)
		}
	}
	for j := range scale {
		scale[j] = math.Sqrt(scale[j])
		if scale[j] < 1e-9 {
			scale[j] = 1
		}
	}
	for k := range ex {
		for j := range ex[k].dense {
			ex[k].dense[j] = (ex[k].dense[j] - mean[j]) / scale[j]
		}
		switch {
		case ex[k].y == 1:
			ex[k].weight = float64(n) / (2 * float64(pos))
		default:
			ex[k].weight = float64(n) / (2 * float64(max(n-pos, 1)))
		}
	}
	return mean, scale
}

type weights struct {
	bias   float64
	dense  [8]float64
	hashed []float64
}

func (w *weights) logit(e *example) float64 {
	x := w.bias
	for j, v := range e.dense {
		x += w.dense[j] * v
	}
	for j, b := range e.idx {
		x += w.hashed[b] * e.val[j]
	}
	return x
}

// train runs full-batch gradient descent with Nesterov momentum on the
// weighted logistic loss plus l2/2·|w|² (bias not penalised), over the
// examples whose index is not in skip.
func train(ex []example, skip map[int]bool, cfg LearnConfig, l2 float64) *weights {
	w := &weights{hashed: make([]float64, cfg.Buckets)}
	vel := &weights{hashed: make([]float64, cfg.Buckets)}
	grad := &weights{hashed: make([]float64, cfg.Buckets)}
	look := &weights{hashed: make([]float64, cfg.Buckets)}
	var touched []int32
	seen := make([]bool, cfg.Buckets)
	total := 0.0
	for k := range ex {
		if skip[k] {
			continue
		}
		total += ex[k].weight
		for _, b := range ex[k].idx {
			if !seen[b] {
				seen[b] = true
				touched = append(touched, b)
			}
		}
	}
	const lr, mom = 0.5, 0.9
	for range cfg.Iterations {
		look.bias = w.bias + mom*vel.bias
		for j := range w.dense {
			look.dense[j] = w.dense[j] + mom*vel.dense[j]
		}
		for _, b := range touched {
			look.hashed[b] = w.hashed[b] + mom*vel.hashed[b]
		}
		grad.bias = 0
		grad.dense = [8]float64{}
		for _, b := range touched {
			grad.hashed[b] = l2 * look.hashed[b]
		}
		for j := range grad.dense {
			grad.dense[j] = l2 * look.dense[j]
		}
		for k := range ex {
			if skip[k] {
				continue
			}
			e := &ex[k]
			p := 1 / (1 + math.Exp(-look.logit(e)))
			g := e.weight * (p - e.y) / total
			grad.bias += g
			for j, v := range e.dense {
				grad.dense[j] += g * v
			}
			for j, b := range e.idx {
				grad.hashed[b] += g * e.val[j]
			}
		}
		vel.bias = mom*vel.bias - lr*grad.bias
		w.bias += vel.bias
		for j := range w.dense {
			vel.dense[j] = mom*vel.dense[j] - lr*grad.dense[j]
			w.dense[j] += vel.dense[j]
		}
		for _, b := range touched {
			vel.hashed[b] = mom*vel.hashed[b] - lr*grad.hashed[b]
			w.hashed[b] += vel.hashed[b]
		}
	}
	return w
}

// crossAUC is the mean held-out AUC of 3 folds (examples dealt round
// robin) at regularisation l2.
func crossAUC(ex []example, cfg LearnConfig, l2 float64) float64 {
	const k = 3
	sum, folds := 0.0, 0
	for f := range k {
		skip := map[int]bool{}
		var held []int
		for i := range ex {
			if i%k == f {
				skip[i] = true
				held = append(held, i)
			}
		}
		w := train(ex, skip, cfg, l2)
		scores := make([]float64, len(held))
		ys := make([]bool, len(held))
		for j, i := range held {
			scores[j], ys[j] = w.logit(&ex[i]), ex[i].y == 1
		}
		if a, ok := AUC(scores, ys); ok {
			sum += a
			folds++
		}
	}
	if folds == 0 {
		return 0
	}
	return sum / float64(folds)
}

// AUC is the area under the ROC curve of scores for labels ys (ties count
// half); ok is false when one class is missing.
func AUC(scores []float64, ys []bool) (float64, bool) {
	type pair struct {
		s float64
		y bool
	}
	ps := make([]pair, len(scores))
	np, nn := 0, 0
	for i := range scores {
		ps[i] = pair{scores[i], ys[i]}
		if ys[i] {
			np++
		} else {
			nn++
		}
	}
	if np == 0 || nn == 0 {
		return 0, false
	}
	sort.Slice(ps, func(a, b int) bool { return ps[a].s < ps[b].s })
	rankSum := 0.0
	for i := 0; i < len(ps); {
		j := i
		for j < len(ps) && ps[j].s == ps[i].s {
			j++
		}
		r := float64(i+j+1) / 2 // mean 1-based rank of the tie group
		for k := i; k < j; k++ {
			if ps[k].y {
				rankSum += r
			}
		}
		i = j
	}
	return (rankSum - float64(np*(np+1))/2) / float64(np*nn), true
}

// Learner returns a Config.Rescore that fits a scorer on each split's
// calibration side and scores every sample with it; keep, when set,
// receives the scorer of the first split (the one a report shows and -o
// writes).
//
// The calibration samples are scored out of fold (cross-fitting): each by
// a scorer fitted on the other two thirds of the calibration side, so that
// the threshold is chosen on scores the scorer did not learn from — a
// model scores its own training data too confidently, and a threshold
// chosen there would send too little to the large model on new traffic.
// Every other sample is scored by the scorer fitted on the whole
// calibration side, the one that is deployed.
func Learner(cfg LearnConfig, keep func(*router.LearnedScorer)) func(samples []Sample, calib []int) ([]Rescored, error) {
	first := true
	return func(samples []Sample, calib []int) ([]Rescored, error) {
		sc, err := Fit(samples, calib, cfg)
		if err != nil {
			return nil, err
		}
		if first && keep != nil {
			keep(sc)
		}
		first = false
		out := make([]Rescored, len(samples))
		for i := range samples {
			out[i] = Rescored{Score: sc.Score(samples[i].Req).Value, Why: sc.Explain(samples[i].Req, ExplainTop)}
		}
		const k = 3
		if len(calib) < 2*k {
			return out, nil
		}
		fold := cfg
		if l2, ok := sc.Model().Trained["l2"].(float64); ok {
			fold.L2 = []float64{l2} // the strength cross validation chose for the whole side
		}
		for f := range k {
			var train, held []int
			for j, i := range calib {
				if j%k == f {
					held = append(held, i)
				} else {
					train = append(train, i)
				}
			}
			fs, err := Fit(samples, train, fold)
			if err != nil {
				return nil, err
			}
			for _, i := range held {
				out[i] = Rescored{Score: fs.Score(samples[i].Req).Value, Why: fs.Explain(samples[i].Req, ExplainTop)}
			}
		}
		return out, nil
	}
}
