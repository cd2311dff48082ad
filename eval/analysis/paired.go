package analysis

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/quantile"
)

// Paired is a candidate compared with the baseline task by task: each pair
// is the same task in the same repeat on both sides.
type Paired struct {
	Baseline string   `json:"baseline"`
	Pairs    int      `json:"pairs"`
	Lost     []string `json:"lost"`   // passing in the baseline, failing in the candidate
	Gained   []string `json:"gained"` // failing in the baseline, passing in the candidate
	// LostCauses counts the lost tasks by what the candidate's request did:
	// its outcome (timeout, error, contract_fail, cancelled), or, for an ok
	// request, contract (answer broke the contract) or wrong_answer.
	LostCauses map[string]int `json:"lost_causes,omitempty"`
	// McNemarP is the exact two-sided McNemar p-value on the discordant
	// pairs (len(lost), len(gained)): how surprising the split is if the two
	// arms were equally good. 1 when there are no discordant pairs.
	McNemarP float64 `json:"mcnemar_p"`
	// LatencyDeltaMs is candidate - baseline end-to-end time per pair;
	// negative means faster. Nil without pairs.
	LatencyDeltaMs *Delta `json:"latency_delta_ms"`
	// CostDelta is candidate - baseline cost per pair; negative means
	// cheaper. Nil without pairs.
	CostDelta *Delta `json:"cost_delta"`
	// GoodputDelta is candidate - baseline of "passed within the SLO" (1 or
	// 0) per pair: its mean is the change in the share of tasks that count
	// toward goodput. Set when the gate's objective is goodput.
	GoodputDelta *Delta `json:"goodput_delta,omitempty"`
	// Unmatched lists tasks present on one side only: the arms ran
	// different work, which rejects the candidate.
	Unmatched []string `json:"unmatched"`
	// Groups breaks the pairs down by the baseline's input group, so that
	// a faster total that only reflects a different input mix shows.
	Groups map[string]GroupDelta `json:"groups"`
	// BlockPairs is the length, in pairs, of the blocks the intervals
	// resample when every pair carries its send time: pairs are taken in
	// time order and resampled in runs of this many (a circular block
	// bootstrap), so a stall or drift that moves many neighbouring pairs
	// together widens the interval instead of passing for many independent
	// pieces of evidence. 0: the pairs carry no time and are resampled one
	// by one.
	BlockPairs int `json:"block_pairs,omitempty"`
	// Blocks is the number of switchback blocks the intervals resample
	// whole, when the records carry their block (order switchback): the
	// pairs of one block of the baseline's (and so of the candidate's
	// copy of it) are drawn together, since one arm had the backend to
	// itself for the block and its neighbouring requests shared one
	// state of it. 0: the intervals resample runs of BlockPairs.
	Blocks int `json:"blocks,omitempty"`
	// LatencyLeftOut counts the pairs left out of the latency delta and
	// ratios because a request of the pair was sent in its switchback
	// block's burn-in or beside another arm's request still in flight
	// (carry-over); they count for quality and cost.
	LatencyLeftOut int `json:"latency_left_out,omitempty"`
	// P95Ratio and TTFTP95Ratio are candidate/baseline of the latency
	// guardrail figures over the matched pairs, with a 95% interval from
	// the same resampling as the deltas: a latency guardrail is broken
	// only when its whole interval lies beyond the limit, and a point
	// estimate beyond it with an interval that reaches inside makes the
	// verdict inconclusive. Nil when not measured (no pairs, no TTFT, or
	// above PairBootstrapMaxN pairs, where the point estimate is precise
	// enough on its own). Cost per pass gets its interval from the
	// per-task counts and costs (costPerPassRatio), so that it is
	// recomputed exactly on edited outcomes.
	P95Ratio     *Ratio `json:"p95_ratio,omitempty"`
	TTFTP95Ratio *Ratio `json:"ttft_p95_ratio,omitempty"`

	// The two sides' passing and ok requests among the pairs.
	basePass, candPass, baseOK, candOK int
	baseCost, candCost                 float64
	// ungraded: one side's records carry no grading, so the lost and
	// gained tasks and their test are no figures (null in JSON).
	ungraded bool
	// switchback: every request of the pairs carries its switchback
	// block, so a task's copies were sent at different moments.
	switchback bool
	// tasks are the matched pairs' outcomes counted per task, in key
	// order: what rule margin's interval, clustered by task, is built
	// from.
	tasks []TaskOutcomes
	// failBaseOnly and failCandOnly count the pairs where only the
	// baseline, or only the candidate, ended in an error or a timeout:
	// the failure share's paired test.
	failBaseOnly, failCandOnly int
}

// Ratio is a candidate/baseline ratio over matched pairs with its 95%
// interval.
type Ratio struct {
	Point  float64 `json:"point"`
	CILow  float64 `json:"ci_low"`
	CIHigh float64 `json:"ci_high"`
}

// Delta describes per-pair differences. Median is the usual middle value
// (the mean of the two middle ones for an even count): the nearest-rank p50
// would take the lower of the two, which for deltas always favours the
// faster or cheaper side. CILow and CIHigh bound a seeded
// percentile-bootstrap 95% interval of the mean, resampling pairs; above
// PairBootstrapMaxN pairs, the normal (central limit) interval
// mean ± 1.96·sd/√n, which at that size agrees with the bootstrap to within
// its own resampling noise and costs one pass instead of 2,000.
type Delta struct {
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	CILow  float64 `json:"ci_low"`
	CIHigh float64 `json:"ci_high"`

	// means are the bootstrap's resampled means, sorted, that CILow and
	// CIHigh are read from (nil for the normal interval): the tests of
	// the gate's error rate read their p-values from the same draws, so a
	// test and its interval never disagree (see Delta.pAtLeast).
	means []float64
}

// GroupDelta is the paired comparison within one input group.
type GroupDelta struct {
	Pairs          int     `json:"pairs"`
	Lost           int     `json:"lost"`
	Gained         int     `json:"gained"`
	LatencyDeltaMs float64 `json:"latency_delta_median_ms"` // median of candidate - baseline (see Delta)
}

// PairOptions tune the paired comparison.
type PairOptions struct {
	Seed      int64 // bootstrap seed
	Resamples int   // bootstrap resamples (default 2000)
	// ShowRepeat writes pair ids as "task#repeat"; set it when the records
	// hold more than one repeat.
	ShowRepeat bool
	// SLO, when set, adds GoodputDelta.
	SLO *SLO
}

// comparePairedAll compares candidate records with baseline records by
// (task_id, repeat), every pair in every figure (see comparePaired). Warm-up records must already be left out. Lost, gained
// and unmatched ids are sorted; the result depends only on the records and
// opt, never on their order.
func comparePairedAll(t *records.Symbols, baseline, candidate []*records.Rec, opt PairOptions) Paired {
	if opt.Resamples <= 0 {
		opt.Resamples = DefaultResamples
	}
	q := newPairing(t, baseline, candidate)
	p := Paired{Lost: []string{}, Gained: []string{}, Unmatched: []string{}, Groups: map[string]GroupDelta{}}
	if len(baseline) > 0 {
		p.Baseline = t.Str(baseline[0].Arm)
	}
	groupN, timed := countPairs(t, &p, q, opt)
	slices.Sort(p.Unmatched)
	var timeOrder []int32 // with send times, resampled in blocks of neighbours in time
	block := resampling{block: 1}
	if timed && p.Pairs > 1 {
		// Before the deltas' buffer: ordering the pairs by time holds
		// their send times meanwhile.
		timeOrder = q.timeOrder(p.Pairs)
		block = pairResampling(q, timeOrder, p.Pairs)
		p.BlockPairs, p.Blocks = block.runs(), block.blocks()
	}
	// The groups' latency deltas in stretches of one buffer, then the rest.
	scratch := make([]float64, p.Pairs)
	at, off := map[records.Sym]int{}, 0
	for g, n := range groupN {
		at[g] = off
		off += n
	}
	q.walk(func(b, c *records.Rec) {
		if g := t.Attrs(b).Group; groupN[g] > 0 {
			scratch[at[g]] = c.E2EMs - b.E2EMs
			at[g]++
		}
	}, func(*records.Rec) {})
	for g, n := range groupN {
		gd := p.Groups[t.Str(g)]
		gd.LatencyDeltaMs = medianSorting(scratch[at[g]-n : at[g]])
		p.Groups[t.Str(g)] = gd
	}
	var moved []uint64 // for putting the deltas in time order in place
	if timeOrder != nil {
		moved = make([]uint64, (p.Pairs+63)/64)
	}
	deltas := func(delta func(b, c *records.Rec) float64) []float64 {
		d := scratch[:0]
		q.walk(func(b, c *records.Rec) { d = append(d, delta(b, c)) }, func(*records.Rec) {})
		if timeOrder != nil {
			inTimeOrder(d, timeOrder, moved)
		}
		return d
	}
	p.McNemarP = McNemarExact(len(p.Lost), len(p.Gained))
	if p.Pairs > 0 {
		p.LatencyDeltaMs = describeSorting(deltas(func(b, c *records.Rec) float64 { return c.E2EMs - b.E2EMs }), opt.Seed, 1, opt.Resamples, block)
		p.CostDelta = describeSorting(deltas(func(b, c *records.Rec) float64 { return c.Cost - b.Cost }), opt.Seed, 2, opt.Resamples, block)
		if opt.SLO != nil {
			good := func(b, c *records.Rec) float64 { return b2f(opt.SLO.met(t, c)) - b2f(opt.SLO.met(t, b)) }
			p.GoodputDelta = describeSorting(deltas(good), opt.Seed, 3, opt.Resamples, block)
		}
	}
	if p.Pairs > 0 && p.Pairs <= PairBootstrapMaxN {
		guardrailRatios(t, &p, q.walk, timeOrder, opt, block)
	}
	return p
}

// inTimeOrder rearranges d, in key order, into time order: afterwards
// d[k] is what was d[order[k]]. It follows each cycle of the permutation
// instead of copying d; moved, a bit a value, marks what is in place.
func inTimeOrder(d []float64, order []int32, moved []uint64) {
	clear(moved)
	for s := range d {
		if moved[s/64]&(1<<(s%64)) != 0 {
			continue
		}
		first, k := d[s], s
		for {
			moved[k/64] |= 1 << (k % 64)
			from := int(order[k])
			if from == s {
				d[k] = first
				break
			}
			d[k], k = d[from], from
		}
	}
}

// id is a record's pair id: its task, and its repeat when opt shows them.
func (opt PairOptions) id(t *records.Symbols, r *records.Rec) string {
	if opt.ShowRepeat {
		return t.Str(r.TaskID) + "#" + strconv.Itoa(t.Attrs(r).Repeat)
	}
	return t.Str(r.TaskID)
}

// failed reports whether a request ended in an error or a timeout.
func failed(t *records.Symbols, r *records.Rec) bool {
	o := t.Str(t.Attrs(r).Outcome)
	return o == records.OutcomeError || o == records.OutcomeTimeout
}

// pairing is both sides sorted (as indices, 4 bytes a record) by (task id,
// repeat), the last of equal keys kept, and merged by walk: pairs in key
// order with no map per side, and on millions of records no copies.
type pairing struct {
	t                   *records.Symbols
	baseline, candidate []*records.Rec
	bs, cs              []int32
	rank                []int32 // 1 + the task's rank by id; 0 for a string that is no task
}

func newPairing(t *records.Symbols, baseline, candidate []*records.Rec) *pairing {
	q := &pairing{t: t, baseline: baseline, candidate: candidate, rank: make([]int32, t.Len())}
	var tasks []records.Sym
	for _, side := range [][]*records.Rec{baseline, candidate} {
		for _, r := range side {
			if q.rank[r.TaskID] == 0 {
				q.rank[r.TaskID] = 1
				tasks = append(tasks, r.TaskID)
			}
		}
	}
	slices.SortFunc(tasks, func(a, b records.Sym) int { return strings.Compare(t.Str(a), t.Str(b)) })
	for i, y := range tasks {
		q.rank[y] = int32(i + 1)
	}
	q.bs, q.cs = q.sortedSide(baseline), q.sortedSide(candidate)
	return q
}

func (q *pairing) cmpKey(a, b *records.Rec) int {
	if d := int(q.rank[a.TaskID]) - int(q.rank[b.TaskID]); d != 0 {
		return d
	}
	return q.t.Attrs(a).Repeat - q.t.Attrs(b).Repeat
}

func (q *pairing) sortedSide(side []*records.Rec) []int32 {
	s := identity(len(side))
	slices.SortFunc(s, func(a, b int32) int { // stable: equal keys stay in record order
		if d := q.cmpKey(side[a], side[b]); d != 0 {
			return d
		}
		return int(a) - int(b)
	})
	out := s[:0]
	for i, r := range s {
		if i+1 < len(s) && q.cmpKey(side[r], side[s[i+1]]) == 0 {
			continue // a later record with the same key wins
		}
		out = append(out, r)
	}
	return out
}

// walk calls pair on every matched pair in key order, unmatched on the rest.
func (q *pairing) walk(pair func(b, c *records.Rec), unmatched func(r *records.Rec)) {
	bs, cs, baseline, candidate := q.bs, q.cs, q.baseline, q.candidate
	for i, j := 0, 0; i < len(bs) || j < len(cs); {
		switch {
		case j == len(cs) || (i < len(bs) && q.cmpKey(baseline[bs[i]], candidate[cs[j]]) < 0):
			unmatched(baseline[bs[i]])
			i++
		case i == len(bs) || q.cmpKey(baseline[bs[i]], candidate[cs[j]]) > 0:
			unmatched(candidate[cs[j]])
			j++
		default:
			pair(baseline[bs[i]], candidate[cs[j]])
			i++
			j++
		}
	}
}

// timeOrder maps a position in time order (the baseline's intended send
// time, then key order) to the pair's position in key order.
func (q *pairing) timeOrder(pairs int) []int32 {
	at := make([]int64, 0, pairs)
	q.walk(func(b, _ *records.Rec) { at = append(at, b.At) }, func(*records.Rec) {})
	order := identity(pairs)
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(at[a], at[b]) })
	return order
}

// countPairs counts pairs, passes, costs, lost, gained and unmatched tasks
// into p; it returns each group's pairs and whether every pair is timed.
func countPairs(t *records.Symbols, p *Paired, q *pairing, opt PairOptions) (map[records.Sym]int, bool) {
	groupN, timed := map[records.Sym]int{}, true
	var last records.Sym
	q.walk(func(b, c *records.Rec) {
		p.Pairs++
		if len(p.tasks) == 0 || b.TaskID != last {
			p.tasks = append(p.tasks, TaskOutcomes{Task: t.Str(b.TaskID)})
			last = b.TaskID
		}
		p.tasks[len(p.tasks)-1].add(t.Attrs(b).Pass, t.Attrs(c).Pass)
		p.tasks[len(p.tasks)-1].BaseCost += b.Cost
		p.tasks[len(p.tasks)-1].CandCost += c.Cost
		switch bf, cf := failed(t, b), failed(t, c); {
		case bf && !cf:
			p.failBaseOnly++
		case cf && !bf:
			p.failCandOnly++
		}
		timed = timed && t.Attrs(b).Timed
		p.baseCost, p.candCost = p.baseCost+b.Cost, p.candCost+c.Cost
		p.basePass += int(b2f(t.Attrs(b).Pass))
		p.candPass += int(b2f(t.Attrs(c).Pass))
		p.baseOK += int(b2f(t.Str(t.Attrs(b).Outcome) == records.OutcomeOK))
		p.candOK += int(b2f(t.Str(t.Attrs(c).Outcome) == records.OutcomeOK))
		g := t.Str(t.Attrs(b).Group)
		gd := p.Groups[g]
		gd.Pairs++
		switch {
		case t.Attrs(b).Pass && !t.Attrs(c).Pass:
			p.Lost = append(p.Lost, opt.id(t, b))
			gd.Lost++
			if p.LostCauses == nil {
				p.LostCauses = map[string]int{}
			}
			p.LostCauses[lostCause(t, c)]++
		case !t.Attrs(b).Pass && t.Attrs(c).Pass:
			p.Gained = append(p.Gained, opt.id(t, b))
			gd.Gained++
		}
		if g != "" {
			p.Groups[g] = gd
			groupN[t.Attrs(b).Group]++
		}
	}, func(r *records.Rec) { p.Unmatched = append(p.Unmatched, opt.id(t, r)) })
	return groupN, timed
}

// blockLen is the block length, in pairs, of the time-ordered resampling:
// the square root of the pair count, so that a block spans a stretch of
// the run long enough to hold a stall's worth of neighbouring requests
// while there are as many blocks as pairs in a block.
func blockLen(n int) int {
	return max(1, int(math.Ceil(math.Sqrt(float64(n)))))
}

// pairFigures are one side's figures of the matched pairs, in the order
// the resampling sees them.
type pairFigures struct {
	e2e, ttft []float64
	ttftOK    bool // every pair has a TTFT on this side
}

// guardrailRatios sets the candidate/baseline ratios of the guardrail
// figures over the pairs, with intervals from the same block resampling
// as the deltas.
func guardrailRatios(_ *records.Symbols, p *Paired, walk func(pair func(b, c *records.Rec), unmatched func(*records.Rec)), timeOrder []int32, opt PairOptions, block resampling) {
	var bs, cs pairFigures
	bs.ttftOK, cs.ttftOK = true, true
	add := func(f *pairFigures, r *records.Rec) {
		f.e2e = append(f.e2e, r.E2EMs)
		f.ttft = append(f.ttft, r.TTFTMs)
		f.ttftOK = f.ttftOK && r.TTFTMs > 0
	}
	walk(func(b, c *records.Rec) { add(&bs, b); add(&cs, c) }, func(*records.Rec) {})
	if timeOrder != nil {
		for _, f := range []*pairFigures{&bs, &cs} {
			e2e, ttft := make([]float64, len(timeOrder)), make([]float64, len(timeOrder))
			for k, i := range timeOrder {
				e2e[k], ttft[k] = f.e2e[i], f.ttft[i]
			}
			f.e2e, f.ttft = e2e, ttft
		}
	}
	n := len(bs.e2e)
	ce2e, be2e, cttft, bttft := newRankSelect(cs.e2e), newRankSelect(bs.e2e), newRankSelect(cs.ttft), newRankSelect(bs.ttft)
	stat := []func(idx []int32) float64{
		func(idx []int32) float64 { return ce2e.percentile(idx, 95) / be2e.percentile(idx, 95) },
		func(idx []int32) float64 { return cttft.percentile(idx, 95) / bttft.percentile(idx, 95) },
	}
	measured := []bool{be2e.percentile(identity(n), 95) > 0, bs.ttftOK && cs.ttftOK}
	out := []**Ratio{&p.P95Ratio, &p.TTFTP95Ratio}
	for k := range stat {
		if measured[k] {
			*out[k] = ratioCI(n, block, opt.Seed, uint64(10+k), opt.Resamples, stat[k])
		}
	}
}

func identity(n int) []int32 {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	return idx
}

// ratioCI is the point value of stat over all n pairs and its block
// bootstrap 95% interval (nearest-rank 2.5th and 97.5th percentiles of
// stat over resamples). A resample whose stat is not finite (nothing
// passing in it) counts as +Inf, above every finite value.
func ratioCI(n int, block resampling, seed int64, stream uint64, resamples int, stat func(idx []int32) float64) *Ratio {
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	r := &Ratio{Point: stat(identity(n))}
	src := rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15^stream)
	vals := make([]float64, resamples)
	idx := make([]int32, 0, n)
	for b := range vals {
		idx = block.sample(src, n, idx[:0])
		v := stat(idx)
		if math.IsNaN(v) {
			v = math.Inf(1)
		}
		vals[b] = v
	}
	slices.Sort(vals)
	r.CILow, r.CIHigh = quantile.NearestRank(vals, 2.5), quantile.NearestRank(vals, 97.5)
	return r
}

// lostCause names why a request did not pass.
func lostCause(t *records.Symbols, r *records.Rec) string {
	switch o := t.Str(t.Attrs(r).Outcome); {
	case o != records.OutcomeOK:
		return o
	case !t.Attrs(r).ContractOK:
		return "contract"
	}
	return "wrong_answer"
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
