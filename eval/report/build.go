package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// Build makes the document of a summary: the arms table, the charts'
// place, the cache, routing, uncertainty, load and group tables where the
// data has them, the paired comparison, the decision, its warnings, what
// would change it, and the notes.
func Build(s *analysis.Summary) *Document {
	d := &Document{
		Title:    "crab report",
		Subject:  words.Count(len(s.Arms), "arm") + " compared with " + s.Baseline,
		Baseline: s.Baseline,
		Units: []Span{Text("latency in ms, nearest rank, over every request (failed ones at the time they ended); "),
			Code("ok_p50"), Text(" over successful requests only")},
	}
	if latencyPartly(s) {
		d.Units[0] = Text("latency in ms, nearest rank, over every request with a duration (failed ones at the time they ended; failures the source gives no duration for left out, see the notes); ")
	}
	add := func(title string, blocks ...Block) {
		d.Sections = append(d.Sections, Section{Title: title, Blocks: blocks})
	}
	add("Arms", armsTable(s))
	d.Sections = append(d.Sections, Section{Title: "Charts", Charts: true})
	if t := cacheTable(s); t != nil {
		add("Cache: hit rate with hit-path and miss-path latency and leaks", t)
	}
	if t := routeTable(s); t != nil {
		add("Routing", t)
	}
	if t := uncertaintyTable(s); t != nil {
		add("Uncertainty: 95% intervals (order statistics for percentiles, exact binomial ranks up to 10,000 requests and their normal approximation above; cost per pass by bootstrap, or the delta method above 20,000 requests)", t)
	}
	if t := loadTable(s); t != nil {
		add("Load: generator lag and concurrency-slot queue (ms)", t)
	}
	if t := offeredTable(s); t != nil {
		add("Offered load: each arm's calls per second at each backend while it sent, and every arm's calls the backend carried meanwhile", t)
	}
	if t := interferenceTable(s); t != nil {
		add("Interference: latency against the other arms' requests in flight at a shared backend", t)
	}
	if t := groupTable(s); t != nil {
		add("Groups", t)
	}
	if len(s.Arms) > 1 {
		var lost List
		for i := 1; i < len(s.Arms); i++ {
			a := &s.Arms[i]
			lost.Items = append(lost.Items, item(lostGained(s, a)))
		}
		blocks := []Block{pairedTable(s), lost}
		if t := groupDeltaTable(s); t != nil {
			blocks = append(blocks, t)
		}
		add("Paired against "+s.Baseline+" (candidate - baseline, task by task)", blocks...)
	}

	var v Verdicts
	for i := range s.Arms {
		a := &s.Arms[i]
		c := verdictCell(a.Verdict)
		if a.Verdict == analysis.VerdictBaseline {
			c = textCell("the baseline every candidate is compared with")
		}
		v.Arms = append(v.Arms, ArmVerdict{Arm: a.Name, Verdict: c, Reasons: a.Reasons})
	}
	add("Decision", Paragraph{Spans: []Span{Text(s.Decision.Summary)}}, v)
	if len(s.Decision.Warnings) > 0 {
		add("Warnings", list(s.Decision.Warnings))
	}
	if len(s.Decision.WhatWouldChange) > 0 {
		var change []string
		for i := range s.Arms {
			if c, ok := s.Decision.WhatWouldChange[s.Arms[i].Name]; ok {
				change = append(change, c)
			}
		}
		add("What would change the decision", list(change))
	}
	if len(s.Notes) > 0 {
		add("Notes", list(s.Notes))
	}
	return d
}

// list is a flat list of plain items.
func list(lines []string) List {
	l := List{Items: make([]Item, len(lines))}
	for i, s := range lines {
		l.Items[i] = item(s)
	}
	return l
}

func (t *Table) add(cells ...Cell) { t.Rows = append(t.Rows, cells) }

// Cells of figures, each rounded by package figure for its unit.
func count(n int) Cell            { return figureCell(strconv.Itoa(n)) }
func ms(v float64) Cell           { return figureCell(figure.Ms(v)) }
func msP(v *float64) Cell         { return figureCell(figure.MsP(v)) }
func smallMs(v float64) Cell      { return figureCell(figure.SmallMs(v)) }
func cost(v float64) Cell         { return figureCell(figure.Cost(v)) }
func costPerPass(v *float64) Cell { return figureCell(figure.CostPerPass(v)) }
func pct(v float64) Cell          { return figureCell(figure.Pct(v)) }
func ratio(a, b int) Cell         { return figureCell(fmt.Sprintf("%d/%d", a, b)) }
func missing() Cell               { return figureCell("-") }

// pctP is a share, "-" where it does not exist.
func pctP(v *float64) Cell {
	if v == nil {
		return missing()
	}
	return pct(*v)
}

// interval writes a 95% interval as "[lo, hi]", "?" for an end the data
// cannot bound.
func interval(iv analysis.Interval) Cell {
	end := func(v *float64) string {
		if v == nil {
			return "?"
		}
		return figure.Trim(strconv.FormatFloat(*v, 'g', 4, 64))
	}
	return figureCell("[" + end(iv.Lo) + ", " + end(iv.Hi) + "]")
}

// pointInterval is a point estimate's cell and its interval's, printed so
// that the point never stands outside its own printed interval.
func pointInterval(p *float64, iv analysis.Interval, f func(float64) string) (Cell, Cell) {
	if p == nil {
		return missing(), interval(iv)
	}
	sp, lo, hi := figure.PointInInterval(*p, iv.Lo, iv.Hi, f)
	return figureCell(sp), figureCell("[" + lo + ", " + hi + "]")
}

// armsTable is the main table; cache, routing, TTFT and silent-violation
// columns appear only when some arm has them.
func armsTable(s *analysis.Summary) *Table {
	var hasCache, hasRoute, hasTTFT, hasSilent, hasRework bool
	for i := range s.Arms {
		a := &s.Arms[i]
		hasRework = hasRework || a.Rework != nil
		hasCache = hasCache || a.CacheStats != nil
		hasRoute = hasRoute || a.RouteStats != nil
		hasTTFT = hasTTFT || a.TTFTP50Ms != nil
		hasSilent = hasSilent || a.SilentViolations > 0
	}
	t := &Table{Header: []string{"arm", "n", "ok", "fail", "timeouts", "pass", "p50", "p95", "p99", "max", "mean", "ok_p50", "cost", "cost/pass"}}
	if hasRework {
		t.Header = append(t.Header, "needs_person", "rework_cost", "rework_min")
	}
	if hasTTFT {
		t.Header = append(t.Header, "ttft_p50", "ttft_p95")
	}
	if hasCache {
		t.Header = append(t.Header, "hit_rate", "hit_p50", "miss_p50", "leaks")
	}
	if hasRoute {
		t.Header = append(t.Header, "misroutes u/o/h")
	}
	if hasSilent {
		t.Header = append(t.Header, "invalid_ok")
	}
	t.Header = append(t.Header, "verdict")
	for i := range s.Arms {
		a := &s.Arms[i]
		row := []Cell{textCell(a.Name), count(a.N), count(a.OK), count(a.Failed), count(a.Timeouts), passes(a),
			latency(a, a.P50Ms), latency(a, a.P95Ms), latency(a, a.P99Ms), latency(a, a.MaxMs), latency(a, a.MeanMs), msP(a.OKP50Ms),
			armCost(a), costPerPass(a.CostPerPass)}
		if hasRework {
			if w := a.Rework; w != nil {
				row = append(row, count(w.Tasks), cost(w.Cost), figureCell(figure.Trim(fmt.Sprint(w.Minutes))))
			} else {
				row = append(row, missing(), missing(), missing())
			}
		}
		if hasTTFT {
			row = append(row, msP(a.TTFTP50Ms), msP(a.TTFTP95Ms))
		}
		if hasCache {
			if c := a.CacheStats; c != nil {
				row = append(row, pct(c.HitRate), msP(c.HitP50Ms), msP(c.MissP50Ms), leakCount(a))
			} else {
				row = append(row, missing(), missing(), missing(), missing())
			}
		}
		if hasRoute {
			if r := a.RouteStats; r != nil && r.Misroutes != nil {
				row = append(row, figureCell(fmt.Sprintf("%d/%d/%d", r.Misroutes[records.MisrouteUnder], r.Misroutes[records.MisrouteOver], r.Misroutes[records.MisrouteHopeless])))
			} else {
				row = append(row, missing())
			}
		}
		if hasSilent {
			row = append(row, count(a.SilentViolations))
		}
		t.add(append(row, verdictCell(a.Verdict))...)
	}
	return t
}

// cacheTable pairs hit rate with hit-path and miss-path latency and leaks;
// nil when no arm has a cache.
func cacheTable(s *analysis.Summary) *Table {
	t := &Table{Header: []string{"arm", "cached", "hits", "hit_rate", "hit_p50", "hit_p95", "miss_p50", "miss_p95", "saved/hit", "leaks", "scope_mismatches"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		c := a.CacheStats
		if c == nil {
			continue
		}
		if c.Cold == nil {
			t.add(cacheRow(a.Name, c)...)
			continue
		}
		// The experiment warmed the cache: cold and warm apart.
		t.add(cacheRow(a.Name+" (warm)", c)...)
		t.add(cacheRow(a.Name+" (cold: warm-up)", c.Cold)...)
	}
	if len(t.Rows) == 0 {
		return nil
	}
	semanticColumns(s, t)
	return t
}

// semanticColumns adds, when some arm's cache is semantic, its semantic
// hits, false hits and the 95% upper bound on the false-hit rate; exact
// caches show "-". Without a semantic arm the table is left as it was.
func semanticColumns(s *analysis.Summary, t *Table) {
	var rows [][]Cell
	semantic := false
	for i := range s.Arms {
		c := s.Arms[i].CacheStats
		if c == nil {
			continue
		}
		for _, cs := range []*analysis.CacheStats{c, c.Cold} {
			if cs == nil {
				continue
			}
			if cs.FalseHitUpper95 == nil {
				rows = append(rows, []Cell{missing(), missing(), missing(), missing(), missing(), missing()})
				continue
			}
			semantic = true
			simBound := missing()
			if cs.SimilarityFalseHitUpper95 != nil {
				simBound = pct(*cs.SimilarityFalseHitUpper95)
			}
			rows = append(rows, []Cell{count(cs.SemanticHits), count(cs.FalseHits), pct(*cs.FalseHitUpper95),
				count(cs.SimilarityHits), count(cs.SimilarityFalseHits), simBound})
		}
	}
	if !semantic || len(rows) != len(t.Rows) {
		return
	}
	t.Header = append(t.Header, "semantic_hits", "false_hits", "false_hit_upper_95", "similarity_hits", "similarity_false_hits", "similarity_false_hit_upper_95")
	for i := range t.Rows {
		t.Rows[i] = append(t.Rows[i], rows[i]...)
	}
}

// leakCount is the arm's leaking hits, or "-" when some hits could not
// be checked and none was seen to leak.
func leakCount(a *analysis.ArmSummary) Cell {
	if n := a.LeakCount(); n > 0 || a.LeaksMeasured() {
		return count(n)
	}
	return missing()
}

// cacheRow is one row of the cache table.
func cacheRow(name string, c *analysis.CacheStats) []Cell {
	leaks, n := figureCell("0"), 0
	if c.LeaksUnchecked > 0 {
		leaks = missing()
	}
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(c.Leaks)) {
		n += c.Leaks[k]
		kinds = append(kinds, fmt.Sprintf("%s %d", k, c.Leaks[k]))
	}
	if n > 0 {
		leaks = textCell(strings.Join(kinds, ", "))
	}
	return []Cell{textCell(name), count(c.CacheRequests), count(c.Hits), pct(c.HitRate), msP(c.HitP50Ms), msP(c.HitP95Ms),
		msP(c.MissP50Ms), msP(c.MissP95Ms), pctP(c.SavedPerHit), leaks, count(c.ScopeMismatches)}
}

// routeTable is what the routers decided; nil when no arm routes.
func routeTable(s *analysis.Summary) *Table {
	t := &Table{Header: []string{"arm", "routed", "models", "large_share", "under", "over", "hopeless", "escalated", "escalation_cost", "attempts", "shadow_cost"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		r := a.RouteStats
		if r == nil {
			continue
		}
		var models []string
		for _, m := range slices.Sorted(maps.Keys(r.RoutedModels)) {
			models = append(models, fmt.Sprintf("%s %d", m, r.RoutedModels[m]))
		}
		mc := textCell(strings.Join(models, ", "))
		if len(models) == 0 {
			mc = missing()
		}
		under, over, hopeless := missing(), missing(), missing() // no grading, no misroutes
		if r.Misroutes != nil {
			under, over, hopeless = count(r.Misroutes[records.MisrouteUnder]), count(r.Misroutes[records.MisrouteOver]), count(r.Misroutes[records.MisrouteHopeless])
		}
		t.add(textCell(a.Name), count(r.Routed), mc, pctP(r.RoutedLargeShare), under, over, hopeless,
			count(a.Escalated), escalationCost(a), count(a.Attempts), shadowCost(a))
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// uncertaintyTable lists each arm's intervals; nil when no arm has them.
func uncertaintyTable(s *analysis.Summary) *Table {
	t := &Table{Header: []string{"arm", "p50", "p50_95%", "p95", "p95_95%", "cost/pass", "cost/pass_95%", "repeats", "p95_min..max_over_repeats"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		u := a.Uncertainty
		if u == nil {
			continue
		}
		reps, rp95 := count(1), missing()
		if u.Repeats != nil {
			reps = count(u.Repeats.N)
			rp95 = figureCell(figure.Ms(u.Repeats.P95.Min) + ".." + figure.Ms(u.Repeats.P95.Max))
		}
		p50p, p95p := &a.P50Ms, &a.P95Ms
		if !a.Measured(records.FigureLatency) {
			p50p, p95p = nil, nil
		}
		p50, p50CI := pointInterval(p50p, u.P50CI, figure.Ms)
		p95, p95CI := pointInterval(p95p, u.P95CI, figure.Ms)
		cpp, cppCI := pointInterval(a.CostPerPass, u.CostPerPassCI, func(v float64) string { return figure.CostPerPass(&v) })
		if !costPerPassMeasured(a) {
			cppCI = missing()
		}
		t.add(textCell(a.Name), p50, p50CI, p95, p95CI, cpp, cppCI, reps, rp95)
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// loadTable lists lag and queue per arm; nil when no arm has them.
func loadTable(s *analysis.Summary) *Table {
	t := &Table{Header: []string{"arm", "lag_p50", "lag_p99", "lag_max", "queue_p50", "queue_p99", "queue_max", "queued"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		l := a.Load
		if l == nil {
			continue
		}
		t.add(textCell(a.Name), smallMs(l.LagP50Ms), smallMs(l.LagP99Ms), smallMs(l.LagMaxMs), smallMs(l.QueueP50Ms), smallMs(l.QueueP99Ms), smallMs(l.QueueMaxMs), count(l.Queued))
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// groupTable is every arm's figures per input group; nil without groups.
func groupTable(s *analysis.Summary) *Table {
	t := &Table{Header: []string{"arm", "group", "n", "pass", "p50", "p95"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		for _, g := range slices.Sorted(maps.Keys(a.Groups)) {
			gs := a.Groups[g]
			t.add(textCell(a.Name), textCell(g), count(gs.N), groupPasses(a, gs), latency(a, gs.P50Ms), latency(a, gs.P95Ms))
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

// pairedTable is each candidate against the baseline, task by task.
func pairedTable(s *analysis.Summary) *Table {
	t := &Table{Header: []string{"candidate", "pairs", "unmatched", "lost", "gained", "mcnemar_p",
		"latency_median", "latency_mean", "latency_95%_ci", "cost_median", "cost_mean", "cost_95%_ci"}}
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		p := a.Paired
		row := []Cell{textCell(a.Name), count(p.Pairs), count(len(p.Unmatched)), count(len(p.Lost)), count(len(p.Gained)), figureCell(figure.P(p.McNemarP))}
		if !qualityPaired(s, a) {
			row[3], row[4], row[5] = missing(), missing(), missing()
		}
		if d := p.LatencyDeltaMs; d != nil {
			row = append(row, ms(d.Median), ms(d.Mean), figureCell("["+figure.Ms(d.CILow)+", "+figure.Ms(d.CIHigh)+"]"))
		} else {
			row = append(row, missing(), missing(), missing())
		}
		if d := p.CostDelta; d != nil {
			row = append(row, cost(d.Median), cost(d.Mean), figureCell("["+figure.Cost(d.CILow)+", "+figure.Cost(d.CIHigh)+"]"))
		} else {
			row = append(row, missing(), missing(), missing())
		}
		t.add(row...)
	}
	return t
}

// groupDeltaTable is the paired comparison per input group; nil without
// groups.
func groupDeltaTable(s *analysis.Summary) *Table {
	t := &Table{Header: []string{"candidate", "group", "pairs", "lost", "gained", "latency_median"}}
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		for _, g := range slices.Sorted(maps.Keys(a.Paired.Groups)) {
			gd := a.Paired.Groups[g]
			lost, gained := count(gd.Lost), count(gd.Gained)
			if !qualityPaired(s, a) {
				lost, gained = missing(), missing()
			}
			t.add(textCell(a.Name), textCell(g), count(gd.Pairs), lost, gained, ms(gd.LatencyDeltaMs))
		}
	}
	if len(t.Rows) == 0 {
		return nil
	}
	return t
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return words.Shortlist(ids)
}
