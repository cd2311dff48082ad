package tune

import "sort"

// Report is the result of Router: the threshold router's choice at the
// top level (threshold, calibration, holdout, sweep, folds) and, when
// tuned, the cascade's beside it.
type Report struct {
	Tasks      int    `json:"tasks"`
	Calibrated int    `json:"calibration_tasks"`
	Held       int    `json:"holdout_tasks"`
	Config     Config `json:"config"`
	SplitNote  string `json:"split"`
	// CostUnmeasured names the models some of whose calls have no
	// measured cost (no declared price), and CostNote says what the report
	// shows instead; every cost figure that includes such a call is null.
	CostUnmeasured []string `json:"cost_unmeasured,omitempty"`
	CostNote       string   `json:"cost_note,omitempty"`
	PolicyReport
	Cascade *PolicyReport `json:"cascade,omitempty"`
}

// PolicyReport is one policy tuned on calibration and reported once on the
// holdout.
type PolicyReport struct {
	Policy      string      `json:"policy"`
	Threshold   float64     `json:"threshold"`
	Calibration Calibration `json:"calibration"`
	Holdout     Holdout     `json:"holdout"`
	// Sweep is every candidate threshold on the calibration side, with the
	// Pareto frontier marked: what the choice was made from.
	Sweep []Point `json:"sweep"`
	// Folds is the spread of the choice and of its holdout result over
	// Config.Folds splits; nil with one fold.
	Folds *Folds `json:"folds,omitempty"`
}

// Side is a policy's figures on one side of the split, beside all-small
// and all-large on the same tasks.
type Side struct {
	N                   int          `json:"n"`
	Pass                int          `json:"pass"`
	PassAllLarge        int          `json:"pass_all_large"`
	PassAllSmall        int          `json:"pass_all_small"`
	Cost                Figure       `json:"cost"`
	CostAllLarge        Figure       `json:"cost_all_large"`
	CostAllSmall        Figure       `json:"cost_all_small"`
	CostPerPass         *Figure      `json:"cost_per_pass"`
	StrongShare         float64      `json:"strong_share"`
	LatencyMeanMs       float64      `json:"latency_mean_ms"`
	LatencyMeanAllLarge float64      `json:"latency_mean_ms_all_large"`
	LatencyMeanAllSmall float64      `json:"latency_mean_ms_all_small"`
	Misroutes           Misroutes    `json:"misroutes"`
	MisrouteCost        MisrouteCost `json:"misroute_cost"`
	// Escalated and EscalationCost are a cascade's escalations: requests
	// that called the large model after the small one, and what those
	// large calls cost. Zero for the threshold router.
	Escalated      int    `json:"escalated,omitempty"`
	EscalationCost Figure `json:"escalation_cost,omitempty"`
}

// Calibration is the chosen threshold on the side it was chosen on.
type Calibration struct {
	Side
	ChosenBy string `json:"chosen_by"`
	RuleMet  bool   `json:"rule_met"` // false: no threshold met the rule and a fallback was taken
}

// Holdout is the chosen threshold evaluated once on tasks the choice never
// read.
type Holdout struct {
	Side
	StrongShareCalibration float64 `json:"strong_share_calibration"`
	// StrongShareDrift is holdout minus calibration strong share: a router
	// calibrated to a share of strong-model calls that does not hold on
	// other traffic shows it here.
	StrongShareDrift float64        `json:"strong_share_drift"`
	Random           RandomBaseline `json:"random"`
	// RouteLLM are the score's ranking metrics on the holdout (threshold
	// router only); nil when the large model recovers no pass over the
	// small one there.
	RouteLLM *RouteLLM `json:"routellm,omitempty"`
	Matrix   Matrix    `json:"matrix"`
	Recovery Recovery  `json:"hard_sample_recovery"`
	Paired   Paired    `json:"paired_vs_all_large"`
	// PassLoss is all-large passes minus the policy's passes (negative
	// when it passes more). AllowedLoss is the rule's --max-pass-loss; nil
	// under a budget rule.
	PassLoss      int    `json:"pass_loss"`
	AllowedLoss   *int   `json:"allowed_loss"`
	WithinAllowed bool   `json:"within_allowed"`
	Verdict       string `json:"verdict"`
	Lost          []Task `json:"lost"`      // all-large passes, the policy fails
	Misrouted     []Task `json:"misrouted"` // under, over and hopeless requests
	// MisrouteFeatures counts, per misroute kind, the features the
	// misrouted requests had (the scorer's explanation, or FeatureTags).
	MisrouteFeatures map[string]map[string]int `json:"misroute_features"`
	// Curve is every calibration candidate replayed on the holdout, for
	// the Pareto figure only: it was not used to choose.
	Curve []Point `json:"curve"`
}

// RandomBaseline is random routing at the same strong share as the chosen
// threshold on the holdout, averaged over seeds.
type RandomBaseline struct {
	Seeds       int     `json:"seeds"`
	Large       int     `json:"large"` // requests sent to (or escalated to) the large model in each draw
	StrongShare float64 `json:"strong_share"`
	PassMean    float64 `json:"pass_mean"`
	PassMin     int     `json:"pass_min"`
	PassMax     int     `json:"pass_max"`
	CostMean    Figure  `json:"cost_mean"`
}

// RouteLLM are the metrics RouteLLM reports for a router's score, over
// every strong-model share: route the k highest-scored holdout tasks to
// the large model (k = 0 … n), and call the share of the performance gap
// between all-small and all-large passes recovered at k its PGR.
type RouteLLM struct {
	// Gap is all-large minus all-small passes on the holdout.
	Gap int `json:"gap"`
	// APGR is the average performance gap recovered: PGR averaged over
	// the n+1 shares (random routing scores about 0.5, a perfect router
	// close to 1).
	APGR float64 `json:"apgr"`
	// CPT50 and CPT80 are the smallest strong-model shares that recover
	// 50% and 80% of the gap (random routing needs about 0.5 and 0.8).
	CPT50 float64 `json:"cpt_50"`
	CPT80 float64 `json:"cpt_80"`
}

// routeLLM computes the metrics from the samples' scores; ties in score
// are broken by holdout order (the order tasks were split in).
func routeLLM(samples []Sample, hold []int) *RouteLLM {
	idx := append([]int(nil), hold...)
	sort.SliceStable(idx, func(a, b int) bool { return samples[idx[a]].Score > samples[idx[b]].Score })
	small, large := 0, 0
	for _, i := range idx {
		if samples[i].Small.Pass {
			small++
		}
		if samples[i].Large.Pass {
			large++
		}
	}
	gap := large - small
	if gap <= 0 || len(idx) == 0 {
		return nil
	}
	r := &RouteLLM{Gap: gap, CPT50: -1, CPT80: -1}
	n := len(idx)
	perf := small
	sum := 0.0
	for k := 0; k <= n; k++ {
		if k > 0 {
			s := &samples[idx[k-1]]
			perf += b2i(s.Large.Pass) - b2i(s.Small.Pass)
		}
		pgr := float64(perf-small) / float64(gap)
		sum += pgr
		share := float64(k) / float64(n)
		if r.CPT50 < 0 && pgr >= 0.5 {
			r.CPT50 = share
		}
		if r.CPT80 < 0 && pgr >= 0.8 {
			r.CPT80 = share
		}
	}
	r.APGR = sum / float64(n+1)
	return r
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Recovery is hard-sample recovery: of the tasks the small model fails,
// how many the policy sent to the large model, and how many of those then
// passed.
type Recovery struct {
	SmallFails int `json:"small_fails"`
	SentLarge  int `json:"sent_large"`
	Recovered  int `json:"recovered"`
}

// Paired is the policy against all-large, task by task: differences in
// passes and cost summed over the holdout, with seeded bootstrap 95%
// intervals (percentile method, tasks resampled with replacement).
type Paired struct {
	PassDiff  int        `json:"pass_diff"`
	PassCI    [2]float64 `json:"pass_ci95"`
	CostDiff  Figure     `json:"cost_diff"`
	CostCI    [2]Figure  `json:"cost_ci95"`
	Resamples int        `json:"resamples"`
}

// Task is one holdout task in a report list.
type Task struct {
	ID       string  `json:"id"`
	Group    string  `json:"group"`
	Kind     string  `json:"kind"` // under, over, hopeless, or lost
	Score    float64 `json:"score"`
	Features string  `json:"features"`
	To       string  `json:"to"` // small, large, or small+large (cascade escalation)
	Small    Outcome `json:"small"`
	Large    Outcome `json:"large"`
}

// Folds is the spread over several splits.
type Folds struct {
	Runs        []Fold     `json:"runs"`
	Threshold   [3]float64 `json:"threshold_min_median_max"`
	PassLoss    [3]float64 `json:"pass_loss_min_median_max"`
	CostSaving  [3]Figure  `json:"cost_saving_min_median_max"` // 1 − cost / cost_all_large on the holdout
	StrongShare [3]float64 `json:"strong_share_min_median_max"`
	// Within counts the folds whose holdout pass loss is within the
	// allowed loss (rule max-pass-loss; nil under a budget rule, which
	// allows no loss figure), WithinBudget those whose holdout cost per
	// request is within the budget (budget rule only).
	Within       *int `json:"within_allowed,omitempty"`
	WithinBudget *int `json:"within_budget,omitempty"`
}

// Fold is one split's choice and holdout result.
type Fold struct {
	Seed         int64   `json:"seed"`
	Threshold    float64 `json:"threshold"`
	Holdout      int     `json:"holdout_n"`
	Pass         int     `json:"pass"`
	PassAllLarge int     `json:"pass_all_large"`
	PassLoss     int     `json:"pass_loss"`
	Cost         Figure  `json:"cost"`
	CostAllLarge Figure  `json:"cost_all_large"`
	StrongShare  float64 `json:"strong_share"`
}
