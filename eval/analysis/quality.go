package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// TaskOutcomes counts one task's matched pairs (the same task and repeat
// on both arms) by which side passed.
type TaskOutcomes struct {
	Task     string
	Both     int // both passed
	BaseOnly int // the baseline passed, the candidate did not
	CandOnly int // the candidate passed, the baseline did not
	Neither  int
	// BaseCost and CandCost are the two sides' costs over the pairs.
	BaseCost, CandCost float64
}

func (o *TaskOutcomes) add(base, cand bool) {
	switch {
	case base && cand:
		o.Both++
	case base:
		o.BaseOnly++
	case cand:
		o.CandOnly++
	default:
		o.Neither++
	}
}

// Repeats is the task's number of matched pairs.
func (o TaskOutcomes) Repeats() int { return o.Both + o.BaseOnly + o.CandOnly + o.Neither }

// Diff is the candidate's pass rate on the task minus the baseline's, over
// its matched repeats: from -1 to 1.
func (o TaskOutcomes) Diff() float64 {
	r := o.Repeats()
	if r == 0 {
		return 0
	}
	return float64(o.CandOnly-o.BaseOnly) / float64(r)
}

// PassRateDelta is a candidate's pass rate minus the baseline's, paired
// by task, with its interval; shares of 1 (0.02 is 2 points).
type PassRateDelta struct {
	Tasks int
	Delta float64 // mean over tasks of the per-task difference
	Low   float64 // the interval at the level asked for
	High  float64
	// P is the two-sided p-value of no difference, from the same
	// statistic as the interval.
	P float64
}

// QualityInterval is rule margin's interval of the mean per-task
// difference in pass rate (candidate - baseline, each task's difference
// over its repeats), clustered by task, at level 1 - alpha (two-sided).
//
// The task is the unit: each contributes one difference whatever its
// repeats, so tasks whose outcome varies from call to call widen the
// interval by exactly the spread they show. The interval holds the
// differences δ that a t test of the mean (n - 1 degrees of freedom) does
// not reject, with the variance taken as the larger of the sample
// variance and |δ|(1 - |δ|), the least variance a change of δ has when it
// comes from whole tasks that switch (a score interval, as Wilson's and
// Tango's are). A plain t or bootstrap interval fails exactly where a
// quality gate needs it: when most differences are 0 it collapses to
// nothing (100 tasks that all agree give [0, 0], though a candidate 2
// points worse agrees on all 100 one time in seven), and its coverage
// falls far below 95%. With the floor, n tasks that all agree give about
// ±t²/n, the exact binomial bound on a loss no task showed, whatever the
// repeats (a loss that is the same on every call repeats cannot reveal);
// where tasks do move, their spread takes over and the interval is the
// t interval. The p-value is the same test's at δ = 0, where the floor is
// 0: outcome noise alone, as wide as it is, never shows a difference.
func QualityInterval(diffs []float64, alpha float64) PassRateDelta {
	n := len(diffs)
	if n == 0 {
		return PassRateDelta{Delta: math.NaN(), Low: math.NaN(), High: math.NaN(), P: math.NaN()}
	}
	sum, sumsq := 0.0, 0.0
	for _, d := range diffs {
		sum += d
		sumsq += d * d
	}
	return momentsInterval(float64(n), sum, sumsq, alpha)
}

// momentsInterval is QualityInterval from n tasks' sum and sum of squares
// of differences; n need not be whole, so that the tasks needed to decide
// can be found for the moments seen.
func momentsInterval(n, sum, sumsq, alpha float64) PassRateDelta {
	m := sum / n
	s2 := 0.0
	if n > 1 {
		s2 = math.Max(0, (sumsq-n*m*m)/(n-1))
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: math.Max(n-1, 1)}
	q := t.Quantile(1 - alpha/2)
	// stat is the t statistic of the mean against δ = d.
	stat := func(d float64) float64 {
		v := math.Max(s2, math.Abs(d)*(1-math.Abs(d)))
		switch {
		case m == d:
			return 0
		case v == 0:
			return math.Copysign(math.Inf(1), m-d)
		}
		return (m - d) / math.Sqrt(v/n)
	}
	// The ends are where |stat| reaches q: found by bisection, stat
	// falling as d rises on either side of the mean.
	end := func(from, to float64) float64 {
		if math.Abs(stat(from)) < q {
			return from
		}
		for range 60 {
			mid := (from + to) / 2
			if math.Abs(stat(mid)) >= q {
				from = mid
			} else {
				to = mid
			}
		}
		return (from + to) / 2
	}
	r := PassRateDelta{Tasks: int(math.Round(n)), Delta: m, Low: end(-1, m), High: end(1, m), P: 1}
	if z := stat(0); z != 0 {
		r.P = math.Min(1, 2*t.Survival(math.Abs(z)))
	}
	return r
}

// Quality results (QualityCheck.Result).
const (
	QualityHolds        = "holds"
	QualityBroken       = "broken"
	QualityInconclusive = "inconclusive"
)

// QualityCheck is the quality rule's figures for one candidate (summary
// .json's per-arm quality object). Differences are in points of pass rate.
type QualityCheck struct {
	Rule string `json:"rule"`
	// Tasks is the number of tasks paired with the baseline's.
	Tasks int `json:"tasks"`
	// Delta is the mean per-task difference in pass rate, candidate -
	// baseline, in points; Interval its interval at the run's error rate
	// (95% by default), clustered by task (QualityInterval).
	Delta    float64    `json:"delta"`
	Interval [2]float64 `json:"interval"`
	// Margin is rule margin's non-inferiority margin in points (null for
	// a sample rule).
	Margin *float64 `json:"margin"`
	// Result is holds, broken or inconclusive.
	Result string `json:"result"`
	// TasksToDecide is, for an inconclusive result, about how many tasks
	// (at the same repeats) would decide it at the spread measured here
	// and the noise floor; null when no number would.
	TasksToDecide *int `json:"tasks_to_decide,omitempty"`
	// RepeatsToDecide is, for an inconclusive result on a run whose noise
	// floor was measured, about how many repeats of the same tasks would
	// decide it, the call-to-call noise averaged down and the differences
	// between tasks left as measured; null when no number up to
	// maxRepeatsToDecide would (the spread is between tasks, not calls).
	RepeatsToDecide *int `json:"repeats_to_decide,omitempty"`
}

// maxRepeatsToDecide bounds the repeats QualityCheck.RepeatsToDecide
// proposes.
const maxRepeatsToDecide = 50

// diffs are the per-task differences of a comparison's tasks.
func taskDiffs(tasks []TaskOutcomes) []float64 {
	d := make([]float64, len(tasks))
	for i, t := range tasks {
		d[i] = t.Diff()
	}
	return d
}

// qualityCheck applies rule margin (or describes a sample rule's data on
// the same figures) to a candidate's paired tasks. With sizing, an
// inconclusive result gets the tasks that would decide it, at the larger
// of the spread seen and the one an equal candidate shows at the noise
// floor, and the repeats that would, where the noise floor was measured.
func qualityCheck(p *Paired, g GateConfig, noise *Noise, sizing bool) *QualityCheck {
	if p == nil || len(p.tasks) == 0 {
		return nil
	}
	diffs := taskDiffs(p.tasks)
	iv := QualityInterval(diffs, g.ErrorRate())
	q := &QualityCheck{Rule: g.Rule, Tasks: iv.Tasks, Delta: iv.Delta * 100, Interval: [2]float64{iv.Low * 100, iv.High * 100}}
	if sampleRule(g.Rule) {
		q.Result = QualityHolds // or broken: the sample rule's own count decides (decide sets it)
		return q
	}
	m := g.Margin()
	mpp := m * 100
	q.Margin = &mpp
	switch {
	case iv.Low > -m:
		q.Result = QualityHolds
	case iv.High < -m:
		q.Result = QualityBroken
	case !sizing:
		q.Result = QualityInconclusive
	default:
		q.Result = QualityInconclusive
		n := float64(len(diffs))
		sum, sumsq := 0.0, 0.0
		for _, d := range diffs {
			sum += d
			sumsq += d * d
		}
		reps := meanRepeats(p)
		if k := TasksToDecide(sum/n, math.Max(sumsq/n, noise.m2(reps)), g.ErrorRate(), m); k > 0 {
			q.TasksToDecide = &k
		}
		if noise.measured() && *noise.PerCall > 0 {
			// A task's difference has mean square mean² + τ² + q/R: the
			// calls' noise q over R repeats, and τ² between tasks.
			mean, perCall := sum/n, *noise.PerCall
			between := math.Max(0, sumsq/n-mean*mean-perCall/reps)
			for r := int(math.Floor(reps)) + 1; r <= maxRepeatsToDecide; r++ {
				m2 := mean*mean + between + perCall/float64(r)
				if iv := momentsInterval(n, sum, m2*n, g.ErrorRate()); iv.Low > -m || iv.High < -m {
					q.RepeatsToDecide = &r
					break
				}
			}
		}
	}
	return q
}

// maxTasksToDecide bounds the search of TasksToDecide.
const maxTasksToDecide = 10_000_000

// TasksToDecide is the fewest tasks at which rule margin's interval
// (QualityInterval, at level 1 - alpha) decides, lying wholly above or
// wholly below -margin, for tasks whose differences in pass rate have
// mean delta and mean square m2 (the spread of one task's difference, its
// call-to-call noise included, at the repeats per task measured); 0 when
// no number up to ten million would (delta at the margin). delta, m2 and
// margin are shares (0.02 for 2 points).
func TasksToDecide(delta, m2, alpha, margin float64) int {
	decides := func(n int) bool {
		iv := momentsInterval(float64(n), delta*float64(n), m2*float64(n), alpha)
		return iv.Low > -margin || iv.High < -margin
	}
	if !decides(maxTasksToDecide) {
		return 0
	}
	lo, hi := 1, maxTasksToDecide // decides(hi) holds
	for lo < hi {
		mid := lo + (hi-lo)/2
		if decides(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// qualityWords writes a quality check for a reason: "pass rate -1.2
// points vs baseline over 40 tasks, 95% interval -3.4 to +1.0"; with a
// margin, the interval's ends print the digits that show their side of it.
func qualityWords(q *QualityCheck, base string, alpha float64) string {
	limit := math.NaN()
	if q.Margin != nil {
		limit = -*q.Margin
	}
	return fmt.Sprintf("pass rate %s points vs %s over %s, %s interval %s to %s", signedPts(q.Delta, math.NaN()), base, words.Count(q.Tasks, "task"),
		figure.Pct(1-alpha), signedPts(q.Interval[0], limit), signedPts(q.Interval[1], limit))
}

// signedPts writes points of pass rate with their sign and one decimal,
// or as many more as it takes to print v on its own side of limit (NaN:
// none), so -1.96 is never printed as -2 beside a margin of 2 points.
func signedPts(v, limit float64) string {
	s := figure.Fixed(v, 1, 2)
	for dec := 2; dec <= 6 && !math.IsNaN(limit) && v != limit; dec++ {
		back, err := strconv.ParseFloat(s, 64)
		if err == nil && (back > limit) == (v > limit) && back != limit {
			break
		}
		s = figure.Fixed(v, dec, 2)
	}
	if s == "0" || s == "-0" {
		return "0"
	}
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

// movedMost names the tasks whose pass rate fell most, worst first (ties
// in task order).
func movedMost(tasks []TaskOutcomes) []string {
	var down []TaskOutcomes
	for _, t := range tasks {
		if t.Diff() < 0 {
			down = append(down, t)
		}
	}
	slices.SortStableFunc(down, func(a, b TaskOutcomes) int {
		switch da, db := a.Diff(), b.Diff(); {
		case da < db:
			return -1
		case da > db:
			return 1
		}
		return 0
	})
	ids := make([]string, len(down))
	for i, t := range down {
		ids[i] = t.Task
		if r := t.Repeats(); r > 1 {
			ids[i] += fmt.Sprintf(" (%d of %d repeats fewer)", t.BaseOnly-t.CandOnly, r)
		}
	}
	return ids
}

// Decide is Summarize for records held in memory: the gate's decision on
// every candidate (with opt.Gate's rule, margin and error rate), computed
// in process exactly as crab report computes it from files. Tools that
// size or calibrate a gate (crab plan, a calibration harness) call it on
// generated or pilot records and read each arm's Verdict, Quality and
// Paired figures, and the Summary's Noise and Decision.
func Decide(recs []records.Record, opt Options) (*Summary, error) {
	set, err := records.SetOf(recs)
	if err != nil {
		return nil, err
	}
	return Summarize(set, opt)
}

// costPerPassRatio is the candidate's cost per pass over the baseline's,
// over the paired tasks, with its interval at level 1 - alpha, clustered
// by task: cost per pass moves with every pass, so where outcomes vary
// from call to call its exact value is no more certain than the pass
// rate. The interval is the delta method's on the log of the ratio of
// four totals (the task is the unit: each task's share of each total is
// its influence), with a t quantile; it needs no resampling, so the gate
// recomputes it exactly on edited outcomes. Nil when either side passes
// nothing or costs nothing.
func costPerPassRatio(tasks []TaskOutcomes, alpha float64) *Ratio {
	var cb, cc, pb, pc float64
	for _, t := range tasks {
		cb, cc = cb+t.BaseCost, cc+t.CandCost
		pb += float64(t.Both + t.BaseOnly)
		pc += float64(t.Both + t.CandOnly)
	}
	n := float64(len(tasks))
	if cb <= 0 || cc <= 0 || pb == 0 || pc == 0 || n < 2 {
		return nil
	}
	point := (cc / pc) / (cb / pb)
	v := 0.0
	for _, t := range tasks {
		z := t.CandCost/cc - float64(t.Both+t.CandOnly)/pc - t.BaseCost/cb + float64(t.Both+t.BaseOnly)/pb
		v += z * z
	}
	se := math.Sqrt(v * n / (n - 1))
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(1 - alpha/2)
	return &Ratio{Point: point, CILow: point * math.Exp(-q*se), CIHigh: point * math.Exp(q*se)}
}
