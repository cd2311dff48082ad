package report

import (
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// groupNames is every group of any arm, sorted.
func groupNames(s *analysis.Summary) []string {
	set := map[string]bool{}
	for i := range s.Arms {
		for g := range s.Arms[i].Groups {
			set[g] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// groupedBars draws one bar per arm in each category, in data coordinates
// (category c spans c-0.4 to c+0.4), and returns the bar centres per arm.
// A bar too short to see is labelled with its value, written by format.
func groupedBars(p *plot.Plot, l *plot.Legend, s *analysis.Summary, cats []string, val func(a *analysis.ArmSummary, cat string) (float64, bool), format func(float64) string) ([][]float64, error) {
	small := &smallBarLabels{style: draw.TextStyle{Font: font.From(chartFont, 8), Color: color.Gray{Y: 40}, XAlign: draw.XLeft, YAlign: draw.YCenter,
		Rotation: math.Pi / 2, Handler: plot.DefaultTextHandler}}
	defer p.Add(small)
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
			small.bars = append(small.bars, plotter.XY{X: x, Y: v})
			small.text = append(small.text, format(v))
			if first == nil {
				first = bar
			}
		}
		if first != nil {
			l.Add(chartName(s.Arms[i].Name), first)
		}
	}
	ticks := make([]plot.Tick, len(cats))
	for c, cat := range cats {
		ticks[c] = plot.Tick{Value: float64(c), Label: chartName(cat)}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.5, float64(len(cats))-0.5
	p.X.Tick.Length = 0
	return centres, nil
}

func groupPassChart(s *analysis.Summary) (*htmlChart, error) {
	cats := groupNames(s)
	if len(cats) == 0 {
		return nil, nil
	}
	p := newChart("Pass rate per input group", "input group", "passing requests")
	l := chartLegend()
	if _, err := groupedBars(p, &l, s, cats, func(a *analysis.ArmSummary, g string) (float64, bool) {
		gs, ok := a.Groups[g]
		if !ok || gs.N == 0 || !a.Measured(records.FigureQuality) {
			return 0, false
		}
		return float64(gs.Pass) / float64(gs.N), true
	}, figure.Pct); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.ConstantTicks(shareTicks(0, 0.2, 0.4, 0.6, 0.8, 1))
	svg, err := renderSVG(p, &l)
	if err != nil {
		return nil, err
	}
	return &htmlChart{ID: "chart-group-pass", Title: "Pass rate per group",
		Caption: "Share of each group's requests that passed, per arm; the groups table has the counts behind each bar. A bar too short to see is labelled with its value.", SVG: svg}, nil
}

func groupLatencyChart(s *analysis.Summary) (*htmlChart, error) {
	cats := groupNames(s)
	if len(cats) == 0 {
		return nil, nil
	}
	p := newChart("Latency per input group: p50 bar, p95 whisker", "input group", "end-to-end latency (ms)")
	l := chartLegend()
	centres, err := groupedBars(p, &l, s, cats, func(a *analysis.ArmSummary, g string) (float64, bool) {
		gs, ok := a.Groups[g]
		return gs.P50Ms, ok && gs.N > 0 && a.Measured(records.FigureLatency) // no bar for a latency nobody measured
	}, figure.Ms)
	if err != nil {
		return nil, err
	}
	k := len(s.Arms)
	capW := 0.8 / float64(k) * 0.25
	top := whiskerCap(s, cats)
	var beyond plotter.XYLabels // whiskers cut at the axis's top, with their p95
	for i := range s.Arms {
		for c, g := range cats {
			gs, ok := s.Arms[i].Groups[g]
			if !ok || gs.N == 0 || math.IsNaN(centres[i][c]) || !s.Arms[i].Measured(records.FigureLatency) {
				continue
			}
			x, p95 := centres[i][c], gs.P95Ms
			if p95 > top {
				p95 = top
				beyond.XYs = append(beyond.XYs, plotter.XY{X: x, Y: top})
				beyond.Labels = append(beyond.Labels, "→ "+figure.Ms(gs.P95Ms)) // upright, the arrow points up
			}
			segs := []plotter.XYs{{{X: x, Y: gs.P50Ms}, {X: x, Y: p95}}}
			if p95 == gs.P95Ms {
				segs = append(segs, plotter.XYs{{X: x - capW, Y: p95}, {X: x + capW, Y: p95}})
			}
			for _, seg := range segs {
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
	caption := "Bars are each group's median (p50) latency per arm; the whisker above a bar reaches its p95. A bar too short to see is labelled with its value."
	if len(beyond.XYs) > 0 {
		lb, err := plotter.NewLabels(beyond)
		if err != nil {
			return nil, err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i] = draw.TextStyle{Font: font.From(chartFont, 8), Color: color.Gray{Y: 40}, XAlign: draw.XRight, YAlign: draw.YCenter,
				Rotation: math.Pi / 2, Handler: plot.DefaultTextHandler}
		}
		lb.Offset = vg.Point{X: vg.Points(4), Y: -vg.Points(2)}
		p.Add(lb)
		caption += fmt.Sprintf(" The axis stops at %s ms so that %s far above the rest do not flatten the bars: they end at the top, their p95 written beside them.",
			figure.Ms(top), words.Count(len(beyond.XYs), "whisker"))
	}
	// Headroom above the highest whisker.
	p.Y.Min, p.Y.Max = 0, math.Max(p.Y.Max, top*1.06)
	svg, err := renderSVG(p, &l)
	if err != nil {
		return nil, err
	}
	return &htmlChart{ID: "chart-group-latency", Title: "Latency per group", Caption: caption, SVG: svg}, nil
}

// whiskerCap is the top of the latency-per-group axis: the highest p50
// or p95, leaving out p95s more than outlierRatio times the median p95,
// which would press every bar flat.
func whiskerCap(s *analysis.Summary, cats []string) float64 {
	var p50s, p95s []float64
	for i := range s.Arms {
		for _, g := range cats {
			if gs, ok := s.Arms[i].Groups[g]; ok && gs.N > 0 {
				p50s, p95s = append(p50s, gs.P50Ms), append(p95s, gs.P95Ms)
			}
		}
	}
	if len(p95s) == 0 {
		return 0
	}
	slices.Sort(p95s)
	limit := outlierRatio * p95s[len(p95s)/2]
	top := slices.Max(p50s)
	for _, v := range p95s {
		if v <= limit || limit == 0 {
			top = math.Max(top, v)
		}
	}
	return top
}

// smallBarMinPt is the shortest a bar is drawn without its value written
// above it.
const smallBarMinPt = 4

// smallBarLabels writes the value of every bar drawn shorter than
// smallBarMinPt just above it, upright, so that a 0.2 ms bar beside a
// 150 ms one still says what it is.
type smallBarLabels struct {
	bars  plotter.XYs // bar centre and value
	text  []string
	style draw.TextStyle
	// drawn counts the labels written when last drawn (for the tests).
	drawn int
}

// Plot implements plot.Plotter.
func (sl *smallBarLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	base := trY(math.Max(p.Y.Min, 0))
	sl.drawn = 0
	for i, b := range sl.bars {
		top := trY(b.Y)
		if top-base >= smallBarMinPt {
			continue
		}
		// Beside the bar's centre, where a whisker may rise.
		c.FillText(sl.style, vg.Point{X: trX(b.X) + vg.Points(4), Y: max(top, base) + vg.Points(2)}, sl.text[i])
		sl.drawn++
	}
}
