package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/rectest"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// A table wider than the budget is split by topic: every piece keeps the
// arm and the verdict, fits the budget, and every other column is in
// exactly one piece, in its order; a narrow table is left whole.
func TestHTMLTablesSplitByTopic(t *testing.T) {
	t.Parallel()
	recs := htmlRecords("baseline", "cached", "routed")
	s := htmlSummary(t, recs)
	arms := armsTable(s)
	pieces := htmlTables(arms, nil)
	if len(pieces) < 2 {
		t.Fatalf("the arms table (%d columns) is drawn as %d table; want it split", len(arms.Header), len(pieces))
	}
	var seen []string
	for _, p := range pieces {
		head := make([]string, len(p.Header))
		for j, parts := range p.Header {
			head[j] = strings.Join(parts, "")
		}
		if head[0] != "arm" || head[len(head)-1] != "verdict" {
			t.Errorf("piece %q: columns %v; want arm first and verdict last", p.Caption, head)
		}
		if p.Caption == "" {
			t.Errorf("piece %v has no caption naming its topic", head)
		}
		seen = append(seen, head[1:len(head)-1]...)
		for i, r := range p.Rows {
			if len(r) != len(head) || r[0].Text != s.Arms[i].Name || r[len(r)-1].Text != s.Arms[i].Verdict {
				t.Errorf("piece %q row %d: %v; want %s ... %s", p.Caption, i, r, s.Arms[i].Name, s.Arms[i].Verdict)
			}
		}
		widths := columnWidths(arms, htmlRows(arms))
		total := 0.0
		for _, h := range head {
			total += widths[slices.Index(arms.Header, h)]
		}
		if total > tableBudgetPx {
			t.Errorf("piece %q is %.0f px wide by the estimate; want at most %d", p.Caption, total, tableBudgetPx)
		}
	}
	if want := arms.Header[1 : len(arms.Header)-1]; !slices.Equal(seen, want) {
		t.Errorf("columns across the pieces %v; want each of %v once, in order", seen, want)
	}
	if got := htmlTables(groupTable(s), nil); len(got) != 1 || got[0].Caption != "" {
		t.Errorf("the narrow groups table is drawn as %d tables; want one, whole", len(got))
	}
	// The paired table has no verdict column: each of its pieces gets one.
	verdicts := map[string]string{}
	for i := range s.Arms {
		verdicts[s.Arms[i].Name] = s.Arms[i].Verdict
	}
	paired := htmlTables(pairedTable(s), verdicts)
	if len(paired) < 2 {
		t.Fatalf("the paired table is drawn as %d table; want it split", len(paired))
	}
	for _, p := range paired {
		if h := p.Header[len(p.Header)-1]; strings.Join(h, "") != "verdict" || p.Rows[0][len(p.Rows[0])-1].Text != s.Arms[1].Verdict {
			t.Errorf("paired piece %q ends with %v, %v; want the verdict", p.Caption, h, p.Rows[0][len(p.Rows[0])-1])
		}
	}
}

// Column names split after underscores, so that a long one may wrap.
func TestHTMLTableHeaderWraps(t *testing.T) {
	t.Parallel()
	got := htmlTables(&Table{Header: []string{"arm", "false_hit_upper_95"}, Rows: [][]Cell{{textCell("a"), figureCell("1%")}}}, nil)
	if want := []string{"false_", "hit_", "upper_", "95"}; len(got) != 1 || !slices.Equal(got[0].Header[1], want) {
		t.Errorf("header %v; want %q", got[0].Header, want)
	}
}

// Every arm has one colour in every chart: the baseline grey, the
// candidates distinct up to the palette's size.
func TestArmColours(t *testing.T) {
	t.Parallel()
	if armColor(0) != baselineColour {
		t.Errorf("the baseline is %v; want grey %v", armColor(0), baselineColour)
	}
	seen := map[string]int{}
	for i := range len(armPalette) + 1 {
		c := cssColour(i)
		if j, ok := seen[c]; ok {
			t.Errorf("arms %d and %d share colour %s", j, i, c)
		}
		seen[c] = i
	}
	if armDashes(1) != nil || armDashes(len(armPalette)+1) == nil {
		t.Errorf("dashes: first candidate %v, first reuse %v; want solid, then dashed", armDashes(1), armDashes(len(armPalette)+1))
	}
}

// Labels of points close together are placed apart: none overlaps another
// label or a point.
func TestPointLabelsApart(t *testing.T) {
	t.Parallel()
	s := &analysis.Summary{Baseline: "baseline"}
	cpp := []float64{0.00244, 0.00162, 0.00156, 0.00152, 0.00149, 0.00141, 0.00055, 0.00217}
	pass := []int{474, 476, 319, 476, 417, 474, 395, 474}
	for i := range cpp {
		a := analysis.ArmSummary{Name: fmt.Sprintf("arm_number_%d", i), N: 480, Pass: pass[i], CostPerPass: &cpp[i], Verdict: analysis.VerdictAccept}
		if i == 0 {
			a.Name, a.Verdict = "baseline", analysis.VerdictBaseline
		}
		s.Arms = append(s.Arms, a)
	}
	s.Arms[4].RouteStats = &analysis.RouteStats{}
	var pts []frontierPoint
	for i := range s.Arms {
		pts = append(pts, frontierPoint{cpp: cpp[i], pass: pass[i], fails: 480 - pass[i], i: i})
	}
	yOf := func(a frontierPoint) float64 { return float64(a.pass) }
	p := newChart("t", "x", "y")
	l := chartLegend()
	var labels pointLabels
	if err := addFrontierPoints(p, &l, s, pts, yOf, &labels); err != nil {
		t.Fatal(err)
	}
	p.Add(&labels)
	frontierAxes(p, pts, yOf, false, false)
	p.Draw(draw.New(vgsvg.New(chartW, chartH)))
	n := len(pts)
	if len(labels.placed) != 2*n {
		t.Fatalf("%d rectangles placed; want %d labels and %d markers", len(labels.placed), n, n)
	}
	for i := range n {
		for j := range labels.placed {
			if j != i && overlap(labels.placed[i], labels.placed[j]) > 0 {
				t.Errorf("label %q overlaps %v", labels.text[i], labels.placed[j])
			}
		}
	}
}

// A bar too short to see gets its value written; the others do not.
func TestSmallBarLabels(t *testing.T) {
	t.Parallel()
	recs := htmlRecords("baseline", "cached")
	s := htmlSummary(t, recs)
	g := s.Arms[1].Groups["short"]
	g.P50Ms = 0.2 // a cache hit beside model calls of about 200 ms
	s.Arms[1].Groups["short"] = g
	p := newChart("t", "x", "y")
	l := chartLegend()
	if _, err := groupedBars(p, &l, s, groupNames(s), func(a *analysis.ArmSummary, gr string) (float64, bool) {
		return a.Groups[gr].P50Ms, true
	}, func(v float64) string { return fmt.Sprint(v) }); err != nil {
		t.Fatal(err)
	}
	svg, err := renderSVG(p, &l)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(svg), ">0.2</text>"); n != 1 {
		t.Errorf("the 0.2 ms bar is labelled %d times; want once", n)
	}
	if big := fmt.Sprint(s.Arms[0].Groups["short"].P50Ms); strings.Contains(string(svg), ">"+big+"</text>") {
		t.Errorf("the %s ms bar, tall enough to see, is labelled too", big)
	}
}

// The verdict table has one row per arm with the figures its verdict rests
// on: passes against the baseline's, the paired deltas, and the gate checks
// that apply (leaks only for an arm with a cache).
func TestVerdictRows(t *testing.T) {
	t.Parallel()
	recs := htmlRecords("baseline", "cached", "routed")
	s := htmlSummary(t, recs)
	rows := verdictRows(s)
	if len(rows) != 3 {
		t.Fatalf("%d rows; want 3", len(rows))
	}
	base, cached, routed := rows[0], rows[1], rows[2]
	if base.Verdict != "baseline" || base.Latency != "-" || base.PassesBase != "" || base.Reason == "" {
		t.Errorf("baseline row %+v; want no deltas and the baseline's description", base)
	}
	a := &s.Arms[1]
	if want := fmt.Sprintf("%d/%d", a.Pass, a.N); cached.Passes != want || cached.PassesBase != fmt.Sprintf("vs %d/%d", s.Arms[0].Pass, s.Arms[0].N) {
		t.Errorf("cached passes %q %q; want %q against the baseline's", cached.Passes, cached.PassesBase, want)
	}
	if d := a.Paired.LatencyDeltaMs; !strings.HasSuffix(cached.Latency, " ms") || cached.LatencyCI == "" || (d.CIHigh < 0) != (cached.LatencyClass == "better") {
		t.Errorf("cached latency %q %q class %q; want the paired delta, coloured when its interval excludes 0", cached.Latency, cached.LatencyCI, cached.LatencyClass)
	}
	if len(cached.Checks) == 0 || !strings.HasPrefix(cached.Checks[0].Text, "leaks ") {
		t.Errorf("cached checks %+v; want leaks first", cached.Checks)
	}
	for _, c := range routed.Checks {
		if strings.HasPrefix(c.Text, "leaks") {
			t.Errorf("routed arm without a cache shows %q", c.Text)
		}
	}
	if rows[1].Colour != cssColour(1) || rows[0].Colour != cssColour(0) {
		t.Errorf("row colours %s, %s; want the charts' %s, %s", rows[0].Colour, rows[1].Colour, cssColour(0), cssColour(1))
	}
}

// One p95 far above the rest (a timeout) does not flatten the latency
// bars: the axis stops short of it, the whisker ends at the top with its
// value written, and the caption says so.
func TestGroupLatencyOutlierWhisker(t *testing.T) {
	t.Parallel()
	recs := htmlRecords("baseline", "cached")
	s := htmlSummary(t, recs)
	g := s.Arms[0].Groups["long"]
	g.P95Ms = 20000
	s.Arms[0].Groups["long"] = g
	c, err := groupLatencyChart(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c.SVG), "→ 20000") {
		t.Errorf("the cut whisker's p95 is not written on the chart")
	}
	if !strings.Contains(c.Caption, "The axis stops at") || !strings.Contains(c.Caption, "1 whisker far above") {
		t.Errorf("caption %q; want it to say where the axis stops", c.Caption)
	}
	if top := whiskerCap(s, groupNames(s)); top >= 20000 || top < s.Arms[0].Groups["short"].P95Ms {
		t.Errorf("axis top %v; want below the outlier and at least every other p95", top)
	}
}

// Under a goodput objective the verdict table adds the goodput delta, and
// the page draws its column; without one, neither.
func TestVerdictRowsGoodput(t *testing.T) {
	t.Parallel()
	recs := htmlRecords("baseline", "routed")
	set := rectest.Set(t, recs)
	s, err := analysis.Summarize(set, analysis.Options{Seed: 1, Resamples: 200,
		Gate: &analysis.GateConfig{Objective: analysis.ObjectiveGoodput, SLO: analysis.SLO{E2EMs: 200}}})
	if err != nil {
		t.Fatal(err)
	}
	rows := verdictRows(s)
	if !hasGoodput(rows) || rows[1].Goodput == "" || !strings.HasSuffix(rows[1].Goodput, "%") {
		t.Fatalf("routed row %+v; want its goodput delta", rows[1])
	}
	if out := renderHTML(t, s, recs); !strings.Contains(out, "<th>goodput Δ: mean [95% CI]</th>") || !strings.Contains(out, `colspan="7"`) {
		t.Errorf("the page has no goodput column")
	}
	if hasGoodput(verdictRows(htmlSummary(t, recs))) {
		t.Errorf("a goodput column without a goodput objective")
	}
}
