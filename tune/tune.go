package tune

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/crab-testbed/crab/internal/splitmix"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
)

// Errors of the tuner.
var (
	// ErrConfig is a tuning setting out of range.
	ErrConfig = errors.New("tune: bad tuning config")
	// ErrTooFewSamples is a task set that cannot be split into a
	// non-empty calibration and a non-empty holdout side.
	ErrTooFewSamples = errors.New("tune: too few distinct questions to split")
)

// OutcomeTimeout is the outcome of a call that ran out of its deadline; a
// cascade does not escalate it.
const OutcomeTimeout = "timeout"

// Outcome is what one model did with one task when called through the
// experiment's contract and retry layers.
type Outcome struct {
	Outcome    string  `json:"outcome"`    // ok, error, timeout, contract_fail, ...
	OK         bool    `json:"ok"`         // the answer came back and met the contract
	Pass       bool    `json:"pass"`       // OK, category (and review flag) right, own scope
	Cost       Figure  `json:"cost"`       // every attempt; unmeasured when the model has no declared price
	LatencyMs  float64 `json:"latency_ms"` // model time of every attempt
	Confidence float64 `json:"confidence"` // the model's stated confidence; 0 = unknown
	// Model is the experiment's name of the model, and PriceAt where its
	// price is declared (FILE: models[i]), for what a report says of a
	// cost it could not measure.
	Model   string `json:"-"`
	PriceAt string `json:"-"`
}

// Sample is one task of an outcome table: what a router sees of it (score
// and features, computed from the request alone), what each model did with
// it, and the labels a report groups by. Key groups samples that ask the
// same question (see QuestionKey): a split keeps them on one side.
type Sample struct {
	ID       string
	Group    string
	Key      string
	Score    float64
	Features router.Features
	// Why, when set, explains Score by the features the scorer in use
	// read (a learned scorer's strongest weights for this text); reports
	// show it instead of Features, which are the built-in scorer's.
	Why   []router.Contribution
	Small Outcome
	Large Outcome
	// Req is the request as a router sees it (text, scope), for a
	// scorer that is fitted on the table (see Learner); nil otherwise.
	Req *model.Request `json:"-"`
}

// QuestionKey normalises a ticket text for grouping repeats: case folded,
// runs of white space collapsed, leading and trailing space and
// punctuation removed. Translations of one question are different texts
// and get different keys.
func QuestionKey(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	space := false
	for _, r := range strings.ToLower(text) {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return strings.TrimFunc(b.String(), func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// calls says which models a policy calls for s at threshold t.
func calls(policy string, s *Sample, t float64) (small, large bool) {
	if policy == router.PolicyCascade {
		// As NewCascade: a small call that used up the request's deadline
		// is not escalated.
		return true, s.Small.Outcome != OutcomeTimeout && (router.CascadeConfig{Confidence: t}).Escalate(s.Small.OK, s.Small.Confidence)
	}
	if router.Clamp(s.Score) >= t {
		return false, true
	}
	return true, false
}

// Misroutes counts routing mistakes, judged by what the other model did,
// and their cost.
//
//   - Under: answered by the small model, which failed where the large one
//     passes. Cost: the large calls that would have fixed them.
//   - Over: answered by the large model where the small one passes. Cost:
//     what the large call cost beyond the small one (for a cascade, the
//     whole escalation).
//   - Hopeless: both models fail. Cost: everything spent on them.
type Misroutes struct {
	Under    int `json:"under"`
	Over     int `json:"over"`
	Hopeless int `json:"hopeless"`
}

// MisrouteCost is the cost attached to each misroute kind (see Misroutes).
type MisrouteCost struct {
	Under    Figure `json:"under"`
	Over     Figure `json:"over"`
	Hopeless Figure `json:"hopeless"`
}

// Point is a policy at one threshold over one side of a split.
type Point struct {
	Threshold   float64 `json:"threshold"`
	N           int     `json:"n"`
	Large       int     `json:"large"`        // requests that called the large model
	StrongShare float64 `json:"strong_share"` // Large / N
	Pass        int     `json:"pass"`
	Cost        Figure  `json:"cost"`
	CostPerPass *Figure `json:"cost_per_pass"` // nil when nothing passes
	// LatencyMeanMs is the mean of the calls' latencies (a cascade's
	// escalated request counts both calls).
	LatencyMeanMs float64      `json:"latency_mean_ms"`
	Misroutes     Misroutes    `json:"misroutes"`
	MisrouteCost  MisrouteCost `json:"misroute_cost"`
	// Frontier is true when no other point of the same curve is at least
	// as cheap and passes more, or is cheaper and passes as many.
	Frontier bool `json:"frontier,omitempty"`
}

// CostPerRequest is Cost / N (0 for an empty side).
func (p *Point) CostPerRequest() Figure {
	if p.N == 0 {
		return 0
	}
	return p.Cost / Figure(p.N)
}

// PassRate is Pass / N (0 for an empty side).
func (p *Point) PassRate() float64 {
	if p.N == 0 {
		return 0
	}
	return float64(p.Pass) / float64(p.N)
}

// class of a sample by what both models do: which of them pass.
const (
	classBoth      = iota // both pass
	classSmallOnly        // only the small model passes
	classLargeOnly        // only the large model passes
	classNeither          // both fail
	numClasses
)

func classOf(s *Sample) int {
	switch {
	case s.Small.Pass && s.Large.Pass:
		return classBoth
	case s.Small.Pass:
		return classSmallOnly
	case s.Large.Pass:
		return classLargeOnly
	}
	return classNeither
}

// classNames label the columns of a Matrix.
var classNames = [numClasses]string{"both_pass", "small_only", "large_only", "both_fail"}

// ClassNames returns the labels of a Matrix's columns, in order, as a copy
// the caller may change.
func ClassNames() []string { return append([]string(nil), classNames[:]...) }

// Cell is one cell of a misroute matrix.
type Cell struct {
	N    int    `json:"n"`
	Pass int    `json:"pass"` // requests of the cell the policy got right
	Cost Figure `json:"cost"` // what the policy spent on them
}

// Matrix crosses where a policy sent requests (rows: answered by the small
// model, answered by the large model) with what the two models do on them
// (columns, ClassNames(): both pass, only small passes, only large passes,
// both fail). Under-routes are small × large_only, over-routes large ×
// (both_pass, small_only), hopeless requests are the both_fail column.
type Matrix struct {
	Small [numClasses]Cell `json:"small"`
	Large [numClasses]Cell `json:"large"`
}

// replay computes the point of a policy at threshold t over samples[idx]; it
// fills m when m is not nil.
func replay(policy string, samples []Sample, idx []int, t float64, m *Matrix) Point {
	p := Point{Threshold: t, N: len(idx)}
	lat := 0.0
	for _, i := range idx {
		s := &samples[i]
		useSmall, useLarge := calls(policy, s, t)
		var cost Figure
		ms := 0.0
		if useSmall {
			cost += s.Small.Cost
			ms += s.Small.LatencyMs
		}
		final := &s.Small
		if useLarge {
			p.Large++
			cost += s.Large.Cost
			ms += s.Large.LatencyMs
			final = &s.Large
		}
		p.Cost += cost
		lat += ms
		if final.Pass {
			p.Pass++
		}
		c := classOf(s)
		switch {
		case c == classNeither:
			p.Misroutes.Hopeless++
			p.MisrouteCost.Hopeless += cost
		case !useLarge && c == classLargeOnly:
			p.Misroutes.Under++
			p.MisrouteCost.Under += s.Large.Cost
		case useLarge && (c == classBoth || c == classSmallOnly):
			p.Misroutes.Over++
			if useSmall {
				p.MisrouteCost.Over += s.Large.Cost
			} else {
				p.MisrouteCost.Over += s.Large.Cost - s.Small.Cost
			}
		}
		if m != nil {
			row := &m.Small
			if useLarge {
				row = &m.Large
			}
			row[c].N++
			row[c].Cost += cost
			if final.Pass {
				row[c].Pass++
			}
		}
	}
	if p.N > 0 {
		p.StrongShare = float64(p.Large) / float64(p.N)
		p.LatencyMeanMs = lat / float64(p.N)
	}
	if p.Pass > 0 {
		cpp := p.Cost / Figure(p.Pass)
		p.CostPerPass = &cpp
	}
	return p
}

// Candidates are the thresholds a sweep tries over samples[idx]: for the
// threshold router every distinct score (each sends that score and every
// higher one to the large model; the lowest sends everything) and 1 (no
// score of the built-in scorer reaches it: everything small); for the
// cascade 0 (escalate only failed answers), every distinct confidence of
// the small model's answers (escalate those below it) and 1 (escalate
// every answer below full confidence). Sorted ascending.
func Candidates(policy string, samples []Sample, idx []int) []float64 {
	seen := map[float64]bool{1: true}
	out := []float64{1}
	add := func(v float64) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	if policy == router.PolicyCascade {
		add(0)
	}
	for _, i := range idx {
		if policy == router.PolicyCascade {
			add(min(max(samples[i].Small.Confidence, 0), 1))
		} else {
			add(router.Clamp(samples[i].Score))
		}
	}
	sort.Float64s(out)
	return out
}

// Sweep evaluates the policy at every candidate threshold over
// samples[idx] and marks the cost–pass Pareto frontier.
func Sweep(policy string, samples []Sample, idx []int) []Point {
	ts := Candidates(policy, samples, idx)
	pts := make([]Point, len(ts))
	for i, t := range ts {
		pts[i] = replay(policy, samples, idx, t, nil)
	}
	markFrontier(pts)
	return pts
}

// markFrontier sets Frontier on the points no other point dominates: none
// is at most as costly and passes more, or is cheaper and passes as many.
// Of several points with the same cost and passes only the first is marked.
// Where a cost is not measured, fewer large-model calls stand for cheaper.
func markFrontier(pts []Point) {
	price := func(p *Point) float64 { return float64(p.Cost) }
	if !costed(pts) {
		price = func(p *Point) float64 { return float64(p.Large) }
	}
	for i := range pts {
		pts[i].Frontier = true
		for j := range pts {
			a, b := &pts[j], &pts[i]
			ca, cb := price(a), price(b)
			if ca <= cb && a.Pass >= b.Pass && (ca < cb || a.Pass > b.Pass || j < i) {
				pts[i].Frontier = false
				break
			}
		}
	}
}

// Rule is how a threshold is chosen from a calibration sweep.
type Rule struct {
	// MaxPassLoss: the cheapest threshold whose pass count is at least the
	// all-large pass count minus MaxPassLoss wins; where a cost is not
	// measured, the one calling the large model least.
	MaxPassLoss int `json:"max_pass_loss"`
	// Budget, when > 0, replaces MaxPassLoss: the threshold with the most
	// passes whose cost per request is at most Budget wins (the cheaper on
	// a tie). When no threshold fits, the cheapest one is chosen and the
	// choice says so.
	Budget float64 `json:"budget,omitempty"`
}

// Choice is a chosen threshold and why it was chosen.
type Choice struct {
	Index     int // into the sweep
	Threshold float64
	Met       bool   // false: no threshold met the rule, the fallback was taken
	Why       string // one sentence
}

// Choose picks a threshold from a sweep by rule. allLargePass is the
// all-large pass count on the same side. Ties go to the cheaper point,
// then to the one with more passes, then to the one calling the large
// model less. When a point's cost is not measured, no point is judged by
// cost: the one calling the large model less is taken for the cheaper,
// and a budget is met by no point whose cost is unmeasured.
func Choose(sweep []Point, allLargePass int, rule Rule) Choice {
	known := costed(sweep)
	better := func(a, b *Point) bool { // a is preferred to b on a tie of the rule's target
		if !known && a.Large != b.Large {
			return a.Large < b.Large
		}
		if known && a.Cost != b.Cost {
			return a.Cost < b.Cost
		}
		if a.Pass != b.Pass {
			return a.Pass > b.Pass
		}
		return a.Large < b.Large
	}
	best := -1
	if rule.Budget > 0 {
		for i := range sweep {
			p := &sweep[i]
			if c := p.CostPerRequest(); !c.Measured() || float64(c) > rule.Budget {
				continue
			}
			if best < 0 || p.Pass > sweep[best].Pass || p.Pass == sweep[best].Pass && better(p, &sweep[best]) {
				best = i
			}
		}
		if best >= 0 {
			return Choice{Index: best, Threshold: sweep[best].Threshold, Met: true,
				Why: fmt.Sprintf("most passes (%d) at a cost per request of at most %s (budget %s)", sweep[best].Pass, fmtFloat(float64(sweep[best].CostPerRequest())), fmtFloat(rule.Budget))}
		}
		for i := range sweep {
			if best < 0 || better(&sweep[i], &sweep[best]) {
				best = i
			}
		}
		return Choice{Index: best, Threshold: sweep[best].Threshold,
			Why: fmt.Sprintf("no threshold fits the budget %s per request; the cheapest (%s per request) is chosen", fmtFloat(rule.Budget), fmtCost(sweep[best].CostPerRequest()))}
	}
	need := allLargePass - rule.MaxPassLoss
	for i := range sweep {
		p := &sweep[i]
		if p.Pass < need {
			continue
		}
		if best < 0 || better(p, &sweep[best]) {
			best = i
		}
	}
	if best >= 0 {
		what := "cheapest threshold"
		if !known {
			what = "threshold calling the large model least (cost not measured)"
		}
		return Choice{Index: best, Threshold: sweep[best].Threshold, Met: true,
			Why: fmt.Sprintf("%s passing at least %d (all-large %d minus --max-pass-loss %d)", what, max(need, 0), allLargePass, rule.MaxPassLoss)}
	}
	// Cannot happen with a sweep that includes the all-large point; kept
	// for sweeps built by hand.
	for i := range sweep {
		if best < 0 || sweep[i].Pass > sweep[best].Pass || sweep[i].Pass == sweep[best].Pass && better(&sweep[i], &sweep[best]) {
			best = i
		}
	}
	return Choice{Index: best, Threshold: sweep[best].Threshold, Why: "no threshold reaches the required pass count; the one with most passes is chosen"}
}

func fmtFloat(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", v), "0"), ".")
}

// Split divides samples into a calibration and a holdout side, seeded. The
// holdout gets about the given fraction of every group (stratified), and
// all samples sharing a Key land on the same side, so a repeated question
// cannot leak from calibration into holdout. A key's side is decided for
// the group most of its samples belong to. Both sides are in sample order.
func Split(samples []Sample, holdout float64, seed int64) (calib, hold []int, err error) {
	if !(holdout > 0 && holdout < 1) {
		return nil, nil, fmt.Errorf("%w: holdout fraction %v, want between 0 and 1", ErrConfig, holdout)
	}
	type cluster struct {
		members []int
		group   string
	}
	byKey := map[string]*cluster{}
	var order []*cluster
	for i := range samples {
		k := samples[i].Key
		if k == "" {
			k = "\x00id:" + samples[i].ID
		}
		c := byKey[k]
		if c == nil {
			c = &cluster{}
			byKey[k] = c
			order = append(order, c)
		}
		c.members = append(c.members, i)
	}
	groups := map[string][]*cluster{}
	var names []string
	for _, c := range order {
		count := map[string]int{}
		for _, i := range c.members {
			count[samples[i].Group]++
		}
		best := samples[c.members[0]].Group
		for _, i := range c.members {
			g := samples[i].Group
			if count[g] > count[best] {
				best = g
			}
		}
		c.group = best
		if groups[best] == nil {
			names = append(names, best)
		}
		groups[best] = append(groups[best], c)
	}
	if len(order) < 2 {
		return nil, nil, fmt.Errorf("%w: %d task(s), %d distinct question(s); need at least 2", ErrTooFewSamples, len(samples), len(order))
	}
	sort.Strings(names)
	side := map[*cluster]bool{} // true: holdout
	var shuffled []*cluster
	for _, g := range names {
		cs := append([]*cluster(nil), groups[g]...)
		rng := splitmix.Labelled(seed, "split:"+g)
		for i := len(cs) - 1; i > 0; i-- {
			j := int(rng.Below(uint64(i + 1)))
			cs[i], cs[j] = cs[j], cs[i]
		}
		size := 0
		for _, c := range cs {
			size += len(c.members)
		}
		target := math.Round(holdout * float64(size))
		got := 0.0
		for _, c := range cs {
			n := float64(len(c.members))
			if math.Abs(got+n-target) < math.Abs(got-target) {
				side[c] = true
				got += n
			}
		}
		shuffled = append(shuffled, cs...)
	}
	// A side left empty (tiny task sets) takes one question from the other.
	nHold := len(side)
	if nHold == 0 {
		side[shuffled[0]] = true
	} else if nHold == len(order) {
		delete(side, shuffled[0])
	}
	for _, c := range order {
		for _, i := range c.members {
			if side[c] {
				hold = append(hold, i)
			} else {
				calib = append(calib, i)
			}
		}
	}
	sort.Ints(hold)
	sort.Ints(calib)
	return calib, hold, nil
}
