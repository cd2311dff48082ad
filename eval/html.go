package eval

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/internal/words"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteHTML writes s as one self-contained HTML page (report.html): the
// tables of the Markdown report, beside charts drawn as inline SVG. It loads
// nothing from the network: no scripts, no external style sheets, fonts or
// images.
//
// The charts are the latency CDF of every arm and its tail, hit-path against
// miss-path latency for arms with a cache, pass rate and latency per input
// group, and, when some arm routes, the arms frontier (cost per pass against
// passing requests, one point per arm). recs are the records s was
// summarized from; the latency distributions are drawn from them (warm-up
// records left out, as in s). With no records the page says that those
// charts need them and draws the rest from s alone.
func WriteHTML(w io.Writer, s *Summary, recs []Record) error {
	set := NewRecordSet()
	for i := range recs {
		set.push(&recs[i])
	}
	return WriteHTMLSet(w, s, set)
}

// WriteHTMLSet is WriteHTML drawing the latency charts from records in
// compact form (see ReadSet); recs may be nil.
func WriteHTMLSet(w io.Writer, s *Summary, recs *RecordSet) error {
	if recs == nil {
		recs = NewRecordSet()
	}
	var md strings.Builder
	if err := writeDoc(&md, s, true); err != nil {
		return err
	}
	page := htmlPage{Baseline: s.Baseline, Decision: s.Decision.Summary}
	if n := len(s.Decision.Warnings); n > 0 {
		page.Warnings = words.Count(n, "warning")
	}
	page.Title = fmt.Sprintf("crab report: %s against %s", words.Count(len(s.Arms)-1, "candidate"), s.Baseline)
	for i := range s.Arms {
		page.Verdicts = append(page.Verdicts, htmlChip{Name: s.Arms[i].Name, Verdict: s.Arms[i].Verdict, Class: verdictClass(s.Arms[i].Verdict)})
	}
	page.Sub = runLine(recs)

	sections := mdSections(md.String())
	charts, note := buildCharts(s, recs)
	chartSec := htmlSection{ID: "charts", Title: "Charts", Charts: charts, Note: mdSpans(note)}
	at := len(sections)
	for i, sec := range sections {
		if sec.Title == "Arms" {
			at = i + 1
			break
		}
	}
	// The first section holds the title and the introduction of the
	// Markdown report; the page shows them in its header.
	if len(sections) > 0 && sections[0].Title == "" {
		page.Intro = sections[0].Blocks
		sections = sections[1:]
		at--
	}
	at = max(0, min(at, len(sections)))
	page.Sections = slices.Insert(sections, at, chartSec)
	for _, sec := range page.Sections {
		page.Nav = append(page.Nav, htmlChip{Name: navLabel(sec.Title), Class: sec.ID})
	}

	var buf bytes.Buffer
	if err := htmlTmpl.Execute(&buf, page); err != nil {
		return fmt.Errorf("eval: writing html report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// htmlPage is what the page template renders.
type htmlPage struct {
	Title, Sub, Baseline, Decision string
	Warnings                       string // "2 warnings"; empty when none
	Verdicts                       []htmlChip
	Intro                          []htmlBlock
	Nav                            []htmlChip
	Sections                       []htmlSection
}

// htmlChip is a name with a CSS class: a verdict badge or a navigation link
// (Class holds the section id).
type htmlChip struct{ Name, Verdict, Class string }

// htmlSection is one "## heading" of the Markdown report, or the charts.
type htmlSection struct {
	ID, Title string
	Blocks    []htmlBlock
	Charts    []htmlChart
	Note      []htmlSpan
}

// htmlBlock is a paragraph, a list or a table.
type htmlBlock struct {
	Para   []htmlSpan
	Items  []htmlItem
	Header []string
	Rows   [][]htmlCell
}

// htmlItem is a list item with its nested items.
type htmlItem struct {
	Spans    []htmlSpan
	Children []htmlItem
}

// htmlSpan is a run of text, plain, bold or code.
type htmlSpan struct {
	Text       string
	Bold, Code bool
	Class      string
}

// htmlCell is a table cell; Class right-aligns numbers and colours verdicts.
type htmlCell struct{ Text, Class string }

// htmlChart is one inline SVG chart with its caption.
type htmlChart struct {
	ID, Title, Caption string
	SVG                template.HTML
}

func verdictClass(v string) string {
	switch v {
	case VerdictAccept:
		return "v-accept"
	case VerdictReject:
		return "v-reject"
	case VerdictBaseline:
		return "v-baseline"
	}
	return ""
}

// runLine names the runs and counts the records behind the page.
func runLine(recs *RecordSet) string {
	if recs.Len() == 0 {
		return "drawn from the summary alone (no records)"
	}
	ids, warm := recs.runIDs, recs.warm
	var names []string
	for id := range ids {
		if id != "" {
			names = append(names, id)
		}
	}
	sort.Strings(names)
	line := words.Count(recs.Len(), "record")
	if warm > 0 {
		line += fmt.Sprintf(" (%d warm-up, left out)", warm)
	}
	switch {
	case len(names) == 1:
		line = "run " + names[0] + " · " + line
	case len(names) > 1:
		line = fmt.Sprintf("%d runs (%s) · %s", len(names), idList(names), line)
	}
	return line
}

// navLabel shortens a section title for the navigation bar: the words
// before a colon or a parenthesis.
func navLabel(title string) string {
	if i := strings.IndexAny(title, ":("); i > 0 {
		return strings.TrimSpace(title[:i])
	}
	return title
}

// mdSections splits the Markdown report into sections at "## " headings;
// the first section (empty title) holds what comes before the first one.
// Every construct writeDoc emits is understood: headings, paragraphs with
// **bold** and `code`, nested "- " lists and pipe tables; any other line is
// kept as paragraph text.
func mdSections(md string) []htmlSection {
	secs := []htmlSection{{}}
	cur := func() *htmlSection { return &secs[len(secs)-1] }
	lines := strings.Split(md, "\n")
	var para []string
	flush := func() {
		if len(para) > 0 {
			cur().Blocks = append(cur().Blocks, htmlBlock{Para: mdSpans(strings.Join(para, " "))})
			para = nil
		}
	}
	seen := map[string]int{}
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		trim := strings.TrimLeft(ln, " ")
		switch {
		case strings.TrimSpace(ln) == "":
			flush()
		case strings.HasPrefix(ln, "# "):
			flush()
		case strings.HasPrefix(ln, "## "):
			flush()
			title := strings.TrimSpace(ln[3:])
			id := slug(navLabel(title))
			seen[id]++
			if seen[id] > 1 {
				id += "-" + strconv.Itoa(seen[id])
			}
			secs = append(secs, htmlSection{ID: id, Title: title})
		case strings.HasPrefix(trim, "|"):
			flush()
			var tb struct {
				Header []string
				Rows   [][]string
			}
			for ; i < len(lines) && strings.HasPrefix(strings.TrimLeft(lines[i], " "), "|"); i++ {
				cells := mdCells(strings.TrimSpace(lines[i]))
				if tb.Header == nil {
					tb.Header = cells
					continue
				}
				if isSeparator(cells) {
					continue
				}
				tb.Rows = append(tb.Rows, cells)
			}
			i--
			cur().Blocks = append(cur().Blocks, htmlBlock{Header: tb.Header, Rows: classify(tb.Header, tb.Rows)})
		case strings.HasPrefix(trim, "- "):
			flush()
			var items []htmlItem
			for ; i < len(lines); i++ {
				l := lines[i]
				t := strings.TrimLeft(l, " ")
				if !strings.HasPrefix(t, "- ") {
					break
				}
				it := htmlItem{Spans: verdictSpans(mdSpans(t[2:]))}
				if len(l)-len(t) > 0 && len(items) > 0 {
					last := &items[len(items)-1]
					last.Children = append(last.Children, it)
				} else {
					items = append(items, it)
				}
			}
			i--
			cur().Blocks = append(cur().Blocks, htmlBlock{Items: items})
		default:
			para = append(para, strings.TrimSpace(ln))
		}
	}
	flush()
	return secs
}

// mdCells splits a pipe-table row, undoing writeDoc's `\|` escape.
func mdCells(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cell.WriteByte('|')
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

func isSeparator(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(c, "-: ") != "" || c == "" {
			return false
		}
	}
	return true
}

// classify right-aligns the columns of figures (every cell numeric or
// "-"; never the first, which names the row) and colours verdict cells.
func classify(header []string, rows [][]string) [][]htmlCell {
	numCol := func(j int) bool {
		if j == 0 {
			return false
		}
		for _, r := range rows {
			if j < len(r) && !isNumeric(r[j]) {
				return false
			}
		}
		return true
	}
	width := len(header)
	for _, r := range rows {
		width = max(width, len(r))
	}
	num := make([]bool, width)
	for j := range num {
		num[j] = numCol(j)
	}
	out := make([][]htmlCell, len(rows))
	for i, r := range rows {
		out[i] = make([]htmlCell, len(r))
		for j, c := range r {
			out[i][j].Text = c
			switch {
			case j < len(header) && header[j] == "verdict":
				out[i][j].Class = verdictClass(c)
			case num[j]:
				out[i][j].Class = "num"
			}
		}
	}
	return out
}

// isNumeric reports whether a cell is a figure: digits with signs, points,
// slashes, percent signs, exponents and interval brackets, or "-".
func isNumeric(c string) bool {
	if c == "" {
		return false
	}
	digit := false
	for _, r := range c {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case strings.ContainsRune("-+.,/%[] e", r):
		default:
			return false
		}
	}
	return digit || c == "-"
}

// verdictSpans colours the verdict of a decision line ("**arm**: accept").
func verdictSpans(sp []htmlSpan) []htmlSpan {
	if len(sp) != 2 || !sp[0].Bold || !strings.HasPrefix(sp[1].Text, ": ") {
		return sp
	}
	v := strings.TrimPrefix(sp[1].Text, ": ")
	if c := verdictClass(v); c != "" {
		return []htmlSpan{sp[0], {Text: ": "}, {Text: v, Class: c}}
	}
	return sp
}

// mdSpans splits text at ` and ** into plain, code and bold runs.
func mdSpans(s string) []htmlSpan {
	var out []htmlSpan
	var bold, code bool
	var cur strings.Builder
	emit := func() {
		if cur.Len() > 0 {
			out = append(out, htmlSpan{Text: cur.String(), Bold: bold, Code: code})
			cur.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '`':
			emit()
			code = !code
		case !code && strings.HasPrefix(s[i:], "**"):
			emit()
			bold = !bold
			i++
		default:
			cur.WriteByte(s[i])
		}
	}
	emit()
	return out
}

// slug makes an element id from a heading: lower-case letters and digits
// joined by dashes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	if b.Len() == 0 {
		return "section"
	}
	return b.String()
}

// Charts.

// armPalette is the Okabe–Ito palette, which stays distinct for readers
// with colour-blindness; arms past eight reuse it with dashed lines.
var armPalette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, {0xE6, 0x9F, 0x00, 0xff}, {0x00, 0x9E, 0x73, 0xff}, {0xD5, 0x5E, 0x00, 0xff},
	{0xCC, 0x79, 0xA7, 0xff}, {0x56, 0xB4, 0xE9, 0xff}, {0x00, 0x00, 0x00, 0xff}, {0xB8, 0xA3, 0x00, 0xff},
}

func armColor(i int) color.RGBA { return armPalette[i%len(armPalette)] }

func armDashes(i int) []vg.Length {
	if i/len(armPalette)%2 == 1 {
		return []vg.Length{vg.Points(6), vg.Points(3)}
	}
	return nil
}

// chartFont is Liberation Sans, which gonum/plot measures text with; the
// page's CSS falls back to the metrically equal Arial or Helvetica.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

const (
	chartW = 720 // points
	chartH = 340
	// cdfPoints is the most requests a distribution is drawn from whole;
	// above it pickRanks picks about 400 to 550 ranks.
	cdfPoints = 500
)

// armLatencies holds one arm's non-warm-up latencies, sorted.
type armLatencies struct {
	all, hit, miss []float64
}

// buildCharts draws every chart the data supports, in page order; note
// says which charts are left out and why.
func buildCharts(s *Summary, recs *RecordSet) ([]htmlChart, string) {
	idx := map[string]int{}
	for i := range s.Arms {
		idx[s.Arms[i].Name] = i
	}
	lat := make([]armLatencies, len(s.Arms))
	n := 0
	recs.each(func(r *statRec) {
		j, ok := idx[recs.syms.str(r.Arm)]
		if !ok || r.Warmup || math.IsNaN(r.E2EMs) || math.IsInf(r.E2EMs, 0) {
			return
		}
		n++
		lat[j].all = append(lat[j].all, r.E2EMs)
		switch recs.syms.str(r.Cache) {
		case "hit":
			lat[j].hit = append(lat[j].hit, r.E2EMs)
		case "miss":
			lat[j].miss = append(lat[j].miss, r.E2EMs)
		}
	})
	for i := range lat {
		slices.Sort(lat[i].all)
		slices.Sort(lat[i].hit)
		slices.Sort(lat[i].miss)
	}
	var charts []htmlChart
	var notes []string
	// A chart that cannot be drawn is named in the note; the tables and
	// the other charts still make the page.
	add := func(name string, build func() (*htmlChart, error)) {
		c, err := drawSafely(build)
		if err != nil {
			notes = append(notes, fmt.Sprintf("The %s chart could not be drawn: %v.", name, err))
			return
		}
		if c != nil {
			charts = append(charts, *c)
		}
	}
	if n == 0 {
		notes = append(notes, "The latency distributions (CDF, tail, cache hit and miss paths) are drawn from the records, which this report was not given: `crab report --format html RUN_DIR` draws them.")
	} else {
		add("latency CDF", func() (*htmlChart, error) { return cdfChart(s, lat) })
		add("latency tail", func() (*htmlChart, error) { return tailChart(s, lat) })
		add("cache hit and miss path", func() (*htmlChart, error) { return cacheChart(s, lat) })
	}
	add("pass rate per group", func() (*htmlChart, error) { return groupPassChart(s) })
	add("latency per group", func() (*htmlChart, error) { return groupLatencyChart(s) })
	add("arms frontier", func() (*htmlChart, error) { return frontierChart(s) })
	return charts, strings.Join(notes, " ")
}

// drawSafely runs a chart builder, turning a panic of the plotting library
// (it panics on data it cannot place, such as a non-positive value on a
// log axis) into an error.
func drawSafely(build func() (*htmlChart, error)) (c *htmlChart, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return build()
}

// newChart is a plot with crab's fonts and a light grid.
func newChart(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(chartFont, 13)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(chartFont, 11)
		a.Tick.Label.Font = font.From(chartFont, 10)
		a.Padding = vg.Points(2)
	}
	p.X.Tick.Marker = trimTicks{plot.DefaultTicks{}}
	p.Y.Tick.Marker = trimTicks{plot.DefaultTicks{}}
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 225}
	g.Horizontal.Color = color.Gray{Y: 225}
	p.Add(g)
	return p
}

// chartLegend is a legend drawn beside the plot, not over its data.
func chartLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = font.From(chartFont, 10)
	l.Top, l.Left = true, true
	l.Padding = vg.Points(3)
	l.ThumbnailWidth = vg.Points(22)
	return l
}

// renderSVG draws p with its legend in a strip to the right and returns the
// SVG element, ready to inline in HTML.
func renderSVG(p *plot.Plot, l *plot.Legend) (template.HTML, error) {
	c := vgsvg.New(chartW, chartH)
	dc := draw.New(c)
	plotC := dc
	if l != nil {
		// Browsers may set the legend in a slightly wider font than the one
		// it is measured with: leave room.
		width := l.Rectangle(dc).Size().X*1.2 + vg.Points(16)
		plotC = draw.Crop(dc, 0, -width, 0, 0)
		lc := draw.Crop(dc, chartW-width+vg.Points(10), 0, 0, -vg.Points(28))
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		l.Draw(lc)
	}
	p.Draw(plotC)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("eval: drawing chart %q: %w", p.Title.Text, err)
	}
	svg := buf.String()
	// Inline SVG in HTML takes neither the XML declaration nor the
	// generator comment.
	if i := strings.Index(svg, "<svg"); i >= 0 {
		svg = svg[i:]
	}
	svg = strings.Replace(svg, "<svg ", `<svg role="img" `, 1)
	// vgsvg escapes every text it writes (arm and group names included).
	return template.HTML(svg), nil
}

// logFloor returns the lowest value a log axis shows for vals: the smallest
// positive one (1 ms when there is none); it counts the values at or below
// zero, which are drawn at the floor.
func logFloor(sets ...[]float64) (floor float64, atOrBelowZero int) {
	floor = math.Inf(1)
	for _, v := range sets {
		for _, x := range v {
			if x > 0 {
				floor = math.Min(floor, x)
			} else {
				atOrBelowZero++
			}
		}
	}
	if math.IsInf(floor, 1) {
		floor = 1
	}
	return floor, atOrBelowZero
}

// pickRanks returns the 0-based ranks of n sorted values a chart draws:
// all of them up to cdfPoints, else evenly spaced ranks, more and more of
// them toward the tail, and the last 20.
func pickRanks(n int) []int {
	if n <= cdfPoints {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	set := map[int]bool{0: true, n - 1: true}
	for k := 1; k < 400; k++ {
		set[k*n/400] = true
	}
	for t := 0.1; t*float64(n) >= 1; t *= 0.93 {
		set[n-int(math.Ceil(t*float64(n)))] = true
	}
	for i := max(0, n-20); i < n; i++ {
		set[i] = true
	}
	out := make([]int, 0, len(set))
	for i := range set {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// cdfXY is the empirical CDF of sorted values: (x_i, (i+1)/n), x floored.
func cdfXY(sorted []float64, floor float64) plotter.XYs {
	n := len(sorted)
	var xy plotter.XYs
	for _, i := range pickRanks(n) {
		xy = append(xy, plotter.XY{X: math.Max(sorted[i], floor), Y: float64(i+1) / float64(n)})
	}
	return xy
}

// tailXY is the share of values at least as large as each value:
// (x_i, (n-i)/n), from 1 down to 1/n.
func tailXY(sorted []float64, floor float64) plotter.XYs {
	n := len(sorted)
	var xy plotter.XYs
	for _, i := range pickRanks(n) {
		xy = append(xy, plotter.XY{X: math.Max(sorted[i], floor), Y: float64(n-i) / float64(n)})
	}
	return xy
}

// logAxis makes a a log axis over [lo, hi] with labels at 1, 2 and 5 times
// powers of ten (fmt formats a label).
func logAxis(a *plot.Axis, lo, hi float64, fmtLabel func(float64) string) {
	if hi <= lo {
		lo, hi = lo/2, hi*2
	}
	a.Scale = plot.LogScale{}
	a.Min, a.Max = niceDown(lo), niceUp(hi)
	a.Tick.Marker = logTicks{format: fmtLabel}
}

// niceDown is the largest 1, 2 or 5 × 10^k at or below v (v > 0).
func niceDown(v float64) float64 {
	p := math.Pow10(int(math.Floor(math.Log10(v))))
	for _, m := range []float64{5, 2, 1} {
		if m*p <= v*(1+1e-12) {
			return m * p
		}
	}
	return p
}

// niceUp is the smallest 1, 2 or 5 × 10^k at or above v (v > 0).
func niceUp(v float64) float64 {
	p := math.Pow10(int(math.Floor(math.Log10(v))))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// trimTicks drops trailing zeros from another ticker's labels (500, not
// 500.00).
type trimTicks struct{ plot.Ticker }

func (t trimTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := t.Ticker.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = trimNum(ticks[i].Label)
		}
	}
	return ticks
}

// logTicks labels 1, 2 and 5 × 10^k and marks the other integers times
// 10^k as minor ticks.
type logTicks struct{ format func(float64) string }

func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	if lo <= 0 || hi <= lo {
		return nil
	}
	// Over more than four decades only the powers of ten are labelled.
	wide := math.Log10(hi/lo) > 4
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		p := math.Pow10(e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * p
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			tk := plot.Tick{Value: v}
			if m == 1 || (!wide && (m == 2 || m == 5)) {
				tk.Label = t.format(v)
			}
			ticks = append(ticks, tk)
		}
	}
	return ticks
}

func fmtMsTick(v float64) string {
	if v >= 1 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 1, 64)
}

func fmtShareTick(v float64) string { return trimNum(strconv.FormatFloat(v*100, 'f', -1, 64)) + "%" }

// armLine is one arm's line in its colour.
func armLine(xy plotter.XYs, i int, step plotter.StepKind) (*plotter.Line, error) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, err
	}
	l.StepStyle = step
	l.Color = armColor(i)
	l.Width = vg.Points(1.6)
	l.Dashes = armDashes(i)
	return l, nil
}

// slowest is the largest latency of the sorted sets, at least floor.
func slowest(floor float64, sets [][]float64) float64 {
	hi := floor
	for _, v := range sets {
		if len(v) > 0 {
			hi = math.Max(hi, v[len(v)-1])
		}
	}
	return hi
}

// armLinesSVG draws one line per arm with a non-empty set, with a legend,
// and renders the chart.
func armLinesSVG(p *plot.Plot, s *Summary, sets [][]float64, xy func([]float64) plotter.XYs, step plotter.StepKind) (template.HTML, error) {
	l := chartLegend()
	for i, v := range sets {
		if len(v) == 0 {
			continue
		}
		line, err := armLine(xy(v), i, step)
		if err != nil {
			return "", err
		}
		p.Add(line)
		l.Add(s.Arms[i].Name, line)
	}
	return renderSVG(p, &l)
}

func cdfChart(s *Summary, lat []armLatencies) (*htmlChart, error) {
	var sets [][]float64
	for _, l := range lat {
		sets = append(sets, l.all)
	}
	floor, zeros := logFloor(sets...)
	p := newChart("Latency CDF per arm, every request", "end-to-end latency (ms, log scale)", "share of requests at or below")
	hi := slowest(floor, sets)
	logAxis(&p.X, floor, hi, fmtMsTick)
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.ConstantTicks(shareTicks(0, 0.25, 0.5, 0.75, 0.9, 1))
	svg, err := armLinesSVG(p, s, sets, func(v []float64) plotter.XYs { return cdfXY(v, floor) }, plotter.PostStep)
	if err != nil {
		return nil, err
	}
	caption := "Each line climbs by one request at that request's latency: the further left, the faster; the height at a latency is the share of requests that took at most that long (p50 where a line crosses 50%). Failed requests count at the time they ended."
	if zeros > 0 {
		caption += fmt.Sprintf(" %s at 0 ms are drawn at %s ms, the axis floor.", words.Count(zeros, "request"), fmtMsTick(floor))
	}
	return &htmlChart{ID: "chart-latency-cdf", Title: "Latency distribution", Caption: caption, SVG: svg}, nil
}

func shareTicks(vals ...float64) []plot.Tick {
	out := make([]plot.Tick, len(vals))
	for i, v := range vals {
		out[i] = plot.Tick{Value: v, Label: fmtShareTick(v)}
	}
	return out
}

func tailChart(s *Summary, lat []armLatencies) (*htmlChart, error) {
	var sets [][]float64
	maxN := 0
	for _, l := range lat {
		sets = append(sets, l.all)
		maxN = max(maxN, len(l.all))
	}
	floor, _ := logFloor(sets...)
	hi := slowest(floor, sets)
	// No y-axis label: gonum/plot centres it by the arithmetic midpoint,
	// which on a log axis pushes the plot down; the title says it instead.
	p := newChart("Latency tail per arm: share of requests at least this slow (log scale)", "end-to-end latency (ms, log scale)", "")
	logAxis(&p.X, floor, hi, fmtMsTick)
	p.Y.Scale = plot.LogScale{}
	p.Y.Min, p.Y.Max = math.Pow10(-max(1, int(math.Ceil(math.Log10(float64(maxN)))))), 1
	var yt []plot.Tick
	for v := 1.0; v >= p.Y.Min*(1-1e-9); v /= 10 {
		yt = append(yt, plot.Tick{Value: v, Label: fmtShareTick(v)})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	svg, err := armLinesSVG(p, s, sets, func(v []float64) plotter.XYs { return tailXY(v, floor) }, plotter.PreStep)
	if err != nil {
		return nil, err
	}
	return &htmlChart{ID: "chart-latency-tail", Title: "Latency tail",
		Caption: "The same latencies with the slow end stretched out: where a line crosses 10% is its p90, 1% its p99, 0.1% its p99.9. A line ends at its slowest request (1 of n); below 1/n requests a run says nothing about the tail.",
		SVG:     svg}, nil
}

func cacheChart(s *Summary, lat []armLatencies) (*htmlChart, error) {
	var sets [][]float64
	for i := range s.Arms {
		if s.Arms[i].CacheStats != nil {
			sets = append(sets, lat[i].hit, lat[i].miss)
		}
	}
	floor, zeros := logFloor(sets...)
	hi := floor
	drawn := false
	for _, v := range sets {
		if len(v) > 0 {
			hi = math.Max(hi, v[len(v)-1])
			drawn = true
		}
	}
	if !drawn {
		return nil, nil
	}
	p := newChart("Cache hit path against miss path", "end-to-end latency (ms, log scale)", "share of requests at or below")
	logAxis(&p.X, floor, hi, fmtMsTick)
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.ConstantTicks(shareTicks(0, 0.25, 0.5, 0.75, 0.9, 1))
	l := chartLegend()
	for i := range s.Arms {
		if s.Arms[i].CacheStats == nil {
			continue
		}
		for _, path := range []struct {
			name string
			v    []float64
			dash []vg.Length
		}{{"hit", lat[i].hit, []vg.Length{vg.Points(2), vg.Points(2)}}, {"miss", lat[i].miss, nil}} {
			if len(path.v) == 0 {
				continue
			}
			line, err := armLine(cdfXY(path.v, floor), i, plotter.PostStep)
			if err != nil {
				return nil, err
			}
			line.Dashes = path.dash
			p.Add(line)
			l.Add(fmt.Sprintf("%s %s (%d)", s.Arms[i].Name, path.name, len(path.v)), line)
		}
	}
	svg, err := renderSVG(p, &l)
	if err != nil {
		return nil, err
	}
	caption := "For each arm with a cache, the latency of requests answered from the cache (dotted) and of those that went on to a model (solid); the count of each is in the legend. The gap between the two lines of an arm is what a hit saves; the cache table gives the hit rate and any leaks."
	if zeros > 0 {
		caption += fmt.Sprintf(" %s at 0 ms are drawn at %s ms, the axis floor.", words.Count(zeros, "request"), fmtMsTick(floor))
	}
	return &htmlChart{ID: "chart-cache-paths", Title: "Cache: hit path and miss path", Caption: caption, SVG: svg}, nil
}

// groupNames is every group of any arm, sorted.
func groupNames(s *Summary) []string {
	set := map[string]bool{}
	for i := range s.Arms {
		for g := range s.Arms[i].Groups {
			set[g] = true
		}
	}
	return sortedKeys(set)
}

// groupedBars draws one bar per arm in each category, in data coordinates
// (category c spans c-0.4 to c+0.4), and returns the bar centres per arm.
func groupedBars(p *plot.Plot, l *plot.Legend, s *Summary, cats []string, val func(a *ArmSummary, cat string) (float64, bool)) ([][]float64, error) {
	k := len(s.Arms)
	w := 0.8 / float64(k)
	centres := make([][]float64, k)
	for i := range s.Arms {
		centres[i] = make([]float64, len(cats))
		var first *plotter.Polygon
		for c, cat := range cats {
			x := float64(c) - 0.4 + w*(float64(i)+0.5)
			centres[i][c] = x
			v, ok := val(&s.Arms[i], cat)
			if !ok {
				centres[i][c] = math.NaN()
				continue
			}
			inset := w * 0.08
			bar, err := plotter.NewPolygon(plotter.XYs{{X: x - w/2 + inset, Y: 0}, {X: x + w/2 - inset, Y: 0}, {X: x + w/2 - inset, Y: v}, {X: x - w/2 + inset, Y: v}})
			if err != nil {
				return nil, err
			}
			bar.Color = armColor(i)
			bar.LineStyle.Width = 0
			p.Add(bar)
			if first == nil {
				first = bar
			}
		}
		if first != nil {
			l.Add(s.Arms[i].Name, first)
		}
	}
	ticks := make([]plot.Tick, len(cats))
	for c, cat := range cats {
		ticks[c] = plot.Tick{Value: float64(c), Label: cat}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.5, float64(len(cats))-0.5
	p.X.Tick.Length = 0
	return centres, nil
}

func groupPassChart(s *Summary) (*htmlChart, error) {
	cats := groupNames(s)
	if len(cats) == 0 {
		return nil, nil
	}
	p := newChart("Pass rate per input group", "input group", "passing requests")
	l := chartLegend()
	if _, err := groupedBars(p, &l, s, cats, func(a *ArmSummary, g string) (float64, bool) {
		gs, ok := a.Groups[g]
		if !ok || gs.N == 0 {
			return 0, false
		}
		return float64(gs.Pass) / float64(gs.N), true
	}); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.ConstantTicks(shareTicks(0, 0.2, 0.4, 0.6, 0.8, 1))
	svg, err := renderSVG(p, &l)
	if err != nil {
		return nil, err
	}
	return &htmlChart{ID: "chart-group-pass", Title: "Pass rate per group",
		Caption: "Share of each group's requests that passed, per arm; the groups table has the counts behind each bar.", SVG: svg}, nil
}

func groupLatencyChart(s *Summary) (*htmlChart, error) {
	cats := groupNames(s)
	if len(cats) == 0 {
		return nil, nil
	}
	p := newChart("Latency per input group: p50 bar, p95 whisker", "input group", "end-to-end latency (ms)")
	l := chartLegend()
	centres, err := groupedBars(p, &l, s, cats, func(a *ArmSummary, g string) (float64, bool) {
		gs, ok := a.Groups[g]
		return gs.P50Ms, ok && gs.N > 0
	})
	if err != nil {
		return nil, err
	}
	k := len(s.Arms)
	capW := 0.8 / float64(k) * 0.25
	top := 0.0
	for i := range s.Arms {
		for c, g := range cats {
			gs, ok := s.Arms[i].Groups[g]
			if !ok || gs.N == 0 || math.IsNaN(centres[i][c]) {
				continue
			}
			x := centres[i][c]
			top = math.Max(top, math.Max(gs.P50Ms, gs.P95Ms))
			for _, seg := range []plotter.XYs{{{X: x, Y: gs.P50Ms}, {X: x, Y: gs.P95Ms}}, {{X: x - capW, Y: gs.P95Ms}, {X: x + capW, Y: gs.P95Ms}}} {
				ln, err := plotter.NewLine(seg)
				if err != nil {
					return nil, err
				}
				ln.Color = color.Gray{Y: 60}
				ln.Width = vg.Points(1.2)
				p.Add(ln)
			}
		}
	}
	// Headroom above the highest whisker.
	p.Y.Min, p.Y.Max = 0, math.Max(p.Y.Max, top*1.06)
	svg, err := renderSVG(p, &l)
	if err != nil {
		return nil, err
	}
	return &htmlChart{ID: "chart-group-latency", Title: "Latency per group",
		Caption: "Bars are each group's median (p50) latency per arm; the whisker above a bar reaches its p95.", SVG: svg}, nil
}

// frontierChart plots cost per pass against passing requests, one point per
// arm, with the arms no other arm beats on both (cheaper per pass and at
// least as many passes) joined into a frontier. It is drawn only when some
// arm routes requests.
func frontierChart(s *Summary) (*htmlChart, error) {
	routes := false
	for i := range s.Arms {
		routes = routes || s.Arms[i].RouteStats != nil
	}
	if !routes {
		return nil, nil
	}
	type pt struct {
		x, y float64
		i    int
	}
	var pts []pt
	var left []string
	for i := range s.Arms {
		a := &s.Arms[i]
		if a.CostPerPass == nil {
			left = append(left, a.Name)
			continue
		}
		pts = append(pts, pt{*a.CostPerPass, float64(a.Pass), i})
	}
	if len(pts) == 0 {
		return nil, nil
	}
	p := newChart("Arms frontier: cost per pass against passing requests", "cost per passing request", "passing requests")
	l := chartLegend()
	// Frontier: no other arm is at least as cheap per pass with at least
	// as many passes, and better on one.
	var front plotter.XYs
	for _, a := range pts {
		dominated := false
		for _, b := range pts {
			if b.x <= a.x && b.y >= a.y && (b.x < a.x || b.y > a.y) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, plotter.XY{X: a.x, Y: a.y})
		}
	}
	sort.Slice(front, func(i, j int) bool { return front[i].X < front[j].X })
	if len(front) > 1 {
		ln, err := plotter.NewLine(front)
		if err != nil {
			return nil, err
		}
		ln.Color = color.Gray{Y: 110}
		ln.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(ln)
		l.Add("frontier", ln)
	}
	glyphs := map[string]draw.GlyphDrawer{VerdictBaseline: draw.BoxGlyph{}, VerdictAccept: draw.CircleGlyph{}, VerdictReject: draw.CrossGlyph{}}
	shown := map[string]bool{}
	var labels plotter.XYLabels
	for _, a := range pts {
		sc, err := plotter.NewScatter(plotter.XYs{{X: a.x, Y: a.y}})
		if err != nil {
			return nil, err
		}
		v := s.Arms[a.i].Verdict
		sc.GlyphStyle = draw.GlyphStyle{Color: armColor(a.i), Radius: vg.Points(5), Shape: glyphs[v]}
		if sc.GlyphStyle.Shape == nil {
			sc.GlyphStyle.Shape = draw.RingGlyph{}
		}
		if v == VerdictReject {
			sc.GlyphStyle.Radius = vg.Points(6)
		}
		p.Add(sc)
		if !shown[v] {
			shown[v] = true
			key, err := plotter.NewScatter(plotter.XYs{{}})
			if err != nil {
				return nil, err
			}
			key.GlyphStyle = sc.GlyphStyle
			key.GlyphStyle.Color = color.Gray{Y: 60}
			l.Add(v, key)
		}
		labels.XYs = append(labels.XYs, plotter.XY{X: a.x, Y: a.y})
		labels.Labels = append(labels.Labels, s.Arms[a.i].Name)
	}
	// Labels go above and below their points in turn, left to right, so
	// that arms close together stay legible.
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return pts[order[a]].x < pts[order[b]].x })
	for rank, k := range order {
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: labels.XYs[k : k+1], Labels: labels.Labels[k : k+1]})
		if err != nil {
			return nil, err
		}
		lb.TextStyle[0].Font = font.From(chartFont, 10)
		lb.TextStyle[0].Color = armColor(pts[k].i)
		lb.TextStyle[0].XAlign = draw.XCenter
		lb.Offset = vg.Point{Y: vg.Points(7)}
		if rank%2 == 1 {
			lb.Offset.Y = -vg.Points(17)
		}
		p.Add(lb)
	}
	// Room for the labels on the right and the points at the edges.
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, a := range pts {
		xmin, xmax = math.Min(xmin, a.x), math.Max(xmax, a.x)
		ymin, ymax = math.Min(ymin, a.y), math.Max(ymax, a.y)
	}
	dx, dy := math.Max(xmax-xmin, math.Abs(xmax)*0.1+1e-9), math.Max(ymax-ymin, 1)
	p.X.Min, p.X.Max = math.Max(0, xmin-0.08*dx), xmax+0.3*dx
	p.Y.Min, p.Y.Max = ymin-0.1*dy, ymax+0.1*dy
	svg, err := renderSVG(p, &l)
	if err != nil {
		return nil, err
	}
	caption := "One point per arm of this run (not a sweep of router thresholds): further up is more passing requests, further left is cheaper per pass. The dashed line joins the arms that no other arm beats on both; the marker is the arm's verdict, which also weighs lost tasks, leaks and latency."
	if len(left) > 0 {
		caption += " Left out, with no passing request: " + strings.Join(left, ", ") + "."
	}
	return &htmlChart{ID: "chart-arms-frontier", Title: "Arms frontier (cost per pass against passes)", Caption: caption, SVG: svg}, nil
}

var htmlTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#f6f8fa;--card:#fff;--accept:#1a7f37;--reject:#cf222e;--base:#59636e}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arial,sans-serif}
header{background:var(--card);border-bottom:1px solid var(--line);padding:20px 28px}
header h1{margin:0 0 4px;font-size:24px}
header p{margin:4px 0;color:var(--muted)}
nav{position:sticky;top:0;z-index:1;background:var(--card);border-bottom:1px solid var(--line);padding:6px 28px;font-size:13px;white-space:nowrap;overflow-x:auto}
nav a{color:var(--fg);text-decoration:none;margin-right:14px}
nav a:hover{text-decoration:underline}
main{padding:8px 28px 40px;max-width:1400px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:4px 20px 16px;margin:16px 0}
h2{font-size:18px;margin:14px 0 10px}
h3{font-size:15px;margin:10px 0 4px}
.verdicts{display:flex;flex-wrap:wrap;gap:8px;margin:12px 0 8px}
.chip{border-radius:999px;padding:2px 12px;font-size:13px;border:1px solid currentColor}
.chip b{font-weight:600}
.decision{max-width:1100px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums;margin:6px 0 10px}
th{text-align:left;font-weight:600;border-bottom:2px solid var(--line);padding:4px 10px;white-space:nowrap;background:var(--bg)}
td{border-bottom:1px solid var(--line);padding:3px 10px;white-space:nowrap}
td.num{text-align:right}
tbody tr:hover{background:#eef2f6}
.v-accept{color:var(--accept);font-weight:600}
.v-reject{color:var(--reject);font-weight:600}
.v-baseline{color:var(--base)}
code{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:90%;background:var(--bg);padding:0 4px;border-radius:4px}
ul{padding-left:22px;margin:6px 0}
li{margin:2px 0}
figure{margin:14px 0 22px}
figcaption{color:var(--muted);font-size:13px;max-width:960px}
svg{display:block;width:100%;max-width:960px;height:auto}
svg text{font-family:"Liberation Sans",Arimo,Arial,Helvetica,sans-serif !important}
.note{color:var(--muted)}
@media print{nav{display:none}section{break-inside:avoid-page;border:none}}
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<p>{{.Sub}}</p>
{{- range .Intro}}{{template "block" .}}{{end}}
<div class="verdicts">{{range .Verdicts}}<span class="chip {{.Class}}"><b>{{.Name}}</b> {{.Verdict}}</span>{{end}}</div>
<p class="decision">{{.Decision}}</p>
{{- if .Warnings}}<p class="v-reject">{{.Warnings}}: see <a href="#warnings">Warnings</a>.</p>{{end}}
</header>
<nav>{{range .Nav}}<a href="#{{.Class}}">{{.Name}}</a>{{end}}</nav>
<main>
{{- range .Sections}}
<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{- if .Note}}<p class="note">{{template "spans" .Note}}</p>{{end}}
{{- range .Charts}}
<figure id="{{.ID}}">
<h3>{{.Title}}</h3>
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{- end}}
{{- range .Blocks}}{{template "block" .}}{{end}}
</section>
{{- end}}
</main>
</body>
</html>
{{- define "spans"}}{{range .}}{{if .Code}}<code>{{.Text}}</code>{{else if .Bold}}<b>{{.Text}}</b>{{else if .Class}}<span class="{{.Class}}">{{.Text}}</span>{{else}}{{.Text}}{{end}}{{end}}{{end}}
{{- define "items"}}<ul>{{range .}}<li>{{template "spans" .Spans}}{{if .Children}}{{template "items" .Children}}{{end}}</li>{{end}}</ul>{{end}}
{{- define "block"}}
{{- if .Header}}<div class="scroll"><table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range .}}<td{{if .Class}} class="{{.Class}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{else if .Items}}{{template "items" .Items}}
{{else if .Para}}<p>{{template "spans" .Para}}</p>
{{end}}
{{- end}}
`))
