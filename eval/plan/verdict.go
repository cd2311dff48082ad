package plan

import (
	"math"

	"github.com/crab-testbed/crab/eval/analysis"
)

// CandidateResult is a pilot candidate's figures and what they point to.
type CandidateResult struct {
	Name       string   `json:"name"`
	Pairs      int      `json:"pairs"`
	PassDiffPP float64  `json:"pass_diff_pp"`
	SDBetween  float64  `json:"sd_between"`
	SDWithin   *float64 `json:"sd_within"` // null: not measured
	LatencyPct float64  `json:"latency_pct"`
	CostPct    *float64 `json:"cost_pct"` // null: a record of either arm carries no cost
	// PilotVerdict is the gate's verdict on the pilot itself; PointsTo
	// the verdict its figures point to at the size Tasks.
	PilotVerdict string `json:"pilot_verdict"`
	PointsTo     string `json:"points_to"`
	Quality      *int   `json:"quality_tasks"` // null: no size decides
	Objective    *int   `json:"objective_tasks"`
	Tasks        *int   `json:"tasks"`
}

// TasksOf is a need in tasks for JSON: nil when no size decides; any
// size at all is the gate's fewest pairs.
func TasksOf(n Need) *int {
	switch {
	case n.Never:
		return nil
	case n.Trivial:
		v := analysis.DefaultMinPairs
		return &v
	}
	v := max(n.Tasks, analysis.DefaultMinPairs)
	return &v
}

// PointsTo is a pilot candidate's figures and the verdict they point to,
// with the tasks (at the pilot's repeats) that would confirm it: quality
// at its measured difference, and its better objective. A candidate the
// gate rejected on the pilot for anything but quality (a guardrail, a
// leak, an invalid answer) points to reject whatever its size.
func (s Settings) PointsTo(p *Pilot, c Candidate, judged *analysis.ArmSummary) CandidateResult {
	q := s.QualityTasks(c.Quality, p.Repeats)
	res := CandidateResult{Name: c.Name, Pairs: c.Pairs, PassDiffPP: 100 * c.Quality.Diff, SDBetween: math.Sqrt(c.Quality.Between),
		LatencyPct: -c.Latency.Pct, PointsTo: analysis.VerdictNoGain, Quality: TasksOf(q)}
	if c.CostMeasured {
		v := -c.Cost.Pct
		res.CostPct = &v
	}
	otherReject := false
	if judged != nil {
		res.PilotVerdict = judged.Verdict
		otherReject = judged.Verdict == "reject" && (judged.Quality == nil || judged.Quality.Result != analysis.QualityBroken)
	}
	if c.WithinMeasured {
		v := math.Sqrt(c.Quality.Within)
		res.SDWithin = &v
	}
	obj := Need{Never: true}
	for _, e := range []Effect{c.Latency, c.Cost} {
		if !(e.Pct > s.MinEffectPct && e.Mean > 0) {
			continue
		}
		n := s.EffectPairs(e)
		if !n.Never && !n.Trivial {
			n.Tasks = max((n.Tasks+p.Repeats-1)/p.Repeats, 2)
		}
		if obj.Never || n.Trivial || (!n.Never && n.Tasks < obj.Tasks) {
			obj = n
		}
	}
	res.Objective, res.Tasks = TasksOf(obj), res.Quality
	switch {
	case c.Name == p.Control:
		res.PointsTo = "control" // the A/A twin is judged by its tests, not as a candidate
	case otherReject:
		res.PointsTo = "reject"
	case 100*c.Quality.Diff < -s.MarginPP:
		res.PointsTo = "reject"
	case !obj.Never:
		res.PointsTo, res.Tasks = "accept", TasksOf(q.Max(obj))
	}
	return res
}
