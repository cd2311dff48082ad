package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/binom"
	"github.com/crab-testbed/crab/internal/quantile"
	"github.com/crab-testbed/crab/internal/words"
)

// armTotals are the sums summarizeArm takes over an arm's records.
type armTotals struct {
	sum, okSum, tokOut, cost float64
	groupN                   map[records.Sym]int // requests of each non-empty group
	groupPass                map[string]int
	missing                  records.Missing // figures some record did not measure
	timed                    int             // requests whose latency counts: not cancelled, latency measured
}

// latencyBit is records.FigureLatency in a records.Missing.
var latencyBit, _ = records.MissingOf([]string{records.FigureLatency})

// timed reports whether a record's latency is a measurement of the system:
// not cancelled, and not a failure whose source gave no duration.
func timed(t *records.Symbols, r *records.Rec) bool {
	at := t.Attrs(r)
	return at.Unmeasured&latencyBit == 0 && t.Str(at.Outcome) != records.OutcomeCancelled
}

// summarizeArm computes one arm's figures; recs holds no warm-up records.
func summarizeArm(t *records.Symbols, name string, recs []*records.Rec, warm int, large map[string]bool) ArmSummary {
	a := ArmSummary{Name: name, N: len(recs), Warmup: warm, Outcomes: map[string]int{}, Reasons: []string{}, Groups: map[string]GroupSummary{}}
	tot := armTotals{groupN: map[records.Sym]int{}, groupPass: map[string]int{}}
	for _, r := range recs {
		countRecord(t, &a, &tot, r)
	}
	a.Failed = a.N - a.OK
	slices.Sort(a.Contracts)
	b := &sortBuf{recs: recs, buf: make([]float64, 0, len(recs))}
	latencyFigures(t, &a, tot, b)
	a.TokensOutMean = tot.tokOut / float64(a.N)
	a.Cost = roundSig(tot.cost, 12)
	a.ShadowCost = roundSig(a.ShadowCost, 12)
	if tot.timed > 0 {
		// Latency is judged per record: the arm measured it when any
		// request did, and its figures leave out the ones that did not.
		tot.missing &^= latencyBit
	}
	a.Unmeasured = tot.missing.Names()
	if !a.Measured(records.FigureCost) {
		a.Cost = 0 // a placeholder: summing the costs some records carry is not the arm's cost
		a.EscalationCost = 0
	}
	if !a.Measured(records.FigureTokens) {
		a.TokensOutMean = 0
	}
	if !a.Measured(records.FigureShadowCost) {
		a.ShadowCost = 0 // a placeholder, as Cost's
	}
	if !a.Measured(records.FigureTTFT) {
		a.TTFTP50Ms, a.TTFTP95Ms = nil, nil
	}
	if !a.Measured(records.FigureLatency) {
		a.OKP50Ms, a.OKP95Ms, a.OKMeanMs = nil, nil, nil
	}
	if a.Pass > 0 && a.Measured(records.FigureCost) {
		a.CostPerPass = f64p(a.Cost / float64(a.Pass))
	}
	groupFigures(t, &a, tot, b)
	if a.CacheStats != nil {
		cacheFigures(t, a.CacheStats, b)
	}
	a.RouteStats = routeStats(t, recs, large)
	if a.RouteStats != nil && !a.Measured(records.FigureQuality) {
		// A misroute is judged by which model's answer passes: with no
		// grading there is none to count (null, never 0/0/0).
		a.RouteStats.Misroutes = nil
	}
	if a.Measured(records.FigureLoad) {
		a.Load = loadStats(t, recs, b.buf)
	}
	if a.LatencyUnmeasured == 0 {
		a.TailNote = tailNote(a.N)
	} else if tot.timed > 0 {
		a.TailNote = tailNote(tot.timed) // the percentiles are over the requests that measured a latency
	}
	return a
}

// countRecord adds one record to an arm's counts and tot's sums.
func countRecord(t *records.Symbols, a *ArmSummary, tot *armTotals, r *records.Rec) {
	at := t.Attrs(r)
	if t.Str(at.Outcome) == records.OutcomeCancelled {
		// Never sent or cut short by an interruption: counted, but no
		// latency of the system under test.
		a.Cancelled++
	} else if at.Unmeasured&latencyBit != 0 {
		a.LatencyUnmeasured++
	} else {
		tot.sum += r.E2EMs
		tot.timed++
	}
	a.Outcomes[t.Str(at.Outcome)]++
	tot.missing |= at.Unmeasured
	switch t.Str(at.Outcome) {
	case records.OutcomeOK:
		a.OK++
		tot.okSum += r.E2EMs
		if !at.ContractOK {
			a.SilentViolations++
		}
	case records.OutcomeTimeout:
		a.Timeouts++
	}
	if at.Pass {
		a.Pass++
	}
	if t.Str(at.Contract) != "" && !slices.Contains(a.Contracts, t.Str(at.Contract)) {
		a.Contracts = append(a.Contracts, t.Str(at.Contract))
	}
	tot.tokOut += float64(r.TokensOut)
	tot.cost += r.Cost
	a.ShadowCost += t.Extras(r).ShadowCost
	a.Attempts += int(at.Attempts)
	if at.Escalated {
		a.Escalated++
	}
	a.EscalationCost += t.Extras(r).EscalationCost
	if t.Str(at.Group) != "" {
		tot.groupN[at.Group]++
		if at.Pass {
			tot.groupPass[t.Str(at.Group)]++
		}
	}
	if t.Str(at.Cache) != "" || t.Str(at.Leak) != "" || at.ScopeMismatch {
		if a.CacheStats == nil {
			a.CacheStats = &CacheStats{Leaks: map[string]int{}}
		}
		countCache(t, a.CacheStats, r)
	}
}

// countCache adds one record's cache status, leak and scope to c.
func countCache(t *records.Symbols, c *CacheStats, r *records.Rec) {
	at := t.Attrs(r)
	if t.Str(at.Cache) != "" {
		c.CacheRequests++
	}
	if t.Str(at.Cache) == "hit" {
		c.Hits++
		if at.Semantic {
			c.SemanticHits++
			if at.FalseHit {
				c.FalseHits++
			}
			if at.Similar {
				c.SimilarityHits++
				if at.FalseHit {
					c.SimilarityFalseHits++
				}
			}
		}
	}
	switch l := t.Str(at.Leak); l {
	case "":
	case records.LeakUnchecked:
		c.LeaksUnchecked++
	default:
		c.Leaks[l]++
	}
	if at.ScopeMismatch {
		c.ScopeMismatches++
	}
}

// sortBuf gathers and sorts each distribution of an arm in turn in one
// buffer: on millions of requests, copies of every figure at once would
// cost more than the records themselves.
type sortBuf struct {
	recs []*records.Rec
	buf  []float64
}

// sorted returns the sorted values keep takes from the records, in the
// buffer: valid until the next call.
func (b *sortBuf) sorted(keep func(r *records.Rec) (float64, bool)) []float64 {
	b.buf = b.buf[:0]
	for _, r := range b.recs {
		if v, ok := keep(r); ok {
			b.buf = append(b.buf, v)
		}
	}
	slices.Sort(b.buf)
	return b.buf
}

// latencyFigures sets an arm's latency percentiles and means: over every
// request that measured the system (failures whose duration the source
// did not give are left out), over successful ones, and to first content.
func latencyFigures(t *records.Symbols, a *ArmSummary, tot armTotals, b *sortBuf) {
	outcome := func(r *records.Rec) string { return t.Str(t.Attrs(r).Outcome) }
	all := b.sorted(func(r *records.Rec) (float64, bool) { return r.E2EMs, timed(t, r) })
	if len(all) > 0 { // else no request measured a latency: none to show (zeros as placeholders, "-" when unmeasured)
		a.P50Ms, a.P90Ms, a.P95Ms, a.P99Ms = quantile.NearestRank(all, 50), quantile.NearestRank(all, 90), quantile.NearestRank(all, 95), quantile.NearestRank(all, 99)
		a.MinMs, a.MaxMs = all[0], all[len(all)-1]
		a.MeanMs = meanWithin(tot.sum, len(all), a.MinMs, a.MaxMs)
	}
	if okLat := b.sorted(func(r *records.Rec) (float64, bool) { return r.E2EMs, outcome(r) == records.OutcomeOK && timed(t, r) }); len(okLat) > 0 {
		a.OKP50Ms, a.OKP95Ms = f64p(quantile.NearestRank(okLat, 50)), f64p(quantile.NearestRank(okLat, 95))
		a.OKMeanMs = f64p(meanWithin(tot.okSum, len(okLat), okLat[0], okLat[len(okLat)-1]))
	}
	if ttft := b.sorted(func(r *records.Rec) (float64, bool) { return r.TTFTMs, r.TTFTMs > 0 }); len(ttft) > 0 {
		a.TTFTP50Ms, a.TTFTP95Ms = f64p(quantile.NearestRank(ttft, 50)), f64p(quantile.NearestRank(ttft, 95))
	}
}

// groupFigures sets each input group's figures, its latencies sorted in
// its own stretch of the buffer.
// A group's latencies leave out the requests that measured none.
func groupFigures(t *records.Symbols, a *ArmSummary, tot armTotals, b *sortBuf) {
	timedN := map[records.Sym]int{}
	for _, r := range b.recs {
		if g := t.Attrs(r).Group; tot.groupN[g] > 0 && timed(t, r) {
			timedN[g]++
		}
	}
	at := map[records.Sym]int{}
	off := 0
	for g, n := range timedN {
		at[g] = off
		off += n
	}
	b.buf = b.buf[:off]
	for _, r := range b.recs {
		if g := t.Attrs(r).Group; timedN[g] > 0 && timed(t, r) {
			b.buf[at[g]] = r.E2EMs
			at[g]++
		}
	}
	for g, n := range tot.groupN {
		gs := GroupSummary{N: n, Pass: tot.groupPass[t.Str(g)]}
		if m := timedN[g]; m > 0 {
			lat := b.buf[at[g]-m : at[g]]
			slices.Sort(lat)
			gs.P50Ms, gs.P95Ms = quantile.NearestRank(lat, 50), quantile.NearestRank(lat, 95)
		}
		a.Groups[t.Str(g)] = gs
	}
}

// cacheFigures sets the hit rate, the hit- and miss-path latencies and the
// false-hit bounds of an arm's cache.
func cacheFigures(t *records.Symbols, c *CacheStats, b *sortBuf) {
	if c.CacheRequests > 0 {
		c.HitRate = float64(c.Hits) / float64(c.CacheRequests)
	}
	cache := func(r *records.Rec) string { return t.Str(t.Attrs(r).Cache) }
	if hit := b.sorted(func(r *records.Rec) (float64, bool) { return r.E2EMs, cache(r) == "hit" && timed(t, r) }); len(hit) > 0 {
		c.HitP50Ms, c.HitP95Ms = f64p(quantile.NearestRank(hit, 50)), f64p(quantile.NearestRank(hit, 95))
	}
	if miss := b.sorted(func(r *records.Rec) (float64, bool) { return r.E2EMs, cache(r) == "miss" && timed(t, r) }); len(miss) > 0 {
		c.MissP50Ms, c.MissP95Ms = f64p(quantile.NearestRank(miss, 50)), f64p(quantile.NearestRank(miss, 95))
	}
	if c.SemanticHits > 0 {
		c.FalseHitUpper95 = f64p(binom.Upper95(c.FalseHits, c.SemanticHits))
	}
	if c.SimilarityHits > 0 {
		c.SimilarityFalseHitUpper95 = f64p(binom.Upper95(c.SimilarityFalseHits, c.SimilarityHits))
	}
	if c.HitP50Ms != nil && c.MissP50Ms != nil && *c.MissP50Ms > 0 {
		c.SavedPerHit = f64p(1 - *c.HitP50Ms / *c.MissP50Ms)
	}
}

// routeStats summarizes routed requests; nil when none was routed.
func routeStats(t *records.Symbols, recs []*records.Rec, large map[string]bool) *RouteStats {
	var rs *RouteStats
	scoreSum := map[string]float64{}
	scoreN := map[string]int{}
	for _, r := range recs {
		if !t.Attrs(r).Routed && t.Str(t.Attrs(r).Misroute) == "" {
			continue
		}
		if rs == nil {
			rs = &RouteStats{RoutedModels: map[string]int{}, Misroutes: map[string]int{records.MisrouteUnder: 0, records.MisrouteOver: 0, records.MisrouteHopeless: 0}}
		}
		if t.Str(t.Attrs(r).Misroute) != "" {
			rs.Misroutes[t.Str(t.Attrs(r).Misroute)]++
		}
		if !t.Attrs(r).Routed {
			continue
		}
		rs.Routed++
		if t.Attrs(r).RouteFallback {
			rs.ScorerFallbacks++
		}
		if t.Str(t.Attrs(r).Model) != "" {
			rs.RoutedModels[t.Str(t.Attrs(r).Model)]++
			if !t.Attrs(r).Escalated {
				scoreSum[t.Str(t.Attrs(r).Model)] += t.Extras(r).RouteScore
				scoreN[t.Str(t.Attrs(r).Model)]++
			}
		}
	}
	if rs == nil || rs.Routed == 0 {
		return rs
	}
	if len(large) == 0 && len(scoreN) >= 2 {
		// The router sends high scores to the large model: the model with
		// the highest mean score is the large one.
		best, bestMean, tie := "", math.Inf(-1), false
		for m, n := range scoreN {
			mean := scoreSum[m] / float64(n)
			switch {
			case mean > bestMean:
				best, bestMean, tie = m, mean, false
			case mean == bestMean:
				tie = true
			}
		}
		if !tie {
			large = map[string]bool{best: true}
		}
	}
	if len(large) > 0 {
		n := 0
		for m, c := range rs.RoutedModels {
			if large[m] {
				n += c
			}
		}
		rs.RoutedLargeShare = f64p(float64(n) / float64(rs.Routed))
	}
	return rs
}

// tailNote says which tail percentiles of n requests are the sample maximum.
func tailNote(n int) string {
	var qs []string
	for _, q := range []float64{90, 95, 99} {
		if quantile.TailIsMax(n, q) {
			qs = append(qs, "p"+strconv.FormatFloat(q, 'f', -1, 64))
		}
	}
	if len(qs) == 0 {
		return ""
	}
	if len(qs) == 1 {
		return fmt.Sprintf("%s of %d requests is the sample maximum; it cannot be extrapolated", qs[0], n)
	}
	return fmt.Sprintf("%s of %d requests are the sample maximum; they cannot be extrapolated", words.And(qs), n)
}

func f64p(v float64) *float64 { return &v }

// meanWithin is sum/n kept inside [lo, hi], the smallest and largest of
// the n values: floating-point summation can put the quotient a hair
// outside, and a mean is never outside its own min and max.
func meanWithin(sum float64, n int, lo, hi float64) float64 {
	return min(max(sum/float64(n), lo), hi)
}

// roundSig rounds to sig significant digits. It is used only to drop
// floating-point summation noise (80.00000000000001 → 80) from a total, at
// a precision (12 digits) far below anything a report compares or prints.
func roundSig(v float64, sig int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', sig, 64), 64)
	return r
}
