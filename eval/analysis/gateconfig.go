package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// Verdicts beyond baseline, accept and reject.
const (
	// VerdictNoGain: the candidate passes the gate and breaks no guardrail,
	// but does not improve the objective with an interval that excludes 0.
	VerdictNoGain = "no_gain"
	// VerdictInconclusive: the data cannot decide (the baseline passes
	// nothing, too few pairs, failures clustered in time).
	VerdictInconclusive = "inconclusive"
	// VerdictIncomplete: the run was interrupted before the arm finished.
	VerdictIncomplete = "incomplete"
)

// Quality rules (GateConfig.Rule).
const (
	// RuleMargin (the default) judges pass rates: per task the share of
	// its repeats that pass, paired with the baseline's, and a 95%
	// interval of the mean difference clustered by task, against a
	// non-inferiority margin (MarginPP). It holds when outcomes vary from
	// call to call, as real models' do.
	RuleMargin = "margin"
	// RuleNet and RuleAny are sample rules: they count the passing tasks
	// lost in this sample (lost minus gained, or every lost task), which
	// is a valid rule only for outcomes that are the same on every call.
	RuleNet = "net"
	RuleAny = "any"
)

// Rules lists the quality rules a gate may name.
var Rules = []string{RuleMargin, RuleNet, RuleAny}

// Sample reports whether rule counts lost tasks of one sample (net, any)
// rather than judging pass rates against a margin.
func sampleRule(rule string) bool { return rule == RuleNet || rule == RuleAny }

// Objectives a candidate may claim to improve (GateConfig.Objective).
const (
	ObjectiveEither  = "either"  // per-task latency or per-task cost (the default)
	ObjectiveLatency = "latency" // per-task end-to-end latency
	ObjectiveCost    = "cost"    // per-task cost
	ObjectiveGoodput = "goodput" // share of tasks passing within the SLO
)

// GateConfig is an experiment's declared decision rule (the gate: section;
// crab report reads it from a run's manifest). Zero values take the
// documented defaults (see Defaults).
type GateConfig struct {
	// Rule is the quality rule: margin (the default: pass rates paired
	// by task, a 95% interval clustered by task, against MarginPP), or a
	// sample rule for outcomes known to be the same on every call: net
	// (lost minus gained passing tasks) or any (every lost task, whatever
	// it gained), at most MaxLost of them (default 0).
	Rule    string `yaml:"rule" json:"rule"`
	MaxLost int    `yaml:"max_lost" json:"max_lost"`
	// MarginPP is rule margin's non-inferiority margin in points of pass
	// rate (nil: DefaultMarginPP): quality holds when the interval's lower
	// end is above -MarginPP, and is broken when the whole interval lies
	// below it. A sample rule takes no margin.
	MarginPP *float64 `yaml:"margin_pp" json:"margin_pp,omitempty"`
	// Alpha is the run's error rate (nil: DefaultAlpha): the accept
	// decisions of every candidate on every objective figure it may win
	// on are corrected together (Holm), so that the chance of accepting
	// any candidate that is not better is at most Alpha over the whole
	// run; the quality interval, the failure-share test, the guardrails
	// and the A/A control's test are each taken at this rate.
	Alpha *float64 `yaml:"alpha" json:"alpha,omitempty"`
	// Guardrails are figures that may not regress beyond a limit, in
	// percent of the baseline's; nil leaves one out (defaults: p95 10,
	// cost per pass 10, TTFT p95 none). A negative limit is refused.
	P95RegressPct         *float64 `yaml:"p95_regress_pct" json:"p95_regress_pct"`
	TTFTP95RegressPct     *float64 `yaml:"ttft_p95_regress_pct" json:"ttft_p95_regress_pct"`
	CostPerPassRegressPct *float64 `yaml:"cost_per_pass_regress_pct" json:"cost_per_pass_regress_pct"`
	// Objective is what the candidate claims to improve: either (default),
	// latency, cost or goodput. Improvement means the paired interval of
	// the per-task delta excludes 0 on the better side.
	Objective string `yaml:"objective" json:"objective"`
	// SLO defines goodput (as vLLM's benchmark does): a task counts when it
	// passes, within TTFTMs to its first byte and E2EMs end to end (0: no
	// limit). Required by objective goodput.
	SLO SLO `yaml:"slo" json:"slo"`
	// MinPairs is the fewest matched pairs a verdict rests on (default
	// DefaultMinPairs); fewer make it inconclusive.
	MinPairs int `yaml:"min_pairs" json:"min_pairs"`
	// MaxFalseHitRate is the largest false-hit rate a semantic cache may
	// be shown to have: an arm whose one-sided 95% upper bound on its
	// false hits per hit is above it is rejected (nil: DefaultMaxFalseHitRate).
	MaxFalseHitRate *float64 `yaml:"max_false_hit_rate" json:"max_false_hit_rate,omitempty"`
	// MinEffectPct is the smallest improvement the objective must show,
	// in percent of the baseline's mean per task (for goodput: in points
	// of the share): the paired interval must lie wholly beyond it, so an
	// identical twin's jitter is never called better (nil:
	// DefaultMinEffectPct; 0 asks only that the interval exclude 0).
	MinEffectPct *float64 `yaml:"min_effect_pct" json:"min_effect_pct,omitempty"`
	// Waive names criteria the gate may decide without, when the records
	// cannot measure them: "leaks" accepts an arm whose cache hits carry
	// no scope to check (an interchange CSV without a leak column).
	Waive []string `yaml:"waive" json:"waive,omitempty"`
	// Control names the arm that is an identical copy of the baseline (an
	// A/A control; set from the experiment's control: twin): when it is
	// not no_gain, no candidate is accepted.
	Control string `yaml:"-" json:"control,omitempty"`
	// Rework is the experiment's rework section (set from it): the cost
	// of redoing by hand each task an arm does not pass.
	Rework *Rework `yaml:"-" json:"rework,omitempty"`
}

// Criteria a gate may waive (GateConfig.Waive).
const (
	WaiveLeaks = "leaks"
	// WaiveCost decides without cost when the records do not carry it
	// (vLLM bench serve results): the cost-per-pass guardrail and the
	// cost side of objective either are left out.
	WaiveCost = "cost"
	// WaiveQuality decides without the quality rule when the records
	// carry no grading: only speed, cost and the other checks decide.
	WaiveQuality = "quality"
	// WaiveTTFT decides without the TTFT p95 guardrail when the records
	// took no time to first byte.
	WaiveTTFT = "ttft"
)

// Waivable lists the criteria a gate may waive.
var Waivable = []string{WaiveLeaks, WaiveCost, WaiveQuality, WaiveTTFT}

// Waived reports whether the gate waives criterion c.
func (g GateConfig) Waived(c string) bool { return slices.Contains(g.Waive, c) }

// MinEffect is the minimum effect in force, in percent.
func (g GateConfig) MinEffect() float64 {
	if g.MinEffectPct != nil {
		return *g.MinEffectPct
	}
	return DefaultMinEffectPct
}

// SLO is the latency a request must meet to count toward goodput.
type SLO struct {
	TTFTMs float64 `yaml:"ttft_ms" json:"ttft_ms,omitempty"`
	E2EMs  float64 `yaml:"e2e_ms" json:"e2e_ms,omitempty"`
}

// Default guardrail limits and pair count.
const (
	DefaultP95RegressPct         = 10
	DefaultCostPerPassRegressPct = 10
	DefaultMinPairs              = 2
	DefaultMaxFalseHitRate       = 0.05
	DefaultMinEffectPct          = 1
	// DefaultMarginPP is rule margin's margin: a candidate may lose at
	// most 2 points of pass rate, a loss small enough to trade for speed
	// or cost and large enough for a few hundred tasks to bound.
	DefaultMarginPP = 2
	// DefaultAlpha is the run's error rate.
	DefaultAlpha = 0.05
)

// Margin is rule margin's margin in force, as a share of pass rate (0.02
// for 2 points).
func (g GateConfig) Margin() float64 {
	if g.MarginPP != nil {
		return *g.MarginPP / 100
	}
	return DefaultMarginPP / 100.0
}

// ErrorRate is the run's error rate in force (Alpha or DefaultAlpha).
func (g GateConfig) ErrorRate() float64 {
	if g.Alpha != nil {
		return *g.Alpha
	}
	return DefaultAlpha
}

// FalseHitLimit is the false-hit rate limit in force.
func (g GateConfig) FalseHitLimit() float64 {
	if g.MaxFalseHitRate != nil {
		return *g.MaxFalseHitRate
	}
	return DefaultMaxFalseHitRate
}

// Defaults returns g with every unset field at its default.
func (g GateConfig) Defaults() GateConfig {
	if g.P95RegressPct == nil {
		g.P95RegressPct = f64p(DefaultP95RegressPct)
	}
	if g.CostPerPassRegressPct == nil {
		g.CostPerPassRegressPct = f64p(DefaultCostPerPassRegressPct)
	}
	if g.Objective == "" {
		g.Objective = ObjectiveEither
	}
	if g.Rule == "" {
		g.Rule = RuleMargin
	}
	if g.MinPairs == 0 {
		g.MinPairs = DefaultMinPairs
	}
	return g
}

// Check returns the first problem of g as a field (below gate.) and a
// message; an empty field means none.
func (g GateConfig) Check() (field, msg string) {
	switch g.Rule {
	case "", RuleMargin, RuleNet, RuleAny:
	default:
		return "rule", fmt.Sprintf("unknown rule %q (want %s)", g.Rule, strings.Join(Rules, ", "))
	}
	if v := g.MarginPP; v != nil && !(*v >= 0 && *v < 100) {
		return "margin_pp", fmt.Sprintf("points of pass rate, from 0 to below 100, got %v", *v)
	}
	if v := g.Alpha; v != nil && !(*v > 0 && *v < 0.5) {
		return "alpha", fmt.Sprintf("an error rate above 0 and below 0.5, got %v", *v)
	}
	if sampleRule(g.Rule) && g.MarginPP != nil {
		return "margin_pp", fmt.Sprintf("rule %s counts lost tasks of this sample and takes no margin: set rule: margin to judge pass rates against margin_pp, or drop margin_pp", g.Rule)
	}
	if !sampleRule(g.Rule) && g.MaxLost != 0 {
		return "max_lost", "max_lost counts lost tasks of one sample, for rule net or any; rule margin (the default) judges pass rates against margin_pp: set rule: net or any, or drop max_lost"
	}
	switch g.Objective {
	case "", ObjectiveEither, ObjectiveLatency, ObjectiveCost:
	case ObjectiveGoodput:
		if g.SLO.TTFTMs == 0 && g.SLO.E2EMs == 0 {
			return "slo", "objective goodput needs slo.ttft_ms or slo.e2e_ms"
		}
	default:
		return "objective", fmt.Sprintf("unknown objective %q (want either, latency, cost or goodput)", g.Objective)
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"p95_regress_pct", g.P95RegressPct}, {"ttft_p95_regress_pct", g.TTFTP95RegressPct}, {"cost_per_pass_regress_pct", g.CostPerPassRegressPct}} {
		if f.v != nil && (*f.v < 0 || math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			return f.name, fmt.Sprintf("a limit in percent, 0 or more, got %v", *f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"slo.ttft_ms", g.SLO.TTFTMs}, {"slo.e2e_ms", g.SLO.E2EMs}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return f.name, fmt.Sprintf("milliseconds, 0 or more, got %v", f.v)
		}
	}
	if v := g.MaxFalseHitRate; v != nil && !(*v >= 0 && *v <= 1) {
		return "max_false_hit_rate", fmt.Sprintf("a rate from 0 to 1, got %v", *v)
	}
	if g.MaxLost < 0 {
		return "max_lost", "must not be negative"
	}
	if v := g.MinEffectPct; v != nil && !(*v >= 0 && *v < 100) {
		return "min_effect_pct", fmt.Sprintf("a share in percent from 0 to below 100, got %v", *v)
	}
	for _, w := range g.Waive {
		if !slices.Contains(Waivable, w) {
			return "waive", fmt.Sprintf("unknown criterion %q (can waive: %s)", w, strings.Join(Waivable, ", "))
		}
	}
	if g.MinPairs < 0 {
		return "min_pairs", "must not be negative"
	}
	return "", ""
}

// String states the gate in force, for the report's notes.
func (g GateConfig) String() string {
	g = g.Defaults()
	lost := "no passing task lost"
	switch {
	case g.Rule == RuleMargin:
		lost = fmt.Sprintf("quality by rule margin: per task the share of its repeats that pass, paired with the baseline's; quality holds when the %s interval of the mean difference, clustered by task, lies above -%s points of pass rate (the margin), is broken when it lies wholly below, and is otherwise inconclusive",
			figure.Pct(1-g.ErrorRate()), figure.Trim(fmt.Sprint(g.Margin()*100)))
	case g.Rule == RuleNet && g.MaxLost == 0:
		lost = "no net loss of passing tasks (lost minus gained)"
	case g.Rule == RuleNet:
		lost = fmt.Sprintf("a net loss of at most %d passing tasks (lost minus gained)", g.MaxLost)
	case g.MaxLost > 0:
		lost = fmt.Sprintf("at most %d passing tasks lost", g.MaxLost)
	}
	var rails []string
	for _, r := range []struct {
		name string
		v    *float64
	}{{"p95", g.P95RegressPct}, {"TTFT p95", g.TTFTP95RegressPct}, {"cost per pass", g.CostPerPassRegressPct}} {
		if r.v != nil {
			rails = append(rails, fmt.Sprintf("%s at most +%s%%", r.name, figure.Trim(fmt.Sprint(*r.v))))
		}
	}
	obj := map[string]string{
		ObjectiveEither:  "per-task latency or per-task cost",
		ObjectiveLatency: "per-task latency",
		ObjectiveCost:    "per-task cost",
		ObjectiveGoodput: "goodput (share of tasks passing within " + g.SLO.String() + ")",
	}[g.Objective]
	leaks := "no leaking cache hit"
	if g.Waived(WaiveLeaks) {
		leaks = "no leaking cache hit where the records can tell (unchecked hits waived)"
	}
	if w := waivedFigures(g); w != "" {
		lost += " (" + w + ")"
	}
	return fmt.Sprintf("gate: %s, %s, no invalid answer recorded ok, the same work as the baseline, a semantic cache's false hits at most %s of its similarity hits (rejected when the rate and its 95%% upper bound are above it, inconclusive when only the bound is); guardrails: %s (a latency guardrail breaks when its paired 95%% interval lies beyond the limit); accept only when %s improves by more than %s%% of the baseline's with a 95%% interval (blocks of neighbouring pairs resampled when the records are timed); at least %d pairs",
		lost, leaks, figure.Pct(g.FalseHitLimit()), words.And(rails), obj, figure.Trim(fmt.Sprint(g.MinEffect())), g.MinPairs)
}

// String writes "TTFT ≤ 200 ms and end to end ≤ 2000 ms".
func (s SLO) String() string {
	var parts []string
	if s.TTFTMs > 0 {
		parts = append(parts, "TTFT ≤ "+figure.Ms(s.TTFTMs)+" ms")
	}
	if s.E2EMs > 0 {
		parts = append(parts, "end to end ≤ "+figure.Ms(s.E2EMs)+" ms")
	}
	return strings.Join(parts, " and ")
}

// met reports whether a record counts toward goodput.
func (s SLO) met(t *records.Symbols, r *records.Rec) bool {
	return t.Attrs(r).Pass && s.Within(r.TTFTMs, r.E2EMs)
}

// Within reports whether a request's latency meets the SLO: end to end
// within E2EMs and first byte within TTFTMs (0: no limit). A request that
// took no time to first byte (ttftMs 0) is held to TTFTMs by its end.
func (s SLO) Within(ttftMs, e2eMs float64) bool {
	if s.E2EMs > 0 && e2eMs > s.E2EMs {
		return false
	}
	if ttftMs == 0 {
		ttftMs = e2eMs
	}
	return s.TTFTMs == 0 || ttftMs <= s.TTFTMs
}

// waivedFigures says which unmeasured figures the gate decides without,
// for String; "" when none.
func waivedFigures(g GateConfig) string {
	var w []string
	for _, c := range []string{WaiveQuality, WaiveCost, WaiveTTFT} {
		if g.Waived(c) {
			w = append(w, c)
		}
	}
	if len(w) == 0 {
		return ""
	}
	return "where the records measure them; unmeasured " + words.And(w) + " waived"
}
