package plan

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
)

// Pilot is what a small run measured that a plan rests on.
type Pilot struct {
	Baseline string
	Arms     []string // every arm, the baseline first
	Tasks    int      // tasks the baseline ran
	Repeats  int      // most repeats of any baseline task
	// PassRate is the baseline's share of passing requests.
	PassRate float64
	// Noise is the discordance of identical calls (the chance two calls of
	// one task disagree), as the gate measures it (analysis.Noise's
	// PerCall): from the baseline's repeats, else from the baseline
	// against its twin; NaN when the pilot has neither.
	Noise float64
	// NoiseFrom says where Noise came from, for the output.
	NoiseFrom string
	// QualityMeasured is false when the records carry no grading.
	QualityMeasured bool
	// CostMeasured is false when the baseline's records carry no cost (a
	// model without a price); CostUnmeasured names every arm some of
	// whose records carry none.
	CostMeasured   bool
	CostUnmeasured []string
	// LatencyMean and CostMean are the baseline's means per request;
	// LatencySD and CostSD the standard deviation of one request's figure
	// within its task (over repeats) or, with one repeat, over requests.
	// CostMean and CostSD are 0 when CostMeasured is false.
	LatencyMean, LatencySD, CostMean, CostSD float64
	// LatencyPairSD and CostPairSD are the standard deviation of a paired
	// delta between two arms of equal speed and cost, for sizing a
	// declared effect; SpreadFrom says where they came from.
	LatencyPairSD, CostPairSD float64
	SpreadFrom                string
	// Control is the A/A twin's name when the pilot has one ("" when not).
	Control string
	// CostPerCall is each arm's mean cost per request; an arm in
	// CostUnmeasured has none.
	CostPerCall map[string]float64
	// Candidates are the comparisons of every other arm with the baseline.
	Candidates []Candidate
}

// Candidate is a pilot's comparison of one arm with the baseline.
type Candidate struct {
	Name  string
	Pairs int // task-and-repeat pairs
	// Quality: the measured difference and its variance components.
	Quality Quality
	// WithinMeasured is false when the pilot had one repeat and no noise
	// floor, so that all the variance was taken as between tasks.
	WithinMeasured bool
	// CostMeasured is false when a record of either arm carries no cost:
	// Cost is then zero, no effect.
	CostMeasured bool
	// Latency and Cost: the baseline's mean, the sd of the paired deltas,
	// and Pct the improvement the pilot measured (positive: lower).
	Latency, Cost Effect
}

// call is one request's figures in a pilot.
type call struct {
	pass       bool
	e2e, cost  float64
	unmeasured records.Missing
}

// armCalls is an arm's requests by task and repeat.
type armCalls map[string]map[int]call

// FromRecords measures a pilot from records: baseline names the baseline
// arm ("" = the arm called baseline, else the first), control the A/A twin
// ("" = none), and noise is the noise floor the gate measured on the same
// records (analysis.Summary's Noise; nil or unmeasured: none).
func FromRecords(set *records.RecordSet, baseline, control string, noise *analysis.Noise) (*Pilot, error) {
	t := set.Symbols()
	byArm := map[string]armCalls{}
	var order []string
	set.Each(func(r *records.Rec) {
		a := t.Attrs(r)
		if a.Warmup {
			return
		}
		arm := t.Str(r.Arm)
		if byArm[arm] == nil {
			byArm[arm] = armCalls{}
			order = append(order, arm)
		}
		task := t.Str(r.TaskID)
		if byArm[arm][task] == nil {
			byArm[arm][task] = map[int]call{}
		}
		byArm[arm][task][a.Repeat] = call{pass: a.Pass, e2e: r.E2EMs, cost: r.Cost, unmeasured: a.Unmeasured}
	})
	if len(order) == 0 {
		return nil, fmt.Errorf("plan: the pilot holds no records")
	}
	if baseline == "" {
		baseline = order[0]
		if byArm["baseline"] != nil {
			baseline = "baseline"
		}
	} else if byArm[baseline] == nil {
		return nil, fmt.Errorf("plan: no arm %q in the pilot (arms: %v)", baseline, order)
	}
	p := &Pilot{Baseline: baseline, Arms: []string{baseline}, CostPerCall: map[string]float64{}, QualityMeasured: true, CostMeasured: true, Noise: math.NaN()}
	for _, a := range order {
		if a != baseline {
			p.Arms = append(p.Arms, a)
		}
	}
	base := byArm[baseline]
	p.Tasks = len(base)
	var passes, n int
	var lat, cost, latW, costW []float64
	for _, task := range sortedTasks(base) {
		reps := base[task]
		p.Repeats = max(p.Repeats, len(reps))
		var l, c []float64
		for _, rep := range sortedKeys(reps) {
			k := reps[rep]
			n++
			if k.pass {
				passes++
			}
			p.QualityMeasured = p.QualityMeasured && !k.unmeasured.Has(records.FigureQuality)
			p.CostMeasured = p.CostMeasured && !k.unmeasured.Has(records.FigureCost)
			l, c = append(l, k.e2e), append(c, k.cost)
		}
		lat, cost = append(lat, l...), append(cost, c...)
		if len(reps) > 1 {
			latW, costW = append(latW, variance(l)), append(costW, variance(c))
		}
	}
	p.PassRate = float64(passes) / float64(max(n, 1))
	p.LatencyMean, p.CostMean = mean(lat), mean(cost)
	p.LatencySD, p.CostSD = math.Sqrt(variance(lat)), math.Sqrt(variance(cost))
	if len(latW) > 0 {
		p.LatencySD, p.CostSD = math.Sqrt(mean(latW)), math.Sqrt(mean(costW))
	}
	if !p.CostMeasured {
		p.CostMean, p.CostSD = 0, 0 // placeholders are no cost
	}
	for _, a := range p.Arms {
		var sum float64
		var k int
		measured := true
		for _, task := range sortedTasks(byArm[a]) {
			for _, rep := range sortedKeys(byArm[a][task]) {
				c := byArm[a][task][rep]
				sum += c.cost
				k++
				measured = measured && !c.unmeasured.Has(records.FigureCost)
			}
		}
		if !measured {
			p.CostUnmeasured = append(p.CostUnmeasured, a)
			continue
		}
		p.CostPerCall[a] = sum / float64(max(k, 1))
	}
	if noise != nil && noise.PerCall != nil {
		p.Noise = *noise.PerCall
		p.NoiseFrom = fmt.Sprintf("repeats of %s", noise.Arm)
		if noise.Source == analysis.NoiseTwin {
			p.NoiseFrom = fmt.Sprintf("%s against its twin %s", baseline, noise.Arm)
		}
	}
	for _, a := range p.Arms[1:] {
		p.Candidates = append(p.Candidates, compare(base, byArm[a], a, p.Noise))
	}
	p.pairSpread(control)
	return p, nil
}

// pairSpread chooses the spread of a paired delta between equal arms:
// the twin's deltas when there is a twin; else two independent calls of a
// task (√2 times one call's spread within its task) when there are
// repeats; else the median candidate's deltas, whose pairing removes what
// tasks differ by; else √2 times the spread over every request, the
// largest it can be.
func (p *Pilot) pairSpread(control string) {
	for _, c := range p.Candidates {
		if c.Name == control {
			p.Control = control
			p.LatencyPairSD, p.CostPairSD, p.SpreadFrom = c.Latency.SD, c.Cost.SD, "the twin's paired deltas"
			return
		}
	}
	if p.Repeats > 1 || len(p.Candidates) == 0 {
		p.LatencyPairSD, p.CostPairSD = math.Sqrt2*p.LatencySD, math.Sqrt2*p.CostSD
		p.SpreadFrom = "two independent calls of a task"
		if p.Repeats <= 1 {
			p.SpreadFrom += ", at the spread over every request (no repeats, twin or candidate to pair with)"
		}
		return
	}
	lat, cost := make([]float64, 0, len(p.Candidates)), make([]float64, 0, len(p.Candidates))
	for _, c := range p.Candidates {
		lat = append(lat, c.Latency.SD)
		if c.CostMeasured {
			cost = append(cost, c.Cost.SD)
		}
	}
	slices.Sort(lat)
	slices.Sort(cost)
	p.LatencyPairSD, p.CostPairSD = lat[len(lat)/2], math.Sqrt2*p.CostSD
	if len(cost) > 0 {
		p.CostPairSD = cost[len(cost)/2]
	}
	p.SpreadFrom = "the median candidate's paired deltas"
}

// compare measures candidate against base. With repeats, the within-task
// variance is the mean over tasks of the variance of the paired
// differences over their repeats, and the between-task variance what the
// task means vary beyond it. With one repeat the within-task part is the
// noise floor when there is one, the rest between tasks; without one all
// of it is taken as between tasks (repeats are then assumed not to help).
func compare(base, cand armCalls, name string, noise float64) Candidate {
	c := Candidate{Name: name, WithinMeasured: true, CostMeasured: true}
	var means, withins, dl, dc []float64
	var blat, bcost []float64
	for _, task := range sortedTasks(base) {
		var d []float64
		for _, rep := range sortedKeys(base[task]) {
			b := base[task][rep]
			k, ok := cand[task][rep]
			if !ok {
				continue
			}
			d = append(d, b2f(k.pass)-b2f(b.pass))
			dl, dc = append(dl, k.e2e-b.e2e), append(dc, k.cost-b.cost)
			c.CostMeasured = c.CostMeasured && !k.unmeasured.Has(records.FigureCost) && !b.unmeasured.Has(records.FigureCost)
			blat, bcost = append(blat, b.e2e), append(bcost, b.cost)
		}
		if len(d) == 0 {
			continue
		}
		means = append(means, mean(d))
		if len(d) > 1 {
			withins = append(withins, variance(d))
		}
	}
	c.Pairs = len(dl)
	c.Quality.Diff = mean(means)
	total := variance(means)
	switch {
	case len(withins) > 0:
		c.Quality.Within = mean(withins)
		r := float64(c.Pairs) / float64(max(len(means), 1))
		c.Quality.Between = math.Max(0, total-c.Quality.Within/r)
	case !math.IsNaN(noise):
		c.Quality.Within = noise
		c.Quality.Between = math.Max(0, total-noise)
	default:
		c.Quality.Between = total
		c.WithinMeasured = false
	}
	c.Latency = Effect{Mean: mean(blat), SD: math.Sqrt(variance(dl))}
	c.Cost = Effect{Mean: mean(bcost), SD: math.Sqrt(variance(dc))}
	if c.Latency.Mean > 0 {
		c.Latency.Pct = -100 * mean(dl) / c.Latency.Mean
	}
	if c.Cost.Mean > 0 {
		c.Cost.Pct = -100 * mean(dc) / c.Cost.Mean
	}
	if !c.CostMeasured {
		c.Cost = Effect{} // a placeholder 0 would read as free
	}
	return c
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// sortedTasks are an arm's tasks in order, so that sums are the same on
// every reading.
func sortedTasks(arm armCalls) []string { return slices.Sorted(maps.Keys(arm)) }

// sortedKeys are a task's repeats in order.
func sortedKeys(m map[int]call) []int { return slices.Sorted(maps.Keys(m)) }

// mean is NaN for no values.
func mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	return stat.Mean(x, nil)
}

// variance is the sample variance (n−1); 0 for fewer than two values.
func variance(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	return stat.Variance(x, nil)
}
