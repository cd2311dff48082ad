// Package plan sizes an experiment before it is paid for: how many tasks,
// and how many repeats of each, a comparison needs so that the quality
// gate decides within its margin and the objective shows a given latency
// or cost effect, at the run's error rate and a stated power.
//
// Every figure is the normal approximation of the paired comparison the
// gate makes (docs/statistics.md, "Sizing a run"): per task the pass rate
// over its repeats, differences paired by task, their variance split into
// a part between tasks (which repeats cannot shrink) and a part within a
// task (the noise of identical calls, which they can).
package plan

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Defaults of the figures a plan is computed at.
const (
	DefaultPower = 0.8
	// DefaultEffectPct is the latency or cost effect a plan sizes for
	// when none is declared: 10% of the baseline's mean.
	DefaultEffectPct = 10
)

// ErrBadSettings is the error of settings no plan can be computed at.
var ErrBadSettings = errors.New("plan: bad settings")

// Settings are the decision rule a plan sizes for.
type Settings struct {
	// Alpha is the run-wide error rate (0 < Alpha < 0.5).
	Alpha float64
	// Family is the number of accept decisions the error rate is shared
	// by (candidates × objective figures), at least 1: an objective's
	// one-sided test is sized at (Alpha/2)/Family, the first and
	// strictest step of Holm's procedure, which a decision may meet.
	Family int
	// Power is the chance the run decides when the assumed truth holds
	// (0 < Power < 1).
	Power float64
	// MarginPP is the non-inferiority margin in points of pass rate
	// (0 <= MarginPP < 100).
	MarginPP float64
	// MinEffectPct is the share of the baseline's mean the objective
	// must improve by before it counts (the gate's min_effect_pct).
	MinEffectPct float64
}

// Check says which setting is out of range, naming its flag.
func (s Settings) Check() error {
	switch {
	case !(s.Alpha > 0 && s.Alpha < 0.5):
		return fmt.Errorf("%w: alpha %v: want a number in (0, 0.5)", ErrBadSettings, s.Alpha)
	case s.Family < 1:
		return fmt.Errorf("%w: family %d: want at least 1", ErrBadSettings, s.Family)
	case !(s.Power > 0 && s.Power < 1):
		return fmt.Errorf("%w: power %v: want a number in (0, 1)", ErrBadSettings, s.Power)
	case !(s.MarginPP >= 0 && s.MarginPP < 100):
		return fmt.Errorf("%w: margin-pp %v: want points of pass rate in [0, 100)", ErrBadSettings, s.MarginPP)
	case !(s.MinEffectPct >= 0 && s.MinEffectPct < 100):
		return fmt.Errorf("%w: min-effect-pct %v: want a percentage in [0, 100)", ErrBadSettings, s.MinEffectPct)
	}
	return nil
}

// z is the standard normal quantile.
func z(p float64) float64 { return distuv.UnitNormal.Quantile(p) }

// QualityZ is the normal quantile of the quality interval's lower end: the
// gate's two-sided 1−Alpha interval, so Alpha/2 on each side.
func (s Settings) QualityZ() float64 { return z(1 - s.Alpha/2) }

// ObjectiveZ is the normal quantile of an objective's one-sided test:
// Alpha/2 shared by the family, Holm's first and strictest step.
func (s Settings) ObjectiveZ() float64 { return z(1 - s.Alpha/(2*float64(s.Family))) }

// PowerZ is the normal quantile of the power.
func (s Settings) PowerZ() float64 { return z(s.Power) }

// Quality is what the sizing of the quality gate rests on: the per-task
// difference in pass rate, candidate minus baseline, as shares (not
// points).
type Quality struct {
	// Diff is the true mean difference assumed (0: equal quality).
	Diff float64
	// Between is the variance between tasks of the per-task true
	// difference: no number of repeats reduces it.
	Between float64
	// Within is the variance of one paired call's difference around its
	// task's mean: the noise of identical calls, divided by the repeats.
	// For two arms of equal quality it is the discordance, the chance that
	// two identical calls of a task disagree.
	Within float64
}

// Var is the variance of one task's mean difference over r repeats.
func (q Quality) Var(r int) float64 { return q.Between + q.Within/float64(max(r, 1)) }

// Need is a size a plan asks for; Never when no size will do (the truth
// assumed sits on the margin) and 0 with Trivial when any size will (no
// variance at all).
type Need struct {
	Tasks   int  // tasks (quality) or pairs (latency, cost)
	Never   bool // no finite size decides
	Trivial bool // nothing varies: the gate's minimum of pairs decides
}

// String is the size in words for a table cell.
func (n Need) String() string {
	switch {
	case n.Never:
		return "never"
	case n.Trivial:
		return "any"
	}
	return fmt.Sprint(n.Tasks)
}

// Max is the larger of two needs (Never wins).
func (n Need) Max(o Need) Need {
	switch {
	case n.Never || o.Never:
		return Need{Never: true}
	case n.Trivial:
		return o
	case o.Trivial:
		return n
	}
	return Need{Tasks: max(n.Tasks, o.Tasks)}
}

// size is ceil(((za √v0 + zb √v1) / d)²), the normal-approximation
// sample size of a one-sided test of a mean at distance d from its bound,
// with variance v0 per unit at the bound (what the test's interval uses)
// and v1 under the truth assumed (what the mean varies by).
func size(za, zb, v0, v1, d float64) Need {
	switch {
	case v0 <= 0 && v1 <= 0:
		return Need{Trivial: true}
	case d <= 0 || math.IsNaN(d):
		return Need{Never: true}
	}
	r := (za*math.Sqrt(v0) + zb*math.Sqrt(v1)) / d
	n := r * r
	if n > math.MaxInt32 {
		return Need{Never: true}
	}
	return Need{Tasks: max(int(math.Ceil(n)), 2)}
}

// QualityTasks is the tasks a comparison with r repeats per task needs so
// that the gate's quality interval decides against the margin m: when the
// assumed difference Δ is above −m, that its lower end clears −m (quality
// holds), and when below, that its upper end stays under −m (the loss is
// shown). The interval is the gate's: two-sided at 1−Alpha, Student's t,
// its variance at the bound at least m(1−m), the least a change of m
// made of whole tasks has. So
//
//	n = ((t √max(V, m(1−m)) + z_power √V) / (Δ + m))²,  V = σ_b² + σ_w²/r,
//
// solved again with t at n−1 degrees of freedom until it settles.
func (s Settings) QualityTasks(q Quality, r int) Need {
	m := s.MarginPP / 100
	v := q.Var(r)
	v0 := math.Max(v, m*(1-m))
	d := math.Abs(q.Diff + m)
	need := size(s.QualityZ(), s.PowerZ(), v0, v, d)
	for range 5 {
		if need.Never || need.Trivial {
			break
		}
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(max(need.Tasks-1, 1))}
		next := size(t.Quantile(1-s.Alpha/2), s.PowerZ(), v0, v, d)
		if next == need {
			break
		}
		need = next
	}
	return need
}

// Effect is what the sizing of a latency or cost objective rests on.
type Effect struct {
	// Mean is the baseline's mean per request (ms or cost units).
	Mean float64 `json:"mean"`
	// SD is the standard deviation of the paired per-request difference,
	// candidate minus baseline.
	SD float64 `json:"sd"`
	// Pct is the improvement to detect, in percent of Mean (positive:
	// the candidate is lower).
	Pct float64 `json:"pct"`
}

// EffectPairs is the pairs (tasks × repeats) the objective needs so that
// its interval lies wholly beyond the gate's minimum effect when the true
// improvement is e.Pct: n = (z_obj + z_power)² sd² / ((Pct − min) · mean)².
func (s Settings) EffectPairs(e Effect) Need {
	return size(s.ObjectiveZ(), s.PowerZ(), e.SD*e.SD, e.SD*e.SD, (e.Pct-s.MinEffectPct)/100*e.Mean)
}

// Discordance is the chance that two identical calls of one task disagree
// when a share of the tasks varies and each call of such a task answers
// differently from its usual answer with probability flip: share · 2
// flip (1 − flip).
func Discordance(share, flip float64) float64 { return share * 2 * flip * (1 - flip) }

// Row is one line of a plan: the repeats per task and what they need.
type Row struct {
	Repeats int
	Quality Need // tasks for the quality gate
	Latency Need // tasks for the latency objective (pairs / repeats)
	Cost    Need // tasks for the cost objective
	Tasks   Need // the largest of the three that were asked for
}

// Rows sizes a comparison for each number of repeats: tasks for quality,
// and, when latency or cost is non-nil, tasks whose pairs (tasks ×
// repeats) show that effect.
func (s Settings) Rows(q Quality, latency, cost *Effect, repeats []int) []Row {
	var rows []Row
	for _, r := range repeats {
		row := Row{Repeats: r, Quality: s.QualityTasks(q, r)}
		row.Tasks = row.Quality
		if latency != nil {
			row.Latency = perTask(s.EffectPairs(*latency), r)
			row.Tasks = row.Tasks.Max(row.Latency)
		}
		if cost != nil {
			row.Cost = perTask(s.EffectPairs(*cost), r)
			row.Tasks = row.Tasks.Max(row.Cost)
		}
		rows = append(rows, row)
	}
	return rows
}

// perTask turns a need in pairs into a need in tasks of r repeats.
func perTask(n Need, r int) Need {
	if n.Never || n.Trivial {
		return n
	}
	return Need{Tasks: max((n.Tasks+r-1)/r, 2)}
}
