package eval

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// ErrUnknownReportFormat: WriteReport was asked for a format it does not
// write; the message lists the ones it does.
var ErrUnknownReportFormat = errors.New("eval: unknown report format")

// WriteReport writes s as text (aligned tables, the default), md (the same
// tables in Markdown), json (the Summary, with the documented field names) or csv (one
// row per arm with the main figures). html is the page of WriteHTML drawn
// from s alone; given the records, WriteHTML also draws the latency
// distributions.
func WriteReport(w io.Writer, s *analysis.Summary, format string) error {
	switch format {
	case "", "text":
		return writeDoc(w, s, false)
	case "md":
		return writeDoc(w, s, true)
	case "json":
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return fmt.Errorf("eval: encoding summary: %w", err)
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "csv":
		return writeCSV(w, s)
	case "html":
		return WriteHTMLSet(w, s, nil)
	}
	return fmt.Errorf("%w %q (want text, md, json, csv or html)", ErrUnknownReportFormat, format)
}

// table is a header and rows of cells, printed aligned or as Markdown.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(b *strings.Builder, md bool) {
	if md {
		esc := func(c []string) string {
			out := make([]string, len(c))
			for i, v := range c {
				out[i] = strings.ReplaceAll(v, "|", `\|`)
			}
			return "| " + strings.Join(out, " | ") + " |\n"
		}
		b.WriteString(esc(t.header))
		sep := make([]string, len(t.header))
		for i := range sep {
			sep[i] = "---"
		}
		b.WriteString("|" + strings.Join(sep, "|") + "|\n")
		for _, r := range t.rows {
			b.WriteString(esc(r))
		}
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

// writeDoc writes the text or Markdown report.
func writeDoc(w io.Writer, s *analysis.Summary, md bool) error {
	var b strings.Builder
	heading := func(t string) {
		if md {
			b.WriteString("\n## " + t + "\n\n")
		} else {
			b.WriteString("\n" + t + "\n")
		}
	}
	item := func(indent int, t string) {
		if md {
			b.WriteString(strings.Repeat("  ", indent) + "- " + t + "\n")
		} else {
			b.WriteString(strings.Repeat("  ", indent+1) + "- " + t + "\n")
		}
	}
	if md {
		b.WriteString("# crab report\n\n")
		fmt.Fprintf(&b, "Baseline: `%s`. Latency in ms, nearest rank, over every request (failed ones at the time they ended); `ok_p50` over successful requests only.\n", s.Baseline)
	} else {
		fmt.Fprintf(&b, "crab report: %s compared with %s\n", words.Count(len(s.Arms), "arm"), s.Baseline)
		b.WriteString("latency in ms, nearest rank, over every request (failed ones at the time they ended); ok_p50 over successful requests only\n")
	}

	heading("Arms")
	arms(s).write(&b, md)

	if t := cacheTable(s); t != nil {
		heading("Cache: hit rate with hit-path and miss-path latency and leaks")
		t.write(&b, md)
	}
	if t := routeTable(s); t != nil {
		heading("Routing")
		t.write(&b, md)
	}
	if t := uncertaintyTable(s); t != nil {
		heading("Uncertainty: 95% intervals (order statistics for percentiles, exact binomial ranks up to 10,000 requests and their normal approximation above; cost per pass by bootstrap, or the delta method above 20,000 requests)")
		t.write(&b, md)
	}
	if t := loadTable(s); t != nil {
		heading("Load: generator lag and concurrency-slot queue (ms)")
		t.write(&b, md)
	}
	if t := groupTable(s); t != nil {
		heading("Groups")
		t.write(&b, md)
	}
	if len(s.Arms) > 1 {
		heading("Paired against " + s.Baseline + " (candidate - baseline, task by task)")
		pairedTable(s).write(&b, md)
		b.WriteString("\n")
		for i := 1; i < len(s.Arms); i++ {
			a := &s.Arms[i]
			p := a.Paired
			item(0, fmt.Sprintf("%s: lost %s; gained %s", a.Name, orNone(p.Lost), orNone(p.Gained)))
		}
		if t := groupDeltaTable(s); t != nil {
			b.WriteString("\n")
			t.write(&b, md)
		}
	}

	heading("Decision")
	if md {
		b.WriteString(s.Decision.Summary + "\n\n")
	} else {
		b.WriteString("  " + s.Decision.Summary + "\n\n")
	}
	for i := range s.Arms {
		a := &s.Arms[i]
		v := a.Verdict
		if v == analysis.VerdictBaseline {
			v = "the baseline every candidate is compared with"
		}
		if md {
			fmt.Fprintf(&b, "- **%s**: %s\n", a.Name, v)
		} else {
			fmt.Fprintf(&b, "  %s: %s\n", a.Name, v)
		}
		for _, r := range a.Reasons {
			item(1, r)
		}
	}
	if len(s.Decision.Warnings) > 0 {
		heading("Warnings")
		for _, w := range s.Decision.Warnings {
			item(0, w)
		}
	}
	if len(s.Decision.WhatWouldChange) > 0 {
		heading("What would change the decision")
		for i := range s.Arms {
			if c, ok := s.Decision.WhatWouldChange[s.Arms[i].Name]; ok {
				item(0, c)
			}
		}
	}
	if len(s.Notes) > 0 {
		heading("Notes")
		for _, n := range s.Notes {
			item(0, n)
		}
	}
	out := strings.TrimPrefix(b.String(), "\n")
	_, err := io.WriteString(w, out)
	return err
}

// arms is the main table; cache, routing, TTFT and silent-violation columns
// appear only when some arm has them.
func arms(s *analysis.Summary) *table {
	var hasCache, hasRoute, hasTTFT, hasSilent bool
	for i := range s.Arms {
		a := &s.Arms[i]
		hasCache = hasCache || a.CacheStats != nil
		hasRoute = hasRoute || a.RouteStats != nil
		hasTTFT = hasTTFT || a.TTFTP50Ms != nil
		hasSilent = hasSilent || a.SilentViolations > 0
	}
	t := &table{header: []string{"arm", "n", "ok", "fail", "timeouts", "pass", "p50", "p95", "p99", "max", "mean", "ok_p50", "cost", "cost/pass"}}
	if hasTTFT {
		t.header = append(t.header, "ttft_p50", "ttft_p95")
	}
	if hasCache {
		t.header = append(t.header, "hit_rate", "hit_p50", "miss_p50", "leaks")
	}
	if hasRoute {
		t.header = append(t.header, "misroutes u/o/h")
	}
	if hasSilent {
		t.header = append(t.header, "invalid_ok")
	}
	t.header = append(t.header, "verdict")
	for i := range s.Arms {
		a := &s.Arms[i]
		row := []string{a.Name, itoa(a.N), itoa(a.OK), itoa(a.Failed), itoa(a.Timeouts), fmt.Sprintf("%d/%d", a.Pass, a.N),
			figure.Ms(a.P50Ms), figure.Ms(a.P95Ms), figure.Ms(a.P99Ms), figure.Ms(a.MaxMs), figure.Ms(a.MeanMs), figure.MsP(a.OKP50Ms),
			figure.Cost(a.Cost), figure.CostPerPass(a.CostPerPass)}
		if hasTTFT {
			row = append(row, figure.MsP(a.TTFTP50Ms), figure.MsP(a.TTFTP95Ms))
		}
		if hasCache {
			if c := a.CacheStats; c != nil {
				row = append(row, figure.Pct(c.HitRate), figure.MsP(c.HitP50Ms), figure.MsP(c.MissP50Ms), itoa(a.LeakCount()))
			} else {
				row = append(row, "-", "-", "-", "-")
			}
		}
		if hasRoute {
			if r := a.RouteStats; r != nil {
				row = append(row, fmt.Sprintf("%d/%d/%d", r.Misroutes[records.MisrouteUnder], r.Misroutes[records.MisrouteOver], r.Misroutes[records.MisrouteHopeless]))
			} else {
				row = append(row, "-")
			}
		}
		if hasSilent {
			row = append(row, itoa(a.SilentViolations))
		}
		t.add(append(row, a.Verdict)...)
	}
	return t
}

func cacheTable(s *analysis.Summary) *table {
	t := &table{header: []string{"arm", "cached", "hits", "hit_rate", "hit_p50", "hit_p95", "miss_p50", "miss_p95", "saved/hit", "leaks", "scope_mismatches"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		c := a.CacheStats
		if c == nil {
			continue
		}
		leaks := "0"
		if a.LeakCount() > 0 {
			var kinds []string
			for _, k := range slices.Sorted(maps.Keys(c.Leaks)) {
				kinds = append(kinds, fmt.Sprintf("%s %d", k, c.Leaks[k]))
			}
			leaks = strings.Join(kinds, ", ")
		}
		saved := "-"
		if c.SavedPerHit != nil {
			saved = figure.Pct(*c.SavedPerHit)
		}
		t.add(a.Name, itoa(c.CacheRequests), itoa(c.Hits), figure.Pct(c.HitRate), figure.MsP(c.HitP50Ms), figure.MsP(c.HitP95Ms),
			figure.MsP(c.MissP50Ms), figure.MsP(c.MissP95Ms), saved, leaks, itoa(c.ScopeMismatches))
		if c.Cold != nil { // the experiment warmed the cache: cold and warm apart
			t.rows[len(t.rows)-1][0] = a.Name + " (warm)"
			t.add(cacheColdRow(a.Name+" (cold: warm-up)", c.Cold)...)
		}
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

func routeTable(s *analysis.Summary) *table {
	t := &table{header: []string{"arm", "routed", "models", "large_share", "under", "over", "hopeless", "escalated", "escalation_cost", "attempts", "shadow_cost"}}
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
		share := "-"
		if r.RoutedLargeShare != nil {
			share = figure.Pct(*r.RoutedLargeShare)
		}
		t.add(a.Name, itoa(r.Routed), orDash(strings.Join(models, ", ")), share, itoa(r.Misroutes[records.MisrouteUnder]), itoa(r.Misroutes[records.MisrouteOver]),
			itoa(r.Misroutes[records.MisrouteHopeless]), itoa(a.Escalated), figure.Cost(a.EscalationCost), itoa(a.Attempts), figure.Cost(a.ShadowCost))
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

func groupTable(s *analysis.Summary) *table {
	t := &table{header: []string{"arm", "group", "n", "pass", "p50", "p95"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		for _, g := range slices.Sorted(maps.Keys(a.Groups)) {
			gs := a.Groups[g]
			t.add(a.Name, g, itoa(gs.N), fmt.Sprintf("%d/%d", gs.Pass, gs.N), figure.Ms(gs.P50Ms), figure.Ms(gs.P95Ms))
		}
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

func pairedTable(s *analysis.Summary) *table {
	t := &table{header: []string{"candidate", "pairs", "unmatched", "lost", "gained", "mcnemar_p",
		"latency_median", "latency_mean", "latency_95%_ci", "cost_median", "cost_mean", "cost_95%_ci"}}
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		p := a.Paired
		row := []string{a.Name, itoa(p.Pairs), itoa(len(p.Unmatched)), itoa(len(p.Lost)), itoa(len(p.Gained)), figure.P(p.McNemarP)}
		if d := p.LatencyDeltaMs; d != nil {
			row = append(row, figure.Ms(d.Median), figure.Ms(d.Mean), "["+figure.Ms(d.CILow)+", "+figure.Ms(d.CIHigh)+"]")
		} else {
			row = append(row, "-", "-", "-")
		}
		if d := p.CostDelta; d != nil {
			row = append(row, figure.Cost(d.Median), figure.Cost(d.Mean), "["+figure.Cost(d.CILow)+", "+figure.Cost(d.CIHigh)+"]")
		} else {
			row = append(row, "-", "-", "-")
		}
		t.add(row...)
	}
	return t
}

func groupDeltaTable(s *analysis.Summary) *table {
	t := &table{header: []string{"candidate", "group", "pairs", "lost", "gained", "latency_median"}}
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		for _, g := range slices.Sorted(maps.Keys(a.Paired.Groups)) {
			gd := a.Paired.Groups[g]
			t.add(a.Name, g, itoa(gd.Pairs), itoa(gd.Lost), itoa(gd.Gained), figure.Ms(gd.LatencyDeltaMs))
		}
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

// writeCSV writes one row per arm with the main figures; empty cells are
// figures that do not exist for the arm (e.g. cost_per_pass with no pass).
func writeCSV(w io.Writer, s *analysis.Summary) error {
	cw := csv.NewWriter(w)
	header := []string{"arm", "verdict", "n", "warmup", "ok", "failed", "timeouts", "pass",
		"p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms", "min_ms", "ok_p50_ms", "ok_p95_ms", "ok_mean_ms",
		"ttft_p50_ms", "ttft_p95_ms", "cost", "cost_per_pass", "hit_rate", "hit_p50_ms", "miss_p50_ms", "leaks",
		"silent_violations", "lost", "gained", "unmatched", "mcnemar_p", "latency_delta_mean_ms", "latency_delta_ci_low_ms",
		"latency_delta_ci_high_ms", "cost_delta_mean", "cost_delta_ci_low", "cost_delta_ci_high"}
	if err := cw.Write(header); err != nil {
		return err
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return num(*v)
	}
	for i := range s.Arms {
		a := &s.Arms[i]
		row := []string{a.Name, a.Verdict, itoa(a.N), itoa(a.Warmup), itoa(a.OK), itoa(a.Failed), itoa(a.Timeouts), itoa(a.Pass),
			num(a.P50Ms), num(a.P90Ms), num(a.P95Ms), num(a.P99Ms), num(a.MaxMs), num(a.MeanMs), num(a.MinMs),
			opt(a.OKP50Ms), opt(a.OKP95Ms), opt(a.OKMeanMs), opt(a.TTFTP50Ms), opt(a.TTFTP95Ms), num(a.Cost), opt(a.CostPerPass)}
		if c := a.CacheStats; c != nil {
			row = append(row, num(c.HitRate), opt(c.HitP50Ms), opt(c.MissP50Ms), itoa(a.LeakCount()))
		} else {
			row = append(row, "", "", "", "")
		}
		row = append(row, itoa(a.SilentViolations))
		if p := a.Paired; p != nil {
			row = append(row, itoa(len(p.Lost)), itoa(len(p.Gained)), itoa(len(p.Unmatched)), num(p.McNemarP))
			for _, d := range []*analysis.Delta{p.LatencyDeltaMs, p.CostDelta} {
				if d != nil {
					row = append(row, num(d.Mean), num(d.CILow), num(d.CIHigh))
				} else {
					row = append(row, "", "", "")
				}
			}
		} else {
			row = append(row, "", "", "", "", "", "", "", "", "", "")
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func itoa(n int) string { return strconv.Itoa(n) }

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return words.Shortlist(ids)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// loadTable lists lag and queue per arm; nil when no arm has them.
func loadTable(s *analysis.Summary) *table {
	t := &table{header: []string{"arm", "lag_p50", "lag_p99", "lag_max", "queue_p50", "queue_p99", "queue_max", "queued"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		l := a.Load
		if l == nil {
			continue
		}
		t.add(a.Name, figure.SmallMs(l.LagP50Ms), figure.SmallMs(l.LagP99Ms), figure.SmallMs(l.LagMaxMs), figure.SmallMs(l.QueueP50Ms), figure.SmallMs(l.QueueP99Ms), figure.SmallMs(l.QueueMaxMs), itoa(l.Queued))
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

// uncertaintyTable lists each arm's intervals; nil when no arm has them.
func uncertaintyTable(s *analysis.Summary) *table {
	t := &table{header: []string{"arm", "p50", "p50_95%", "p95", "p95_95%", "cost/pass", "cost/pass_95%", "repeats", "p95_min..max_over_repeats"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		u := a.Uncertainty
		if u == nil {
			continue
		}
		cpp, reps, rp95 := "-", "1", "-"
		if a.CostPerPass != nil {
			cpp = figure.CostPerPass(a.CostPerPass)
		}
		if u.Repeats != nil {
			reps = itoa(u.Repeats.N)
			rp95 = figure.Ms(u.Repeats.P95.Min) + ".." + figure.Ms(u.Repeats.P95.Max)
		}
		t.add(a.Name, figure.Ms(a.P50Ms), u.P50CI.String(), figure.Ms(a.P95Ms), u.P95CI.String(), cpp, u.CostPerPassCI.String(), reps, rp95)
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

// cacheColdRow is the cache table's row of the cold (warm-up) figures.
func cacheColdRow(name string, c *analysis.CacheStats) []string {
	leaks, n := "0", 0
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(c.Leaks)) {
		n += c.Leaks[k]
		kinds = append(kinds, fmt.Sprintf("%s %d", k, c.Leaks[k]))
	}
	if n > 0 {
		leaks = strings.Join(kinds, ", ")
	}
	saved := "-"
	if c.SavedPerHit != nil {
		saved = figure.Pct(*c.SavedPerHit)
	}
	return []string{name, itoa(c.CacheRequests), itoa(c.Hits), figure.Pct(c.HitRate), figure.MsP(c.HitP50Ms), figure.MsP(c.HitP95Ms),
		figure.MsP(c.MissP50Ms), figure.MsP(c.MissP95Ms), saved, leaks, itoa(c.ScopeMismatches)}
}
