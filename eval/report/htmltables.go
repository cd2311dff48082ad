package report

import (
	"slices"
	"strings"
)

// A table wider than a laptop screen scrolls sideways and hides the columns
// a reader opened the report for, so the page splits it by topic into
// tables that each fit, every one keeping the row's name (and the verdict,
// where the table has one).
const (
	// tableBudgetPx is the widest a table may be drawn: what a section
	// leaves of a 1000 px window (scroll bar, page and section padding).
	tableBudgetPx = 860
	// Widths of a character of the table font (13 px, figures in tabular
	// digits) in the widest font the page may fall back to (DejaVu Sans),
	// bold in headers, and a cell's padding and border.
	cellCharPx   = 8.4
	headerCharPx = 9.2
	cellPadPx    = 22
	// nameCapPx is the widest a column of words is drawn: longer names
	// and lists wrap (see the CSS of td.words).
	nameCapPx = 190
)

// columnTopics says what each column of the document's tables is about; a
// table that must be split is split along these topics, in the order they
// first appear, and columns not named here go with the column before them.
var columnTopics = map[string]string{
	"n": "quality", "ok": "quality", "fail": "quality", "timeouts": "quality", "pass": "quality", "invalid_ok": "quality",
	"pairs": "quality", "unmatched": "quality", "lost": "quality", "gained": "quality", "mcnemar_p": "quality",
	"p50": "latency", "p95": "latency", "p99": "latency", "max": "latency", "mean": "latency", "ok_p50": "latency",
	"ttft_p50": "latency", "ttft_p95": "latency", "p50_95%": "latency", "p95_95%": "latency", "repeats": "latency",
	"p95_min..max_over_repeats": "latency", "latency_median": "latency", "latency_mean": "latency", "latency_95%_ci": "latency",
	"cost": "cost", "cost/pass": "cost", "cost/pass_95%": "cost", "cost_median": "cost", "cost_mean": "cost", "cost_95%_ci": "cost",
	"hit_rate": "cache", "hit_p50": "cache", "miss_p50": "cache", "cached": "cache", "hits": "cache", "hit_p95": "cache",
	"miss_p95": "cache", "saved/hit": "cache",
	"leaks": "cache leaks", "scope_mismatches": "cache leaks", "semantic_hits": "cache leaks", "false_hits": "cache leaks",
	"false_hit_upper_95": "cache leaks",
	"misroutes u/o/h":    "routing", "routed": "routing", "models": "routing", "large_share": "routing", "under": "routing",
	"over": "routing", "hopeless": "routing", "escalated": "routing cost", "escalation_cost": "routing cost", "attempts": "routing cost",
	"shadow_cost": "routing cost",
}

// htmlTable is one table of the page: a caption when it is part of a split
// table, the header split at underscores (so that a long column name may
// wrap), and the rows.
type htmlTable struct {
	Caption string
	Header  [][]string
	Rows    [][]htmlCell
}

// htmlTables draws t as one table when it fits tableBudgetPx, else as
// several, split by topic: each keeps the naming columns (the first, and a
// "group" column beside it) and the verdict column. A split table without
// a verdict column whose rows are all arms gets one from verdicts (arm →
// verdict), so that each piece says what became of its arms.
func htmlTables(t *Table, verdicts map[string]string) []htmlTable {
	rows := htmlRows(t)
	widths := columnWidths(t, rows)
	all := make([]int, len(t.Header))
	for j := range all {
		all[j] = j
	}
	if sum(widths, all) <= tableBudgetPx {
		return []htmlTable{pickColumns(t, rows, "", all)}
	}
	var keys, verdict []int
	keys = append(keys, 0)
	if len(t.Header) > 1 && t.Header[1] == "group" {
		keys = append(keys, 1)
	}
	var topics []string
	cols := map[string][]int{}
	topic := ""
	for j := len(keys); j < len(t.Header); j++ {
		h := t.Header[j]
		if h == "verdict" {
			verdict = append(verdict, j)
			continue
		}
		if tp, ok := columnTopics[h]; ok {
			topic = tp
		}
		if _, seen := cols[topic]; !seen {
			topics = append(topics, topic)
		}
		cols[topic] = append(cols[topic], j)
	}
	if len(verdict) == 0 && len(rows) > 0 {
		if withVerdict, ok := addVerdictColumn(t, rows, verdicts); ok {
			t, rows = withVerdict, htmlRows(withVerdict)
			verdict = []int{len(t.Header) - 1}
			widths = columnWidths(t, rows)
		}
	}
	fixed := sum(widths, keys) + sum(widths, verdict)
	var out []htmlTable
	var cur []int
	var names []string
	last := "" // the topic the previous piece ended with
	flush := func() {
		if len(cur) > 0 {
			caption := strings.Join(names, " · ")
			if names[0] == last {
				caption += " (continued)"
			}
			out = append(out, pickColumns(t, rows, caption, concat(keys, cur, verdict)))
			last = names[len(names)-1]
		}
		cur, names = nil, nil
	}
	for _, tp := range topics {
		// Topics are packed together while they fit; a topic wider than
		// the budget on its own is cut where it would overflow.
		if len(cur) > 0 && fixed+sum(widths, cur)+sum(widths, cols[tp]) > tableBudgetPx {
			flush()
		}
		for _, j := range cols[tp] {
			if len(cur) > 0 && fixed+sum(widths, cur)+widths[j] > tableBudgetPx {
				flush()
			}
			if len(names) == 0 || names[len(names)-1] != tp {
				names = append(names, tp)
			}
			cur = append(cur, j)
		}
	}
	flush()
	return out
}

// addVerdictColumn is t with a verdict column from verdicts, when every
// row's first cell names an arm there.
func addVerdictColumn(t *Table, rows [][]htmlCell, verdicts map[string]string) (*Table, bool) {
	out := &Table{Header: append(slices.Clone(t.Header), "verdict")}
	for i, r := range t.Rows {
		if len(r) == 0 {
			return nil, false
		}
		v, ok := verdicts[rows[i][0].Text]
		if !ok {
			return nil, false
		}
		out.Rows = append(out.Rows, append(slices.Clone(r), verdictCell(v)))
	}
	return out, true
}

// pickColumns is the table of t's columns cols, in that order.
func pickColumns(t *Table, rows [][]htmlCell, caption string, cols []int) htmlTable {
	ht := htmlTable{Caption: caption, Rows: make([][]htmlCell, len(rows))}
	for _, j := range cols {
		ht.Header = append(ht.Header, strings.SplitAfter(shown(t.Header[j]), "_"))
	}
	for i, r := range rows {
		for _, j := range cols {
			if j < len(r) {
				ht.Rows[i] = append(ht.Rows[i], r[j])
			}
		}
	}
	return ht
}

// columnWidths estimates each column's drawn width in pixels: its widest
// cell, or the widest part of its header between underscores, plus padding.
func columnWidths(t *Table, rows [][]htmlCell) []float64 {
	w := make([]float64, len(t.Header))
	for j, h := range t.Header {
		for _, part := range strings.SplitAfter(h, "_") {
			w[j] = max(w[j], float64(len([]rune(part)))*headerCharPx)
		}
	}
	for _, r := range rows {
		for j, c := range r {
			if j >= len(w) {
				continue
			}
			cw := float64(len([]rune(c.Text))) * cellCharPx
			if c.Class == "" || c.Class == "words" {
				cw = min(cw, nameCapPx)
			}
			w[j] = max(w[j], cw)
		}
	}
	for j := range w {
		w[j] += cellPadPx
	}
	return w
}

func sum(w []float64, cols []int) float64 {
	s := 0.0
	for _, j := range cols {
		s += w[j]
	}
	return s
}

func concat(parts ...[]int) []int {
	var out []int
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
