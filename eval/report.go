package eval

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

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
func WriteReport(w io.Writer, s *Summary, format string) error {
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
		return WriteHTML(w, s, nil)
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
func writeDoc(w io.Writer, s *Summary, md bool) error {
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
		if v == VerdictBaseline {
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
func arms(s *Summary) *table {
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
			fmtMs(a.P50Ms), fmtMs(a.P95Ms), fmtMs(a.P99Ms), fmtMs(a.MaxMs), fmtMs(a.MeanMs), fmtMsP(a.OKP50Ms),
			fmtCost(a.Cost), fmtCostPerPass(a.CostPerPass)}
		if hasTTFT {
			row = append(row, fmtMsP(a.TTFTP50Ms), fmtMsP(a.TTFTP95Ms))
		}
		if hasCache {
			if c := a.CacheStats; c != nil {
				row = append(row, fmtPct(c.HitRate), fmtMsP(c.HitP50Ms), fmtMsP(c.MissP50Ms), itoa(a.LeakCount()))
			} else {
				row = append(row, "-", "-", "-", "-")
			}
		}
		if hasRoute {
			if r := a.RouteStats; r != nil {
				row = append(row, fmt.Sprintf("%d/%d/%d", r.Misroutes[MisrouteUnder], r.Misroutes[MisrouteOver], r.Misroutes[MisrouteHopeless]))
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

func cacheTable(s *Summary) *table {
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
			for _, k := range sortedKeys(c.Leaks) {
				kinds = append(kinds, fmt.Sprintf("%s %d", k, c.Leaks[k]))
			}
			leaks = strings.Join(kinds, ", ")
		}
		saved := "-"
		if c.SavedPerHit != nil {
			saved = fmtPct(*c.SavedPerHit)
		}
		t.add(a.Name, itoa(c.CacheRequests), itoa(c.Hits), fmtPct(c.HitRate), fmtMsP(c.HitP50Ms), fmtMsP(c.HitP95Ms),
			fmtMsP(c.MissP50Ms), fmtMsP(c.MissP95Ms), saved, leaks, itoa(c.ScopeMismatches))
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

func routeTable(s *Summary) *table {
	t := &table{header: []string{"arm", "routed", "models", "large_share", "under", "over", "hopeless", "escalated", "escalation_cost", "attempts", "shadow_cost"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		r := a.RouteStats
		if r == nil {
			continue
		}
		var models []string
		for _, m := range sortedKeys(r.RoutedModels) {
			models = append(models, fmt.Sprintf("%s %d", m, r.RoutedModels[m]))
		}
		share := "-"
		if r.RoutedLargeShare != nil {
			share = fmtPct(*r.RoutedLargeShare)
		}
		t.add(a.Name, itoa(r.Routed), orDash(strings.Join(models, ", ")), share, itoa(r.Misroutes[MisrouteUnder]), itoa(r.Misroutes[MisrouteOver]),
			itoa(r.Misroutes[MisrouteHopeless]), itoa(a.Escalated), fmtCost(a.EscalationCost), itoa(a.Attempts), fmtCost(a.ShadowCost))
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

func groupTable(s *Summary) *table {
	t := &table{header: []string{"arm", "group", "n", "pass", "p50", "p95"}}
	for i := range s.Arms {
		a := &s.Arms[i]
		for _, g := range sortedKeys(a.Groups) {
			gs := a.Groups[g]
			t.add(a.Name, g, itoa(gs.N), fmt.Sprintf("%d/%d", gs.Pass, gs.N), fmtMs(gs.P50Ms), fmtMs(gs.P95Ms))
		}
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

func pairedTable(s *Summary) *table {
	t := &table{header: []string{"candidate", "pairs", "unmatched", "lost", "gained", "mcnemar_p",
		"latency_median", "latency_mean", "latency_95%_ci", "cost_median", "cost_mean", "cost_95%_ci"}}
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		p := a.Paired
		row := []string{a.Name, itoa(p.Pairs), itoa(len(p.Unmatched)), itoa(len(p.Lost)), itoa(len(p.Gained)), fmtP(p.McNemarP)}
		if d := p.LatencyDeltaMs; d != nil {
			row = append(row, fmtMs(d.Median), fmtMs(d.Mean), "["+fmtMs(d.CILow)+", "+fmtMs(d.CIHigh)+"]")
		} else {
			row = append(row, "-", "-", "-")
		}
		if d := p.CostDelta; d != nil {
			row = append(row, fmtCost(d.Median), fmtCost(d.Mean), "["+fmtCost(d.CILow)+", "+fmtCost(d.CIHigh)+"]")
		} else {
			row = append(row, "-", "-", "-")
		}
		t.add(row...)
	}
	return t
}

func groupDeltaTable(s *Summary) *table {
	t := &table{header: []string{"candidate", "group", "pairs", "lost", "gained", "latency_median"}}
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		for _, g := range sortedKeys(a.Paired.Groups) {
			gd := a.Paired.Groups[g]
			t.add(a.Name, g, itoa(gd.Pairs), itoa(gd.Lost), itoa(gd.Gained), fmtMs(gd.LatencyDeltaMs))
		}
	}
	if len(t.rows) == 0 {
		return nil
	}
	return t
}

// writeCSV writes one row per arm with the main figures; empty cells are
// figures that do not exist for the arm (e.g. cost_per_pass with no pass).
func writeCSV(w io.Writer, s *Summary) error {
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
			for _, d := range []*Delta{p.LatencyDeltaMs, p.CostDelta} {
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

// Every figure is computed unrounded; these functions round it once, for
// display. A non-zero figure never prints as 0 (it gets significant digits
// instead), and each function is monotone in its argument, so a mean
// printed between its min and max stays between them.

// fmtMs prints milliseconds with at most one decimal, or two significant
// digits where one decimal would print a non-zero value as 0.
func fmtMs(v float64) string { return fmtFixed(v, 1, 2) }

// fmtFixed prints v with dec decimals, trailing zeros trimmed; a non-zero v
// that would print as 0 gets sig significant digits instead.
func fmtFixed(v float64, dec, sig int) string {
	s := trimNum(strconv.FormatFloat(v, 'f', dec, 64))
	if s == "0" && v != 0 && !math.IsNaN(v) {
		return fmtSigFixed(v, sig)
	}
	return s
}

func fmtMsP(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmtMs(*v)
}

// fmtCost prints a cost with four significant digits, never in exponent
// form, so totals (120) and per-token prices (0.001235) both read plainly.
func fmtCost(v float64) string { return fmtSigFixed(v, 4) }

// fmtCostPerPass prints cost per pass with 2 decimals, or 3 significant
// digits below 1; "-" when nothing passed.
func fmtCostPerPass(v *float64) string {
	if v == nil {
		return "-"
	}
	if math.Abs(*v) >= 1 || *v == 0 {
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	return fmtSigFixed(*v, 3)
}

// fmtCostPerPassPair prints two costs per pass that a sentence compares
// (see fmtPair); "-" for one where nothing passed.
func fmtCostPerPassPair(a, b *float64) (string, string) {
	if a == nil || b == nil {
		return fmtCostPerPass(a), fmtCostPerPass(b)
	}
	return fmtPair(*a, *b, func(v float64) string { return fmtCostPerPass(&v) })
}

// fmtSigFixed prints sig significant digits in fixed notation, trimming
// trailing zeros.
func fmtSigFixed(v float64, sig int) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return trimNum(strconv.FormatFloat(v, 'f', 0, 64))
	}
	dec := sig - 1 - int(math.Floor(math.Log10(math.Abs(v))))
	if dec > 20 {
		return strconv.FormatFloat(v, 'g', sig, 64) // below 1e-20: exponent form rather than 0
	}
	dec = max(0, dec)
	return trimNum(strconv.FormatFloat(v, 'f', dec, 64))
}

// pThreshold is the significance level the reports test p-values against.
const pThreshold = 0.05

// fmtP prints a p-value with 4 significant digits, or more where 4 would
// print a value below pThreshold at or above it (0.0499974 is never
// printed as 0.05).
func fmtP(p float64) string {
	for sig := 4; ; sig++ {
		s := strconv.FormatFloat(p, 'g', sig, 64)
		if v, _ := strconv.ParseFloat(s, 64); sig >= 17 || !(p < pThreshold) || v < pThreshold {
			return s
		}
	}
}

// fmtPct prints a share in [0,1] as a percentage with one decimal (two
// significant digits where that would print a non-zero share as 0%).
func fmtPct(v float64) string { return fmtFixed(v*100, 1, 2) + "%" }

// fmtPair prints two figures that a sentence compares ("p95 X vs Y ms
// (+Z%)") with f, or with as many more significant digits as it takes for
// the printed pair to tell the truth: in the same order as the figures, and
// with the percent change between the printed figures reading as the true
// one. So 1.0051 against 1.0049 prints "1.0051 vs 1.0049 (+0.02%)", never
// "1.01 vs 1 (+0.02%)".
func fmtPair(a, b float64, f func(float64) string) (string, string) {
	sa, sb := f(a), f(b)
	for sig := 3; sig <= 17 && !pairHonest(a, b, sa, sb); sig++ {
		sa, sb = fmtSigFixed(a, sig), fmtSigFixed(b, sig)
	}
	return sa, sb
}

func pairHonest(a, b float64, sa, sb string) bool {
	pa, errA := strconv.ParseFloat(sa, 64)
	pb, errB := strconv.ParseFloat(sb, 64)
	if errA != nil || errB != nil {
		return true // not a number (e.g. "-"): nothing to compare
	}
	return cmpFloat(a, b) == cmpFloat(pa, pb) && relChange(a, b) == relChange(pa, pb)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// trimNum drops trailing fractional zeros and a negative zero.
func trimNum(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return idList(ids)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
