package tune

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/crab-testbed/crab/internal/bootstrap"
	"github.com/crab-testbed/crab/internal/splitmix"

	"github.com/crab-testbed/crab/router"
)

// Config configures Router. The zero value of every field but Seed takes
// its default.
type Config struct {
	// Holdout is the fraction of every group kept out of calibration.
	// Default 0.3.
	Holdout float64 `json:"holdout"`
	// Seed drives the split; fold f splits with Seed+f. The random routing
	// baseline and the bootstrap derive their own streams from it.
	Seed int64 `json:"seed"`
	// Folds is how many splits (seeds Seed, Seed+1, ...) are tuned to
	// report the spread of the chosen threshold; fold 0 is the one reported
	// in full. Default 1.
	Folds int `json:"folds"`
	// Rule chooses the threshold on the calibration side.
	Rule Rule `json:"rule"`
	// RandomSeeds is how many random routings at the chosen strong share
	// are averaged for the random baseline. Default 200.
	RandomSeeds int `json:"random_seeds"`
	// Resamples is the number of bootstrap resamples of the paired
	// intervals. Default 2000.
	Resamples int `json:"resamples"`
	// Policies to tune; default both PolicyThreshold and PolicyCascade.
	// The first is reported at the top level of a Report.
	Policies []string `json:"policies"`
	// Rescore, when set, scores the samples afresh for each split from
	// its calibration side alone (e.g. a scorer fitted there, see
	// Learner), so that no holdout figure is read by what the router
	// learned; nil keeps the samples' scores.
	Rescore func(samples []Sample, calib []int) ([]Rescored, error) `json:"-"`
	// Scorer names the scorer the scores come from, for the report.
	Scorer string `json:"scorer,omitempty"`
	// SplitNote says, for the report, how the split keeps samples
	// together (what a Sample.Key groups); empty: repeats of one
	// normalised text.
	SplitNote string `json:"-"`
}

// rescored returns samples with the scores cfg.Rescore gives for the
// split (samples itself without Rescore).
func rescored(samples []Sample, calib []int, cfg Config) ([]Sample, error) {
	if cfg.Rescore == nil {
		return samples, nil
	}
	scores, err := cfg.Rescore(samples, calib)
	if err != nil {
		return nil, err
	}
	out := append([]Sample(nil), samples...)
	for i := range out {
		out[i].Score, out[i].Why = scores[i].Score, scores[i].Why
	}
	return out, nil
}

func (c *Config) fill() error {
	if c.Holdout == 0 {
		c.Holdout = 0.3
	}
	if !(c.Holdout > 0 && c.Holdout < 1) {
		return fmt.Errorf("%w: holdout %v, want a fraction between 0 and 1", ErrConfig, c.Holdout)
	}
	if c.Folds == 0 {
		c.Folds = 1
	}
	if c.Folds < 0 || c.Folds > 1000 {
		return fmt.Errorf("%w: folds %d, want 1 to 1000", ErrConfig, c.Folds)
	}
	if c.Rule.MaxPassLoss < 0 {
		return fmt.Errorf("%w: max pass loss %d, want 0 or more", ErrConfig, c.Rule.MaxPassLoss)
	}
	if c.Rule.Budget < 0 || math.IsNaN(c.Rule.Budget) || math.IsInf(c.Rule.Budget, 0) {
		return fmt.Errorf("%w: budget %v, want a cost per request > 0 (0 = off)", ErrConfig, c.Rule.Budget)
	}
	if c.RandomSeeds == 0 {
		c.RandomSeeds = 200
	}
	if c.Resamples == 0 {
		c.Resamples = 2000
	}
	if c.RandomSeeds < 0 || c.Resamples < 0 {
		return fmt.Errorf("%w: random seeds and resamples must be positive", ErrConfig)
	}
	if len(c.Policies) == 0 {
		c.Policies = []string{router.PolicyThreshold, router.PolicyCascade}
	}
	for _, p := range c.Policies {
		if p != router.PolicyThreshold && p != router.PolicyCascade {
			return fmt.Errorf("%w: unknown policy %q (want %q or %q)", ErrConfig, p, router.PolicyThreshold, router.PolicyCascade)
		}
	}
	return nil
}

// Router splits samples, chooses each policy's threshold on the calibration
// side by cfg.Rule, and evaluates that one threshold on the holdout. A task
// set on which the small model always passes gets the all-small threshold
// (1 for the router, 0 for the cascade when nothing fails the contract); one
// on which it always fails gets all-large: neither is an error.
func Router(samples []Sample, cfg Config) (*Report, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	unpriced, costNote, err := costUnmeasured(samples, cfg.Rule)
	if err != nil {
		return nil, err
	}
	calib, hold, err := Split(samples, cfg.Holdout, cfg.Seed)
	if err != nil {
		return nil, err
	}
	all := samples
	if samples, err = rescored(samples, calib, cfg); err != nil {
		return nil, err
	}
	note := cfg.SplitNote
	if note == "" {
		note = "tasks with the same normalised text stay on one side (translations are different texts)"
	}
	rep := &Report{Tasks: len(samples), Calibrated: len(calib), Held: len(hold), Config: cfg, SplitNote: "seeded, stratified by group; " + note,
		CostUnmeasured: unpriced, CostNote: costNote}
	for i, policy := range cfg.Policies {
		pr := tunePolicy(policy, samples, calib, hold, cfg, cfg.Seed)
		if cfg.Folds > 1 {
			f, err := folds(policy, all, cfg)
			if err != nil {
				return nil, err
			}
			pr.Folds = f
		}
		if i == 0 {
			rep.PolicyReport = *pr
		} else if policy == router.PolicyCascade {
			rep.Cascade = pr
		}
	}
	return rep, nil
}

// tunePolicy chooses on calib and reports on hold.
func tunePolicy(policy string, samples []Sample, calib, hold []int, cfg Config, seed int64) *PolicyReport {
	sweep := Sweep(policy, samples, calib)
	cal := side(policy, samples, calib, 0)
	ch := Choose(sweep, cal.PassAllLarge, cfg.Rule)
	t := ch.Threshold
	pr := &PolicyReport{Policy: policy, Threshold: t, Sweep: sweep}
	pr.Calibration = Calibration{Side: side(policy, samples, calib, t), ChosenBy: ch.Why, RuleMet: ch.Met}

	h := &pr.Holdout
	var m Matrix
	p := replay(policy, samples, hold, t, &m)
	h.Side = side(policy, samples, hold, t)
	h.Matrix = m
	h.StrongShareCalibration = pr.Calibration.StrongShare
	h.StrongShareDrift = h.StrongShare - pr.Calibration.StrongShare
	h.Random = randomBaseline(policy, samples, hold, p.Large, cfg.RandomSeeds, seed)
	if policy == router.PolicyThreshold {
		h.RouteLLM = routeLLM(samples, hold)
	}
	h.Paired = paired(policy, samples, hold, t, cfg.Resamples, seed)
	h.PassLoss = h.PassAllLarge - h.Pass
	if cfg.Rule.Budget == 0 {
		allowed := cfg.Rule.MaxPassLoss
		h.AllowedLoss = &allowed
		h.WithinAllowed = h.PassLoss <= allowed
	} else {
		h.WithinAllowed = true
	}
	for _, i := range hold {
		s := &samples[i]
		useSmall, useLarge := calls(policy, s, t)
		final := s.Small
		if useLarge {
			final = s.Large
		}
		if !s.Small.Pass {
			h.Recovery.SmallFails++
			if useLarge {
				h.Recovery.SentLarge++
				if s.Large.Pass {
					h.Recovery.Recovered++
				}
			}
		}
		to := "small"
		switch {
		case useSmall && useLarge:
			to = "small+large"
		case useLarge:
			to = "large"
		}
		row := Task{ID: s.ID, Group: s.Group, Score: s.Score, Features: s.features(policy), To: to, Small: s.Small, Large: s.Large}
		if s.Large.Pass && !final.Pass {
			lost := row
			lost.Kind = "lost"
			h.Lost = append(h.Lost, lost)
		}
		c := classOf(s)
		switch {
		case c == classNeither:
			row.Kind = "hopeless"
		case !useLarge && c == classLargeOnly:
			row.Kind = "under"
		case useLarge && (c == classBoth || c == classSmallOnly):
			row.Kind = "over"
		default:
			continue
		}
		h.Misrouted = append(h.Misrouted, row)
		if h.MisrouteFeatures == nil {
			h.MisrouteFeatures = map[string]map[string]int{}
		}
		fc := h.MisrouteFeatures[row.Kind]
		if fc == nil {
			fc = map[string]int{}
			h.MisrouteFeatures[row.Kind] = fc
		}
		for _, tag := range s.tags(policy) {
			fc[tag]++
		}
	}
	sort.SliceStable(h.Misrouted, func(a, b int) bool { return kindOrder(h.Misrouted[a].Kind) < kindOrder(h.Misrouted[b].Kind) })
	h.Verdict = verdict(policy, h, cfg.Rule)
	for _, c := range sweep {
		h.Curve = append(h.Curve, replay(policy, samples, hold, c.Threshold, nil))
	}
	markFrontier(h.Curve)
	return pr
}

func kindOrder(k string) int {
	switch k {
	case "under":
		return 0
	case "hopeless":
		return 1
	}
	return 2
}

// verdict says in one sentence whether the holdout kept its passes.
func verdict(policy string, h *Holdout, rule Rule) string {
	name := "the router"
	if policy == router.PolicyCascade {
		name = "the cascade"
	}
	switch {
	case h.PassLoss <= 0:
		return fmt.Sprintf("%s loses no holdout pass against all-large (%d vs %d)", name, h.Pass, h.PassAllLarge)
	case h.AllowedLoss == nil:
		return fmt.Sprintf("%s loses %d holdout pass(es) against all-large under the budget rule (%d vs %d)", name, h.PassLoss, h.Pass, h.PassAllLarge)
	case h.WithinAllowed:
		return fmt.Sprintf("%s loses %d holdout pass(es) against all-large, within the allowed %d", name, h.PassLoss, *h.AllowedLoss)
	}
	return fmt.Sprintf("%s LOSES %d holdout pass(es) against all-large, more than the allowed %d: see the lost tasks", name, h.PassLoss, *h.AllowedLoss)
}

// side sums a policy at threshold t over samples[idx] beside all-small and
// all-large on the same tasks.
func side(policy string, samples []Sample, idx []int, t float64) Side {
	p := replay(policy, samples, idx, t, nil)
	s := Side{N: p.N, Pass: p.Pass, Cost: p.Cost, CostPerPass: p.CostPerPass, StrongShare: p.StrongShare,
		LatencyMeanMs: p.LatencyMeanMs, Misroutes: p.Misroutes, MisrouteCost: p.MisrouteCost}
	for _, i := range idx {
		x := &samples[i]
		if x.Large.Pass {
			s.PassAllLarge++
		}
		if x.Small.Pass {
			s.PassAllSmall++
		}
		s.CostAllLarge += x.Large.Cost
		s.CostAllSmall += x.Small.Cost
		s.LatencyMeanAllLarge += x.Large.LatencyMs
		s.LatencyMeanAllSmall += x.Small.LatencyMs
		if policy == router.PolicyCascade {
			if _, large := calls(policy, x, t); large {
				s.Escalated++
				s.EscalationCost += x.Large.Cost
			}
		}
	}
	if n := float64(len(idx)); n > 0 {
		s.LatencyMeanAllLarge /= n
		s.LatencyMeanAllSmall /= n
	}
	return s
}

// randomBaseline routes k random tasks of samples[idx] to the large model
// (for a cascade: escalates k random tasks), once per seed, and averages.
func randomBaseline(policy string, samples []Sample, idx []int, k, seeds int, seed int64) RandomBaseline {
	rb := RandomBaseline{Seeds: seeds, Large: k, PassMin: math.MaxInt}
	if len(idx) == 0 || seeds == 0 {
		rb.PassMin = 0
		return rb
	}
	rb.StrongShare = float64(k) / float64(len(idx))
	perm := make([]int, len(idx))
	g := splitmix.Labelled(seed, "random:"+policy)
	passSum, costSum := 0, Figure(0)
	for r := 0; r < seeds; r++ {
		for i := range perm {
			perm[i] = idx[i]
		}
		// partial Fisher–Yates: the first k are the large ones
		for i := 0; i < k; i++ {
			j := i + int(g.Below(uint64(len(perm)-i)))
			perm[i], perm[j] = perm[j], perm[i]
		}
		pass, cost := 0, Figure(0)
		for i, si := range perm {
			s := &samples[si]
			large := i < k
			switch {
			case policy == router.PolicyCascade && large:
				cost += s.Small.Cost + s.Large.Cost
			case large:
				cost += s.Large.Cost
			default:
				cost += s.Small.Cost
			}
			if large && s.Large.Pass || !large && s.Small.Pass {
				pass++
			}
		}
		passSum += pass
		costSum += cost
		rb.PassMin = min(rb.PassMin, pass)
		rb.PassMax = max(rb.PassMax, pass)
	}
	rb.PassMean = float64(passSum) / float64(seeds)
	rb.CostMean = costSum / Figure(seeds)
	return rb
}

// paired compares the policy with all-large task by task.
func paired(policy string, samples []Sample, idx []int, t float64, resamples int, seed int64) Paired {
	n := len(idx)
	dp := make([]float64, n)
	dc := make([]float64, n)
	out := Paired{Resamples: resamples}
	for k, i := range idx {
		s := &samples[i]
		useSmall, useLarge := calls(policy, s, t)
		var cost Figure
		pass := s.Small.Pass
		if useSmall {
			cost += s.Small.Cost
		}
		if useLarge {
			cost += s.Large.Cost
			pass = s.Large.Pass
		}
		dp[k] = b2f(pass) - b2f(s.Large.Pass)
		dc[k] = float64(cost - s.Large.Cost)
		out.PassDiff += int(dp[k])
		out.CostDiff += Figure(dc[k])
	}
	out.PassCI = bootstrapSumCI(dp, resamples, splitmix.Labelled(seed, "bootstrap-pass:"+policy))
	out.CostCI = [2]Figure{Unmeasured(), Unmeasured()}
	if out.CostDiff.Measured() {
		ci := bootstrapSumCI(dc, resamples, splitmix.Labelled(seed, "bootstrap-cost:"+policy))
		out.CostCI = [2]Figure{Figure(ci[0]), Figure(ci[1])}
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// bootstrapSumCI is the percentile 95% interval of the sum of x over
// resamples of x with replacement (bootstrap.SumCI); zero for no values.
func bootstrapSumCI(x []float64, resamples int, g *splitmix.Rand) [2]float64 {
	if len(x) == 0 || resamples == 0 {
		return [2]float64{}
	}
	lo, hi := bootstrap.SumCI(x, resamples, 1, g.Below)
	return [2]float64{lo, hi}
}

// folds tunes the policy on cfg.Folds splits and reports the spread.
func folds(policy string, samples []Sample, cfg Config) (*Folds, error) {
	f := &Folds{}
	var th, loss, share []float64
	var saving []Figure
	for k := 0; k < cfg.Folds; k++ {
		seed := cfg.Seed + int64(k)
		calib, hold, err := Split(samples, cfg.Holdout, seed)
		if err != nil {
			return nil, err
		}
		samples, err := rescored(samples, calib, cfg)
		if err != nil {
			return nil, err
		}
		sweep := Sweep(policy, samples, calib)
		cal := side(policy, samples, calib, 0)
		ch := Choose(sweep, cal.PassAllLarge, cfg.Rule)
		h := side(policy, samples, hold, ch.Threshold)
		run := Fold{Seed: seed, Threshold: ch.Threshold, Holdout: h.N, Pass: h.Pass, PassAllLarge: h.PassAllLarge,
			PassLoss: h.PassAllLarge - h.Pass, Cost: h.Cost, CostAllLarge: h.CostAllLarge, StrongShare: h.StrongShare}
		f.Runs = append(f.Runs, run)
		count := func(c **int, ok bool) {
			if *c == nil {
				*c = new(int)
			}
			if ok {
				**c++
			}
		}
		if cfg.Rule.Budget > 0 {
			count(&f.WithinBudget, h.N > 0 && float64(h.Cost)/float64(h.N) <= cfg.Rule.Budget)
		} else {
			count(&f.Within, run.PassLoss <= cfg.Rule.MaxPassLoss)
		}
		th = append(th, run.Threshold)
		loss = append(loss, float64(run.PassLoss))
		sv := Figure(0)
		if h.CostAllLarge > 0 || !h.CostAllLarge.Measured() {
			sv = 1 - h.Cost/h.CostAllLarge
		}
		saving = append(saving, sv)
		share = append(share, run.StrongShare)
	}
	f.Threshold, f.PassLoss, f.StrongShare = spread(th), spread(loss), spread(share)
	f.CostSaving = [3]Figure{Unmeasured(), Unmeasured(), Unmeasured()}
	if s := spread(saving); s[0].Measured() && s[2].Measured() {
		f.CostSaving = s
	}
	return f, nil
}

// spread is min, median (nearest rank) and max; NaN sorts first.
func spread[F ~float64](x []F) [3]F {
	s := append([]F(nil), x...)
	slices.Sort(s)
	if len(s) == 0 {
		return [3]F{}
	}
	return [3]F{s[0], s[(len(s)+1)/2-1], s[len(s)-1]}
}

// FeatureTags names the features a report tallies for misrouted requests:
// late (first issue cue beyond the small model's window), neg (a negated
// issue), non_english, tool (a lookup is needed), multi_issue (two or more
// issue families), no_issue (no issue keyword), long (longer than the
// default 90-rune window), late_risk (a risk cue beyond the window).
func FeatureTags(f router.Features) []string {
	var out []string
	add := func(on bool, tag string) {
		if on {
			out = append(out, tag)
		}
	}
	add(f.Late, "late")
	add(f.LateRisk, "late_risk")
	add(f.Negation, "neg")
	add(f.NonEnglish, "non_english")
	add(f.Tool, "tool")
	add(f.Cues >= 2, "multi_issue")
	add(f.Cues == 0, "no_issue")
	add(f.Runes > router.DefaultLongFrom, "long")
	if len(out) == 0 {
		out = append(out, "none")
	}
	return out
}
