// Package capacity measures how many requests per second each arm of an
// experiment sustains within an SLO, side by side, and decides whether a
// candidate sustains more than the baseline.
//
// A sweep plays a ladder of offered rates. At every rate (a rung) each
// arm plays the first requests of the task file alone, open loop, on
// idle backends, one arm after the other in a seeded random order, so
// that each arm is measured under its own load and a drift of the backend
// falls on neighbouring rungs of every arm. A rung is cut into blocks of
// consecutive requests; the first is burn-in (the deployment fills from
// idle), and a request of the others counts when it is answered (or, with
// count passing, passes) within the SLO. A rung holds when the share that
// counts is at least the declared share. A rung is stopped as soon as it
// can no longer hold (more requests missed than the share allows), and an
// arm's ladder ends after a stopped rung or two rungs in a row that did
// not hold; the bracket between its last rung that held and the first
// that did not is then halved Refine times.
//
// The knee of an arm is the rate at which its share crosses the declared
// share: between the last rung that held before the first that did not,
// read off the straight line through the two. Its 95% interval is a
// percentile bootstrap that resamples every rung's blocks; the capacity
// ratio of a candidate to the baseline resamples both arms' blocks. For a
// declared peak, the replicas an arm needs are ceil(peak / knee), with the
// interval the knee's ends give.
//
// The verdict keeps crab's gate: quality first, on the records of the
// rungs every arm sustained (eval/analysis decides, with its guardrails),
// then capacity as the objective: accept when the ratio's interval lies
// above 1, reject when it lies below, inconclusive otherwise with what
// would change the decision.
package capacity

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/quantile"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/stack"
)

// Options are what Run needs beside the experiment's own sweep section.
type Options struct {
	// ExperimentPath is the experiment file; it must hold a sweep section.
	ExperimentPath string
	// Embedded are the built-in fixtures "embedded:NAME" references read.
	Embedded fs.FS
	// OutDir, when set, receives records.jsonl, sweep.json and sweep.html.
	OutDir string
	// Progress, when set, is told of every rung as it ends (default:
	// Run's stderr).
	Progress io.Writer
	// FailOnReject makes Run return ErrRejected when a candidate's
	// capacity verdict is reject.
	FailOnReject bool
}

// Rung is one arm at one offered rate.
type Rung struct {
	// Rate is the offered rate, requests per second in the models' time.
	Rate float64 `json:"rate"`
	// Repeat is the rung's repeat number in records.jsonl.
	Repeat int `json:"repeat"`
	// Refined marks a rung added around the knee.
	Refined bool `json:"refined,omitempty"`
	// Sent is the requests scheduled; Measured those past the burn-in
	// block; Counted the measured ones that count (Config.Count).
	Sent     int `json:"sent"`
	Measured int `json:"measured"`
	Counted  int `json:"counted"`
	// Share is Counted / Measured; Held whether it reached the declared
	// share with a queue that did not grow (Growing).
	Share float64 `json:"share"`
	Held  bool    `json:"held"`
	// GrowthMs is how much the median latency the SLO limits (TTFT when
	// it limits TTFT, else end to end) rose through the rung, in the
	// models' milliseconds: the median of the last half of the measured
	// blocks' medians less that of the first half; Growing is set when it
	// rose by more than a tenth of that limit: a queue that grows through
	// the rung is over saturation even while the rung is too short for it
	// to break the SLO.
	GrowthMs float64 `json:"growth_ms"`
	Growing  bool    `json:"growing,omitempty"`
	// Stopped marks a rung cut short once it could no longer hold: the
	// requests not yet sent are recorded as cancelled and count as missed.
	Stopped bool `json:"stopped,omitempty"`
	// Goodput is the measured requests that pass within the SLO, and
	// GoodputRPS Rate times their share.
	Goodput    int     `json:"goodput"`
	GoodputRPS float64 `json:"goodput_rps"`
	// P95Ms and TTFTP95Ms are the measured requests' nearest-rank 95th
	// percentiles, in the models' milliseconds (null: none measured).
	P95Ms     *float64 `json:"p95_ms"`
	TTFTP95Ms *float64 `json:"ttft_p95_ms"`
	// Pass and Cost are every request's of the rung, burn-in included;
	// Cost is nil (null) when a request's cost is unmeasured (it called a
	// model without a declared price).
	Pass int      `json:"pass"`
	Cost *float64 `json:"cost"`
	// Replays counts the times the rung was played again: because the
	// load generator fell behind (LagP99Ms, the 99th percentile of its lag
	// in the models' milliseconds, of the play kept), or once to confirm
	// a rung that did not hold.
	Replays  int     `json:"replays,omitempty"`
	LagP99Ms float64 `json:"lag_p99_ms"`
	// WallS is the wall time the rung took, its drain included.
	WallS float64 `json:"wall_s"`
	// Blocks are the measured blocks' counts, for the bootstrap.
	Blocks []BlockCount `json:"blocks"`

	calls []sim.Call // the simulated models' calls during the rung
}

// BlockCount is one measured block of a rung.
type BlockCount struct {
	N       int `json:"n"`
	Counted int `json:"counted"`
}

// sweeper runs a sweep's cells on one setup.
type sweeper struct {
	s     *eval.Setup
	cfg   *Config
	log   *sim.CallLog
	scale float64
	runID string
	recs  []records.Record
	prog  io.Writer
	// ref is each arm's latency the SLO limits, by request, at its lowest
	// rung: the reference a rung's queue growth is read against.
	ref      map[string]map[int]float64
	armStack func(arm string, m model.Model) model.Model // see sweep
}

// Sweep plays the sweep cfg on the setup s (loaded by eval.LoadSetup,
// its sweep section read by LoadConfig) and returns every arm's rungs,
// knees and the verdicts. It installs a call log on the setup's
// simulated models, so that a rung starts only once the previous one's
// calls have ended. progress, when set, is told of every rung.
func Sweep(ctx context.Context, s *eval.Setup, cfg *Config, progress io.Writer) (*Result, error) {
	return sweep(ctx, s, cfg, progress, nil)
}

// sweep is Sweep; armStack, when set, wraps each arm's stack (tests inject
// a bug of crab's own through it).
func sweep(ctx context.Context, s *eval.Setup, cfg *Config, progress io.Writer, armStack func(arm string, m model.Model) model.Model) (*Result, error) {
	start := time.Now()
	w := &sweeper{s: s, cfg: cfg, log: &sim.CallLog{}, scale: *s.Exp.TimeScale, prog: progress, armStack: armStack,
		runID: fmt.Sprintf("sweep-%s-%d", time.Now().UTC().Format("20060102T150405"), s.Exp.Seed), ref: map[string]map[int]float64{}}
	if err := s.LogCalls(w.log); err != nil {
		return nil, err
	}
	specs := make([]stack.ArmSpec, len(cfg.Arms))
	for i, name := range cfg.Arms {
		for _, a := range s.Exp.Arms {
			if a.Name == name {
				specs[i] = a
			}
		}
	}
	rungs := make([][]Rung, len(specs))
	rng := rand.New(rand.NewPCG(uint64(s.Exp.Seed), 0x7377656570)) // "sweep"
	stopped := make([]bool, len(specs))
	misses := make([]int, len(specs))
	for ri, rate := range cfg.Rates {
		for _, k := range rng.Perm(len(specs)) {
			if stopped[k] {
				continue
			}
			r, err := w.cell(ctx, specs[k], rate, ri)
			if err != nil {
				return nil, err
			}
			rungs[k] = append(rungs[k], r)
			misses[k]++
			if r.Held {
				misses[k] = 0
			}
			stopped[k] = r.Stopped || misses[k] >= 2
		}
		if !slices.Contains(stopped, false) {
			break
		}
	}
	for step := range cfg.refine() {
		for _, k := range rng.Perm(len(specs)) {
			lo, hi, ok := bracket(rungs[k])
			if !ok {
				continue
			}
			r, err := w.cell(ctx, specs[k], (lo+hi)/2, len(cfg.Rates)+step)
			if err != nil {
				return nil, err
			}
			r.Refined = true
			rungs[k] = append(rungs[k], r)
			slices.SortStableFunc(rungs[k], func(a, b Rung) int { return cmp.Compare(a.Rate, b.Rate) })
		}
	}
	res := &Result{Experiment: s.Exp.File, Config: cfg, TimeScale: w.scale, RunID: w.runID}
	for k, name := range cfg.Arms {
		a := ArmResult{Name: name, Rungs: rungs[k]}
		// The calls per request of the last rung that held before the
		// first that did not: the load nearest the knee (a cache's hits
		// fall as more requests are in flight at once).
		last := -1
		for i := 0; i < len(a.Rungs) && a.Rungs[i].Held; i++ {
			last = i
		}
		if last >= 0 {
			r := a.Rungs[last]
			if v := SimKnee(r.calls, r.Sent, s.Exp.Models, s.Exp.Concurrency); !math.IsNaN(v) {
				a.ImpliedKnee = &v
			}
		}
		res.Arms = append(res.Arms, a)
	}
	res.Records = w.recs
	if err := res.analyse(s); err != nil {
		return nil, err
	}
	res.WallS = time.Since(start).Seconds()
	return res, nil
}

// bracket is the rates between which the arm's share crosses the
// declared share: the last rung that held before the first that did not.
func bracket(rungs []Rung) (lo, hi float64, ok bool) {
	for i, r := range rungs {
		if !r.Held {
			if i == 0 {
				return 0, 0, false
			}
			return rungs[i-1].Rate, r.Rate, true
		}
	}
	return 0, 0, false
}

// arrival is the experiment's arrival at rate (wall-clock requests per
// second): its own pattern when it has a rate, else poisson.
func arrival(a eval.Arrival, rate float64) eval.Arrival {
	switch a.Pattern {
	case eval.PatternConstant, eval.PatternPoisson, eval.PatternGamma:
		return eval.Arrival{Pattern: a.Pattern, Rate: rate, Burstiness: a.Burstiness}
	}
	return eval.Arrival{Pattern: eval.PatternPoisson, Rate: rate}
}

// maxPlays is how many times a rung is played while the load generator
// falls behind its schedule.
const maxPlays = 3

// cell plays one rung of one arm: the first Requests tasks at rate (the
// models' time), alone on the backends, and waits for the backends to be
// idle again. A rung during which the load generator fell behind its own
// schedule (the 99th percentile of its lag above the growth limit: the
// host, not the deployment, was slow) is played again, and so is a rung
// that did not hold, once, keeping the better play; at most maxPlays
// plays, the replays counted in the rung and their records dropped.
func (w *sweeper) cell(ctx context.Context, spec stack.ArmSpec, rate float64, repeat int) (Rung, error) {
	began := time.Now()
	var best *Rung
	var bestRecs []records.Record
	var bestRef map[int]float64
	plays, confirmed := 0, false
	for plays < maxPlays {
		recs, made, stopped, err := w.play(ctx, spec, rate, repeat)
		if err != nil {
			return Rung{}, err
		}
		plays++
		var lags []float64
		for i := range recs {
			if recs[i].Outcome != records.OutcomeCancelled {
				lags = append(lags, w.nominal(recs[i].LagMs))
			}
		}
		slices.Sort(lags)
		lag := quantile.NearestRank(lags, 99)
		if lag > w.cfg.growthLimit() && plays < maxPlays {
			continue
		}
		ref := w.ref[spec.Name]
		if ref == nil {
			ref = map[int]float64{}
			for i := range recs {
				ref[recs[i].Seq] = w.limited(&recs[i])
			}
		}
		r := w.rung(recs, rate, repeat, ref)
		r.calls, r.Stopped = made, stopped
		if !math.IsNaN(lag) {
			r.LagP99Ms = lag
		}
		if best == nil || r.Held && !best.Held || r.Held == best.Held && r.Share > best.Share {
			best, bestRecs, bestRef = &r, recs, ref
		}
		if best.Held || confirmed {
			break
		}
		// A rung that did not hold is played once more before it decides:
		// a stall of the host only ever slows a rung, so the better play
		// is the deployment's.
		confirmed = true
	}
	r := *best
	w.recs = append(w.recs, bestRecs...)
	if w.ref[spec.Name] == nil {
		w.ref[spec.Name] = bestRef
	}
	r.Replays = plays - 1
	r.WallS = time.Since(began).Seconds()
	if w.prog != nil {
		state := "held"
		if !r.Held {
			state = "did not hold"
		}
		if r.Growing {
			state += fmt.Sprintf(", queue growing (+%s ms)", figure.Ms(r.GrowthMs))
		}
		if r.Stopped {
			state = "stopped: over saturation"
		}
		if r.Replays > 0 {
			state += fmt.Sprintf(", played %d times (kept: generator lag p99 %s ms)", plays, figure.Ms(r.LagP99Ms))
		}
		fmt.Fprintf(w.prog, "sweep: %s at %s/s: %d of %d within the SLO (%s), %s, %.1fs\n",
			spec.Name, trimRate(rate), r.Counted, r.Measured, pct(r.Share), state, r.WallS)
	}
	return r, nil
}

// play plays a rung once and returns its records in schedule order, the
// simulated models' calls it made, and whether it was stopped.
func (w *sweeper) play(ctx context.Context, spec stack.ArmSpec, rate float64, repeat int) ([]records.Record, []sim.Call, bool, error) {
	cfg := w.cfg
	n := cfg.Requests
	e := *w.s.Exp
	e.Arms = []stack.ArmSpec{spec}
	e.Order, e.Block, e.BurnIn = eval.OrderSequential, 0, 0
	e.Repeats, e.Warmup, e.Control = 1, 0, ""
	// Judging a routing decision calls the other model: load the
	// deployment would not carry, so a sweep leaves it out.
	off := false
	e.Shadow = &off
	e.Arrival = arrival(w.s.Exp.Arrival, rate/w.scale)
	if f, msg := e.Arrival.Check(); f != "" {
		return nil, nil, false, fmt.Errorf("capacity: arrival at %g/s: %s: %s", rate, f, msg)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	calls := len(w.log.Calls())
	var mu sync.Mutex
	var recs []records.Record
	allowed := (1 - cfg.share()) * float64(n-n/cfg.Blocks)
	missed := 0
	stopped := false
	run := w.s.Runner(w.runID, func(rec records.Record) error {
		mu.Lock()
		defer mu.Unlock()
		rec.Repeat = repeat
		recs = append(recs, rec)
		if blockOf(rec.Seq, n, cfg.Blocks) > 0 && !w.counts(&rec) {
			missed++
			if float64(missed) > allowed+1e-9 && !stopped {
				stopped = true
				cancel()
			}
		}
		return nil
	})
	run.Exp = &e
	run.Tasks = w.s.Tasks[:n]
	if wrap := w.armStack; wrap != nil {
		build := run.Build
		run.Build = func(spec stack.ArmSpec, repeat int) (*eval.ArmStack, func(), error) {
			a, release, err := build(spec, repeat)
			if err == nil {
				a.Stack = wrap(spec.Name, a.Stack)
			}
			return a, release, err
		}
	}
	res, err := run.Run(rctx)
	if err != nil {
		return nil, nil, false, err
	}
	if res.Bugs > 0 {
		// A failure of crab's own is no measure of an arm's capacity.
		return nil, nil, false, fmt.Errorf("capacity: no knee is drawn from a rung on which %s", res.BugNote())
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, false, err
	}
	made := w.drain(calls)
	if len(made) == 0 && abandoned(recs) {
		// A backend over HTTP: its queue cannot be seen, and calls the
		// sweep abandoned may still hold it. A request is abandoned at its
		// timeout at the latest, so waiting one timeout lets most servers
		// settle before the next rung.
		select {
		case <-ctx.Done():
		case <-time.After(e.Timeout.Std()):
		}
	}
	slices.SortFunc(recs, func(a, b records.Record) int { return a.Seq - b.Seq })
	return recs, made, stopped, nil
}

// drain returns the calls made since the log held from calls and waits
// until every one of them has ended, abandoned ones included (an abandoned call keeps its
// slot until its planned end), so that the next rung starts on idle
// backends.
func (w *sweeper) drain(from int) []sim.Call {
	var end time.Time
	made := w.log.Calls()[from:]
	for _, c := range made {
		if e := c.At.Add(c.Total); e.After(end) {
			end = e
		}
	}
	if d := time.Until(end); d > 0 {
		time.Sleep(d)
	}
	return made
}

// abandoned reports whether a rung left requests unanswered (cancelled or
// timed out), whose calls a backend may still be serving.
func abandoned(recs []records.Record) bool {
	for i := range recs {
		if o := recs[i].Outcome; o == records.OutcomeCancelled || o == records.OutcomeTimeout {
			return true
		}
	}
	return false
}

// blockOf is the block (0 the burn-in) of the request at seq in a rung of
// n requests cut into blocks blocks of consecutive requests.
func blockOf(seq, n, blocks int) int { return seq * blocks / n }

// nominal turns a recorded latency (wall milliseconds) into the models'
// milliseconds.
func (w *sweeper) nominal(ms float64) float64 { return ms / w.scale }

// within reports whether rec met the SLO in the models' time.
func (w *sweeper) within(rec *records.Record) bool {
	return w.cfg.SLO.Within(w.nominal(rec.TTFTMs), w.nominal(rec.E2EMs))
}

// limited is the latency the SLO limits, in the models' milliseconds:
// TTFT when it limits TTFT (a request without one at its end), else end
// to end.
func (w *sweeper) limited(rec *records.Record) float64 {
	if w.cfg.SLO.TTFTMs > 0 {
		t := rec.TTFTMs
		if t == 0 {
			t = rec.E2EMs
		}
		return w.nominal(t)
	}
	return w.nominal(rec.E2EMs)
}

// counts reports whether rec counts toward the rung's share.
func (w *sweeper) counts(rec *records.Record) bool {
	if w.cfg.Count == CountPassing {
		return rec.Pass && w.within(rec)
	}
	answered := rec.Outcome == records.OutcomeOK || rec.Outcome == records.OutcomeContractFail
	return answered && w.within(rec)
}

// rung sums a rung's records.
func (w *sweeper) rung(recs []records.Record, rate float64, repeat int, ref map[int]float64) Rung {
	n := w.cfg.Requests
	r := Rung{Rate: rate, Repeat: repeat, Sent: n, Blocks: make([]BlockCount, w.cfg.Blocks-1), Cost: new(0.0)}
	var e2e, ttft []float64
	lim := make([][]float64, w.cfg.Blocks)
	for i := range recs {
		rec := &recs[i]
		if !rec.Measured(records.FigureCost) {
			r.Cost = nil
		} else if r.Cost != nil {
			*r.Cost += rec.Cost
		}
		if rec.Pass {
			r.Pass++
		}
		b := blockOf(rec.Seq, n, w.cfg.Blocks)
		if b == 0 {
			continue
		}
		r.Measured++
		r.Blocks[b-1].N++
		if w.counts(rec) {
			r.Counted++
			r.Blocks[b-1].Counted++
		}
		if rec.Pass && w.within(rec) {
			r.Goodput++
		}
		e2e = append(e2e, w.nominal(rec.E2EMs))
		t := rec.TTFTMs
		if t == 0 {
			t = rec.E2EMs
		}
		ttft = append(ttft, w.nominal(t))
		if v, ok := ref[rec.Seq]; ok && rec.Outcome != records.OutcomeCancelled {
			lim[b] = append(lim[b], w.limited(rec)-v)
		}
	}
	// Each request's latency less the same request's at the arm's lowest
	// rung (same task, same place in the schedule, same draws of the
	// simulated models), so that what the blocks hold does not read as
	// growth; then the median of the last half of the blocks' medians
	// against that of the first half: a growing queue raises every later
	// block, a stall of the host one.
	var meds []float64
	for _, l := range lim[1:] {
		if m := median(l); !math.IsNaN(m) {
			meds = append(meds, m)
		}
	}
	if h := len(meds) / 2; h > 0 {
		r.GrowthMs = median(slices.Clone(meds[len(meds)-h:])) - median(slices.Clone(meds[:h]))
	}
	r.Growing = r.GrowthMs > w.cfg.growthLimit()
	if r.Measured > 0 {
		r.Share = float64(r.Counted) / float64(r.Measured)
		r.GoodputRPS = rate * float64(r.Goodput) / float64(r.Measured)
	}
	r.Held = r.Measured > 0 && r.Share >= w.cfg.share() && !r.Growing
	r.P95Ms, r.TTFTP95Ms = p95(e2e), p95(ttft)
	return r
}

// median is the nearest-rank median; NaN for no values.
func median(x []float64) float64 {
	slices.Sort(x)
	return quantile.NearestRank(x, 50)
}

// p95 is the nearest-rank 95th percentile; nil for no values.
func p95(x []float64) *float64 {
	if len(x) == 0 {
		return nil
	}
	slices.Sort(x)
	v := quantile.NearestRank(x, 95)
	if math.IsNaN(v) {
		return nil
	}
	return &v
}
