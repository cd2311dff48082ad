package capacity

import (
	"math"
	"slices"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/bootstrap"
	"github.com/crab-testbed/crab/internal/splitmix"
)

// Result is a sweep's figures and verdicts (sweep.json).
type Result struct {
	Experiment string  `json:"experiment"`
	RunID      string  `json:"run_id"`
	Config     *Config `json:"config"`
	// TimeScale is the experiment's: rates and latencies are in the
	// models' time, the wall clock ran TimeScale times as long.
	TimeScale float64     `json:"time_scale"`
	Arms      []ArmResult `json:"arms"`
	// Candidates are the capacity verdicts, one per arm after the
	// baseline (the first swept arm).
	Candidates []Verdict `json:"candidates"`
	// Quality names the rungs the quality gate was judged on.
	Quality string   `json:"quality"`
	Notes   []string `json:"notes"`
	WallS   float64  `json:"wall_s"`

	// Records are every request of the sweep, repeat = the rung's.
	Records []records.Record `json:"-"`
	// samples are each arm's resampled knees, in resample order (0:
	// below the ladder, +Inf: above it), for the ratios.
	samples [][]float64
}

// ArmResult is one arm's rungs and capacity figures. A figure the sweep
// did not measure (a knee outside the ladder, replicas without a peak)
// is null, with a note.
type ArmResult struct {
	Name  string `json:"name"`
	Rungs []Rung `json:"rungs"`
	// Knee is the rate at which the arm's share crosses the declared
	// share, with its 95% interval (KneeLo, KneeHi); null outside the
	// ladder (KneeNote says which side).
	Knee     *float64 `json:"knee_rps"`
	KneeLo   *float64 `json:"knee_lo"`
	KneeHi   *float64 `json:"knee_hi"`
	KneeNote string   `json:"knee_note,omitempty"`
	// Bracket is the rates of the last rung that held and the first that
	// did not, between which the knee was read: the ladder's resolution.
	Bracket []float64 `json:"bracket,omitempty"`
	// ImpliedKnee is the knee the simulated models' parameters imply for
	// the calls the arm made at its lowest rung that held (see SimKnee);
	// null when it calls no simulated model with a capacity.
	ImpliedKnee *float64 `json:"implied_knee_rps,omitempty"`
	// Replicas are ceil(peak / knee), the interval from the knee's ends
	// (fewest at its upper end); CostPerHour is replicas times the
	// replica's price.
	Replicas      *int     `json:"replicas"`
	ReplicasLo    *int     `json:"replicas_lo"`
	ReplicasHi    *int     `json:"replicas_hi"`
	CostPerHour   *float64 `json:"cost_per_hour"`
	CostPerHourLo *float64 `json:"cost_per_hour_lo"`
	CostPerHourHi *float64 `json:"cost_per_hour_hi"`
	// CostPerPass is the cost of every request of the rungs at or below
	// the knee over their passing requests, in the models' price unit.
	CostPerPass *float64 `json:"cost_per_pass"`
	// PassShare is the passing share of those requests.
	PassShare *float64 `json:"pass_share"`

	where int // kneeInside, kneeBelow or kneeAbove
}

// Knee positions: where the crossing lies against the ladder.
const (
	kneeInside = iota
	kneeBelow  // the lowest rung did not hold
	kneeAbove  // every rung held
)

// kneeOf reads the knee off rungs sorted by rate, share(i) being rung i's
// share: between the last rung that held and the first that did not, on
// the straight line through the two of the criterion that failed (the
// share falling to the declared one, the queue's growth rising to its
// limit; the lower crossing when both failed).
func kneeOf(rungs []Rung, target, growthLimit float64, share func(i int) float64) (float64, int) {
	for i := range rungs {
		s := share(i)
		if s >= target && !rungs[i].Growing {
			continue
		}
		if i == 0 {
			return 0, kneeBelow
		}
		r0, r1 := rungs[i-1].Rate, rungs[i].Rate
		knee := r1
		if s0 := share(i - 1); s < target && s0 > s {
			knee = min(knee, r0+(r1-r0)*(s0-target)/(s0-s))
		}
		if g0, g1 := rungs[i-1].GrowthMs, rungs[i].GrowthMs; rungs[i].Growing && g1 > g0 {
			knee = min(knee, r0+(r1-r0)*(growthLimit-g0)/(g1-g0))
		}
		return max(knee, r0), kneeInside
	}
	return math.Inf(1), kneeAbove
}

// kneeSamples are the knees of resamples of every rung's measured blocks,
// drawn with replacement: 0 where a resample's lowest rung did not hold,
// +Inf where every rung held.
// A rung's growth is its own in every resample: it needs the blocks in
// their order.
func kneeSamples(rungs []Rung, target, growthLimit float64, resamples int, g *splitmix.Rand) []float64 {
	out := make([]float64, resamples)
	shares := make([]float64, len(rungs))
	for b := range out {
		for i, r := range rungs {
			n, c := 0, 0
			for range r.Blocks {
				blk := r.Blocks[g.Below(uint64(len(r.Blocks)))]
				n += blk.N
				c += blk.Counted
			}
			shares[i] = 1
			if n > 0 {
				shares[i] = float64(c) / float64(n)
			}
		}
		out[b], _ = kneeOf(rungs, target, growthLimit, func(i int) float64 { return shares[i] })
	}
	return out
}

// interval is the percentile 95% interval of samples, an end outside the
// ladder (0 or +Inf) or undefined returned as nil.
func interval(samples []float64) (lo, hi *float64) {
	l, h := rawInterval(samples)
	return finite(l), finite(h)
}

// rawInterval is the interval of samples with its ends as they are (0 and
// +Inf included); NaN, NaN when more than 5% of them are undefined (NaN:
// both knees beyond the same end of the ladder).
func rawInterval(samples []float64) (lo, hi float64) {
	s := slices.DeleteFunc(slices.Clone(samples), math.IsNaN)
	if len(s) == 0 || len(s) < len(samples)*95/100 {
		return math.NaN(), math.NaN()
	}
	slices.Sort(s)
	return bootstrap.Interval(s)
}

// finite is v, or nil for 0, NaN and the infinities (an end outside the
// ladder).
func finite(v float64) *float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// ratioInterval is the 95% interval of the candidate's knee over the
// baseline's, resample by resample. A knee beyond an end of the ladder in
// a resample is known only to lie beyond that end, so the lower end of
// the interval is read off the least ratio each resample allows (the
// candidate's knee at its least, the baseline's at its most) and the
// upper end off the greatest; an end the ladder cannot bound is nil.
func ratioInterval(cand, base []float64, candRungs, baseRungs []Rung) (lo, hi *float64) {
	if len(cand) == 0 || len(cand) != len(base) || len(candRungs) == 0 || len(baseRungs) == 0 {
		return nil, nil
	}
	least := make([]float64, len(cand))
	most := make([]float64, len(cand))
	for i := range cand {
		cMin, cMax := kneeRange(cand[i], candRungs)
		bMin, bMax := kneeRange(base[i], baseRungs)
		least[i] = divide(cMin, bMax, 0)
		most[i] = divide(cMax, bMin, math.Inf(1))
	}
	slices.Sort(least)
	slices.Sort(most)
	l, _ := bootstrap.Interval(least)
	_, h := bootstrap.Interval(most)
	return finite(l), finite(h)
}

// kneeRange is the least and the most a resampled knee can be: itself
// inside the ladder, 0 to the lowest rung's rate below it, the highest
// rung's rate to +Inf above it.
func kneeRange(k float64, rungs []Rung) (lo, hi float64) {
	switch {
	case k == 0:
		return 0, rungs[0].Rate
	case math.IsInf(k, 1):
		return rungs[len(rungs)-1].Rate, math.Inf(1)
	}
	return k, k
}

// divide is a / b, or unknown (0/0, Inf/Inf) where nothing is known.
func divide(a, b, unknown float64) float64 {
	q := a / b
	if math.IsNaN(q) {
		return unknown
	}
	return q
}

// replicas is ceil(peak / knee); nil without a knee or a peak.
func replicas(peak float64, knee *float64) *int {
	if peak <= 0 || knee == nil || *knee <= 0 {
		return nil
	}
	n := int(math.Ceil(peak / *knee - 1e-9))
	return &n
}

// times is n × price; nil without either.
func times(n *int, price float64) *float64 {
	if n == nil || price <= 0 {
		return nil
	}
	v := float64(*n) * price
	return &v
}
