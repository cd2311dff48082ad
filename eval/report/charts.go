package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// baselineColour draws the baseline: a neutral grey, so that every
// candidate's colour reads as "not the baseline".
var baselineColour = color.RGBA{0x8a, 0x8a, 0x8a, 0xff}

// armPalette colours the candidates: the Okabe–Ito palette, which stays
// distinct for readers with colour-blindness (its yellow darkened to read
// on white); candidates past eight reuse it with dashed lines.
var armPalette = []color.RGBA{
	{0x00, 0x72, 0xB2, 0xff}, {0xE6, 0x9F, 0x00, 0xff}, {0x00, 0x9E, 0x73, 0xff}, {0xD5, 0x5E, 0x00, 0xff},
	{0xCC, 0x79, 0xA7, 0xff}, {0x56, 0xB4, 0xE9, 0xff}, {0x00, 0x00, 0x00, 0xff}, {0xB8, 0xA3, 0x00, 0xff},
}

// armColor is the colour of the i-th arm of a summary in every chart and
// in the page's verdict table: arm 0 is the baseline.
func armColor(i int) color.RGBA {
	if i == 0 {
		return baselineColour
	}
	return armPalette[(i-1)%len(armPalette)]
}

// cssColour is armColor as CSS writes it.
func cssColour(i int) string {
	c := armColor(i)
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}

// armDashes dashes the lines of the candidates that reuse the palette.
func armDashes(i int) []vg.Length {
	if i > 0 && (i-1)/len(armPalette)%2 == 1 {
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

// buildCharts draws every chart the data supports, in page order; the
// note it returns says which charts are left out and why.
func buildCharts(s *analysis.Summary, recs *records.RecordSet) ([]htmlChart, []Span) {
	idx := map[string]int{}
	for i := range s.Arms {
		idx[s.Arms[i].Name] = i
	}
	lat := make([]armLatencies, len(s.Arms))
	n := 0
	t := recs.Symbols()
	recs.Each(func(r *records.Rec) {
		j, ok := idx[t.Str(r.Arm)]
		if !ok || t.Attrs(r).Warmup || math.IsNaN(r.E2EMs) || math.IsInf(r.E2EMs, 0) {
			return
		}
		n++
		lat[j].all = append(lat[j].all, r.E2EMs)
		switch t.Str(t.Attrs(r).Cache) {
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
	var notes []Span // sentences, one space apart
	note := func(sp ...Span) {
		if len(notes) > 0 {
			notes = append(notes, Text(" "))
		}
		notes = append(notes, sp...)
	}
	// A chart that cannot be drawn is named in the note; the tables and
	// the other charts still make the page.
	add := func(name string, build func() (*htmlChart, error)) {
		c, err := drawSafely(build)
		if err != nil {
			note(Text(fmt.Sprintf("The %s chart could not be drawn: %v.", name, err)))
			return
		}
		if c != nil {
			charts = append(charts, *c)
		}
	}
	if n == 0 {
		note(Text("The latency distributions (CDF, tail, cache hit and miss paths) are drawn from the records, which this report was not given: "),
			Code("crab report --format html RUN_DIR"), Text(" draws them."))
	} else {
		add("latency CDF", func() (*htmlChart, error) { return cdfChart(s, lat) })
		add("latency tail", func() (*htmlChart, error) { return tailChart(s, lat) })
		add("cache hit and miss path", func() (*htmlChart, error) { return cacheChart(s, lat) })
	}
	add("pass rate per group", func() (*htmlChart, error) { return groupPassChart(s) })
	add("latency per group", func() (*htmlChart, error) { return groupLatencyChart(s) })
	add("arms frontier", func() (*htmlChart, error) { return frontierChart(s) })
	return charts, notes
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
			ticks[i].Label = figure.Trim(ticks[i].Label)
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

func fmtShareTick(v float64) string {
	return figure.Trim(strconv.FormatFloat(v*100, 'f', -1, 64)) + "%"
}

// armLine is one arm's line in its colour.
func armLine(xy plotter.XYs, i int, step plotter.StepKind) (*plotter.Line, error) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, err
	}
	l.StepStyle = step
	l.Color = armColor(i)
	l.Width = vg.Points(1.6)
	if i == 0 {
		l.Width = vg.Points(2.6) // the baseline: grey, and wider than the candidates
	}
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
func armLinesSVG(p *plot.Plot, s *analysis.Summary, sets [][]float64, xy func([]float64) plotter.XYs, step plotter.StepKind) (template.HTML, error) {
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
		l.Add(chartName(s.Arms[i].Name), line)
	}
	return renderSVG(p, &l)
}

func cdfChart(s *analysis.Summary, lat []armLatencies) (*htmlChart, error) {
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

func tailChart(s *analysis.Summary, lat []armLatencies) (*htmlChart, error) {
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

func cacheChart(s *analysis.Summary, lat []armLatencies) (*htmlChart, error) {
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
			l.Add(fmt.Sprintf("%s %s (%d)", chartName(s.Arms[i].Name), path.name, len(path.v)), line)
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
