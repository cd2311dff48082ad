package capacity

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/splitmix"
	"github.com/crab-testbed/crab/internal/words"
)

// Verdict is a candidate's capacity verdict against the baseline.
type Verdict struct {
	Arm string `json:"arm"`
	// Ratio is the candidate's knee over the baseline's, with its 95%
	// interval (null: a knee outside the ladder leaves it unmeasured).
	Ratio   *float64 `json:"ratio"`
	RatioLo *float64 `json:"ratio_lo"`
	RatioHi *float64 `json:"ratio_hi"`
	// Verdict is accept, reject or inconclusive; Quality the quality
	// gate's own verdict on the sweep's records.
	Verdict string   `json:"verdict"`
	Quality string   `json:"quality"`
	Reasons []string `json:"reasons"`
	// Change says what would change an inconclusive verdict, in capacity
	// terms.
	Change string `json:"change,omitempty"`
}

// analyse computes every arm's knee, replicas and cost, and the verdicts.
func (res *Result) analyse(s *eval.Setup) error {
	cfg := res.Config
	g := splitmix.New(uint64(s.Exp.Seed) ^ 0x6b6e6565) // "knee"
	res.samples = make([][]float64, len(res.Arms))
	var unpriced []string // arms with a request whose cost is unmeasured
	for k := range res.Arms {
		a := &res.Arms[k]
		knee, where := kneeOf(a.Rungs, cfg.share(), cfg.growthLimit(), func(i int) float64 { return a.Rungs[i].Share })
		a.where = where
		switch where {
		case kneeInside:
			a.Knee = &knee
			lo, hi, _ := bracket(a.Rungs)
			a.Bracket = []float64{lo, hi}
		case kneeBelow:
			a.KneeNote = fmt.Sprintf("below the ladder: the lowest rate, %s/s, did not hold; start the ladder lower", trimRate(a.Rungs[0].Rate))
		case kneeAbove:
			a.KneeNote = fmt.Sprintf("above the ladder: every rate up to %s/s held; raise the ladder", trimRate(a.Rungs[len(a.Rungs)-1].Rate))
		}
		res.samples[k] = kneeSamples(a.Rungs, cfg.share(), cfg.growthLimit(), cfg.Resamples, g)
		a.KneeLo, a.KneeHi = interval(res.samples[k])
		if a.Knee != nil && (a.KneeLo == nil || a.KneeHi == nil) && a.KneeNote == "" {
			a.KneeNote = "the interval reaches beyond the ladder"
		}
		a.Replicas = replicas(cfg.PeakRPS, a.Knee)
		a.ReplicasLo, a.ReplicasHi = replicas(cfg.PeakRPS, a.KneeHi), replicas(cfg.PeakRPS, a.KneeLo)
		a.CostPerHour = times(a.Replicas, cfg.ReplicaCostPerHour)
		a.CostPerHourLo, a.CostPerHourHi = times(a.ReplicasLo, cfg.ReplicaCostPerHour), times(a.ReplicasHi, cfg.ReplicaCostPerHour)
		cost, pass, n, costKnown := 0.0, 0, 0, true
		for _, r := range a.Rungs {
			if a.Knee == nil && where == kneeBelow || a.Knee != nil && r.Rate > *a.Knee {
				continue
			}
			if r.Cost == nil {
				costKnown = false
			} else {
				cost += *r.Cost
			}
			pass += r.Pass
			n += r.Sent
		}
		if !costKnown {
			unpriced = append(unpriced, a.Name)
		}
		if pass > 0 && costKnown {
			cpp := cost / float64(pass)
			a.CostPerPass = &cpp
		}
		if n > 0 {
			ps := float64(pass) / float64(n)
			a.PassShare = &ps
		}
	}
	q, err := res.quality(s)
	if err != nil {
		return err
	}
	base := &res.Arms[0]
	for k := 1; k < len(res.Arms); k++ {
		a := &res.Arms[k]
		v := Verdict{Arm: a.Name}
		if a.Knee != nil && base.Knee != nil {
			r := *a.Knee / *base.Knee
			v.Ratio = &r
		}
		v.RatioLo, v.RatioHi = ratioInterval(res.samples[k], res.samples[0], a.Rungs, base.Rungs)
		qa := q.arm(a.Name)
		v.Quality = qa.Verdict
		decideCapacity(&v, qa, a, base)
		res.Candidates = append(res.Candidates, v)
	}
	res.Notes = append(res.Notes,
		fmt.Sprintf("rates and latencies are in the models' time: at time_scale %g crab sent at rate/%g and read latencies times %g", res.TimeScale, res.TimeScale, 1/res.TimeScale),
		fmt.Sprintf("a rung holds when at least %s of its requests past the burn-in block are %s within %s and its queue does not grow (the median %s of its last measured blocks at most %s ms above that of its first ones, block medians' medians over each half); the knee is read off the straight line between the last rung that held and the first that did not", pct(cfg.share()), countWords(cfg.Count), cfg.SLO.String(), limitWords(cfg), figure.Ms(cfg.growthLimit())),
		fmt.Sprintf("95%% intervals: percentile bootstrap, %d resamples of each rung's %d measured blocks (the ratio resamples both arms); not corrected for several candidates", cfg.Resamples, cfg.Blocks-1),
		"each rung is played by one arm alone, on idle backends, in a seeded random order of the arms; misroute judging (a shadow call) is off, as it would load the deployment",
	)
	replays, rungs := 0, 0
	for _, a := range res.Arms {
		for _, r := range a.Rungs {
			rungs++
			if r.Replays > 0 {
				replays += r.Replays
			}
		}
	}
	res.Notes = append(res.Notes, fmt.Sprintf("a rung during which the load generator fell behind its schedule (lag p99 above %s ms: the host was slow, not the deployment) is played again, and a rung that did not hold is played once more, the better play kept (a stall of the host only slows a rung); at most %d plays a rung: %d replays over %d rungs", figure.Ms(cfg.growthLimit()), maxPlays, replays, rungs))
	if len(unpriced) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("cost/pass of %s is - : some of its requests called a model whose price the experiment does not declare (price_in_per_mtok, price_out_per_mtok), so their cost is unmeasured, not 0", words.And(unpriced)))
	}
	switch {
	case cfg.PeakRPS > 0:
		res.Notes = append(res.Notes, fmt.Sprintf("replicas = ceil(peak %s/s / knee), one replica being the deployment the sweep measured; the interval comes from the knee's", trimRate(cfg.PeakRPS)))
		if cfg.ReplicaCostPerHour == 0 {
			res.Notes = append(res.Notes, "cost/hour is - : the sweep section declares no replica_cost_per_hour")
		}
	default:
		res.Notes = append(res.Notes, "replicas and cost/hour are - : the sweep section declares no peak_rps to size for")
	}
	return nil
}

// limitWords names the latency the growth of a queue is read on.
func limitWords(c *Config) string {
	if c.SLO.TTFTMs > 0 {
		return "TTFT"
	}
	return "end-to-end latency"
}

// countWords says what counts, for the notes.
func countWords(count string) string {
	if count == CountPassing {
		return "passing"
	}
	return "answered"
}

// qualityGate is the quality gate's summary of the rungs every arm
// sustained.
type qualityGate struct{ s *analysis.Summary }

func (q qualityGate) arm(name string) *analysis.ArmSummary {
	if q.s != nil {
		for i := range q.s.Arms {
			if q.s.Arms[i].Name == name {
				return &q.s.Arms[i]
			}
		}
	}
	return &analysis.ArmSummary{Name: name, Verdict: analysis.VerdictInconclusive, Reasons: []string{"no rung every arm played to judge quality on"}}
}

// quality judges the arms' quality with the experiment's gate on the
// records of the ladder's rungs that every arm played and sustained (at or
// below every arm's knee), or on the lowest rung when none is: quality
// measured where no arm is overloaded, so that a slow arm's timeouts are
// judged as capacity, not as quality.
func (res *Result) quality(s *eval.Setup) (qualityGate, error) {
	cfg := res.Config
	var reps []int
	for i, rate := range cfg.Rates {
		ok := true
		for _, a := range res.Arms {
			played := slices.ContainsFunc(a.Rungs, func(r Rung) bool { return r.Repeat == i && !r.Refined })
			sustained := a.where == kneeAbove || a.where == kneeInside && rate <= *a.Knee
			ok = ok && played && sustained
		}
		if ok {
			reps = append(reps, i)
		}
	}
	if len(reps) == 0 {
		reps = []int{0}
	}
	var recs []records.Record
	for _, r := range res.Records {
		if slices.Contains(reps, r.Repeat) && slices.Contains(cfg.Arms, r.Arm) {
			recs = append(recs, r)
		}
	}
	rates := make([]string, len(reps))
	for i, k := range reps {
		rates[i] = trimRate(cfg.Rates[k]) + "/s"
	}
	res.Quality = "quality gate on the rungs at " + strings.Join(rates, ", ")
	set, err := records.SetOf(recs)
	if err != nil {
		return qualityGate{}, err
	}
	opt := s.SummaryOptions()
	opt.Baseline = cfg.Arms[0]
	opt.Seed = s.Exp.Seed
	opt.Design = nil
	sum, err := analysis.Summarize(set, opt)
	if err != nil {
		return qualityGate{}, err
	}
	return qualityGate{sum}, nil
}

// decideCapacity sets v's verdict: the quality gate first (a reject
// stands, an undecided gate leaves capacity undecided), then the capacity
// ratio's interval against 1.
func decideCapacity(v *Verdict, q *analysis.ArmSummary, a, base *ArmResult) {
	switch q.Verdict {
	case analysis.VerdictReject:
		v.Verdict = analysis.VerdictReject
		for _, r := range q.Reasons {
			v.Reasons = append(v.Reasons, "quality gate: "+r)
		}
		return
	case analysis.VerdictInconclusive, analysis.VerdictIncomplete:
		v.Verdict = analysis.VerdictInconclusive
		for _, r := range q.Reasons {
			v.Reasons = append(v.Reasons, "quality gate: "+r)
		}
		return
	}
	iv := ratioWords(v)
	switch {
	case v.RatioLo != nil && *v.RatioLo > 1:
		v.Verdict = analysis.VerdictAccept
		v.Reasons = append(v.Reasons, fmt.Sprintf("sustains more: capacity ratio %s", iv))
	case v.RatioHi != nil && *v.RatioHi < 1:
		v.Verdict = analysis.VerdictReject
		v.Reasons = append(v.Reasons, fmt.Sprintf("sustains less: capacity ratio %s", iv))
	default:
		v.Verdict = analysis.VerdictInconclusive
		v.Reasons = append(v.Reasons, fmt.Sprintf("capacity ratio %s: the interval holds 1", iv))
		v.Change = change(v, a, base)
	}
}

// ratioWords writes "1.31 [1.22, 1.40]", "-" for what is unmeasured.
func ratioWords(v *Verdict) string {
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f", *p)
	}
	return fmt.Sprintf("%s [%s, %s]", f(v.Ratio), f(v.RatioLo), f(v.RatioHi))
}

// change says what would decide an inconclusive capacity verdict: the
// knee the candidate would need for the interval, with its present
// spread, to clear 1, and how many times the blocks would narrow it
// enough at the present ratio.
func change(v *Verdict, a, base *ArmResult) string {
	if v.Ratio == nil || v.RatioLo == nil || v.RatioHi == nil || base.Knee == nil {
		return "both knees inside the ladder: widen the ladder so that every arm has a rung that holds and one that does not"
	}
	r, lo, hi := *v.Ratio, *v.RatioLo, *v.RatioHi
	accept := *base.Knee * (1 + (r - lo))
	reject := *base.Knee * (1 - (hi - r))
	var more string
	switch {
	case r > 1 && r-lo > 0:
		f := (r - lo) / (r - 1)
		more = fmt.Sprintf("; at the present ratio, about %.0f times the measured blocks (requests per rung) would narrow the interval to accept", math.Ceil(f*f))
	case r < 1 && hi-r > 0:
		f := (hi - r) / (1 - r)
		more = fmt.Sprintf("; at the present ratio, about %.0f times the measured blocks (requests per rung) would narrow the interval to reject", math.Ceil(f*f))
	}
	return fmt.Sprintf("accept needs the ratio's lower end above 1: with the same spread, a candidate knee above %s/s (now %s/s); reject needs its upper end below 1: a knee below %s/s%s",
		trimRate(accept), trimRate(*a.Knee), trimRate(reject), more)
}
