package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

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

// outlierRatio is the spread past which an axis of the frontier turns
// logarithmic, so that one arm far from the others does not press them
// into a corner.
const outlierRatio = 10

// frontierPoint is one arm on the frontier chart.
type frontierPoint struct {
	cpp   float64 // cost per pass
	pass  int
	fails int // requests that did not pass
	i     int // arm index
}

// frontierChart plots cost per pass against passing requests, one point per
// arm, with the arms no other arm beats on both (cheaper per pass and at
// least as many passes) joined into a frontier. It is drawn only when some
// arm routes requests. When the arms' failures spread over more than
// outlierRatio, the vertical axis counts the requests that did not pass on
// a log scale (fewer is higher); when costs per pass do, the horizontal
// axis is logarithmic; the axis titles say so.
func frontierChart(s *analysis.Summary) (*htmlChart, error) {
	routes := false
	for i := range s.Arms {
		routes = routes || s.Arms[i].RouteStats != nil
	}
	if !routes {
		return nil, nil
	}
	var pts []frontierPoint
	var left, unpriced []string
	for i := range s.Arms {
		a := &s.Arms[i]
		if !a.Measured(records.FigureCost) {
			unpriced = append(unpriced, a.Name)
			continue
		}
		if a.CostPerPass == nil {
			left = append(left, a.Name)
			continue
		}
		pts = append(pts, frontierPoint{cpp: *a.CostPerPass, pass: a.Pass, fails: a.N - a.Pass, i: i})
	}
	if len(pts) == 0 {
		return nil, nil
	}
	xmin, xmax, fmin, fmax := math.Inf(1), math.Inf(-1), math.MaxInt, 0
	for _, a := range pts {
		xmin, xmax = math.Min(xmin, a.cpp), math.Max(xmax, a.cpp)
		fmin, fmax = min(fmin, a.fails), max(fmax, a.fails)
	}
	logX := xmin > 0 && xmax > outlierRatio*xmin
	logY := fmax > outlierRatio*max(1, fmin)
	xlabel, ylabel := "cost per passing request", "passing requests"
	if logX {
		xlabel += " (log scale)"
	}
	if logY {
		ylabel = "requests not passing (log scale, fewer is higher)"
	}
	// yOf places an arm vertically: its passes, or its failures drawn
	// on an inverted log axis (none failing at 0.5, the floor).
	yOf := func(a frontierPoint) float64 {
		if logY {
			return math.Max(float64(a.fails), 0.5)
		}
		return float64(a.pass)
	}
	p := newChart("Arms frontier: cost per pass against passing requests", xlabel, ylabel)
	l := chartLegend()
	if err := addFrontierLine(p, &l, pts, yOf); err != nil {
		return nil, err
	}
	var labels pointLabels
	if err := addFrontierPoints(p, &l, s, pts, yOf, &labels); err != nil {
		return nil, err
	}
	p.Add(&labels)
	frontierAxes(p, pts, yOf, logX, logY)
	svg, err := renderSVG(p, &l)
	if err != nil {
		return nil, err
	}
	caption := "One point per arm of this run (not a sweep of router thresholds): further up is more passing requests, further left is cheaper per pass. The dashed line joins the arms that no other arm beats on both; the marker is the arm's verdict, which also weighs lost tasks, leaks and latency."
	if logY {
		caption += fmt.Sprintf(" The arms' failing requests range from %d to %d, so the vertical axis counts them on a log scale, fewest at the top", fmin, fmax)
		if fmin == 0 {
			caption += "; an arm with none is drawn at 0.5"
		}
		caption += "."
	}
	if logX {
		caption += " Costs per pass range over more than " + strconv.Itoa(outlierRatio) + " times, so the horizontal axis is logarithmic."
	}
	if len(left) > 0 {
		caption += " Left out, with no passing request: " + words.Shortlist(left) + "."
	}
	if len(unpriced) > 0 {
		caption += " Left out, their cost not measured: " + words.Shortlist(unpriced) + "."
	}
	return &htmlChart{ID: "chart-arms-frontier", Title: "Arms frontier (cost per pass against passes)", Caption: caption, SVG: svg}, nil
}

// addFrontierLine joins the arms no other arm beats: none is at least as
// cheap per pass with at least as many passes, and better on one.
func addFrontierLine(p *plot.Plot, l *plot.Legend, pts []frontierPoint, yOf func(frontierPoint) float64) error {
	var front plotter.XYs
	for _, a := range pts {
		dominated := false
		for _, b := range pts {
			if b.cpp <= a.cpp && b.pass >= a.pass && (b.cpp < a.cpp || b.pass > a.pass) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, plotter.XY{X: a.cpp, Y: yOf(a)})
		}
	}
	if len(front) < 2 {
		return nil
	}
	sort.Slice(front, func(i, j int) bool { return front[i].X < front[j].X })
	ln, err := plotter.NewLine(front)
	if err != nil {
		return err
	}
	ln.Color = color.Gray{Y: 110}
	ln.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	p.Add(ln)
	l.Add("frontier", ln)
	return nil
}

// addFrontierPoints draws each arm as its verdict's marker in its colour,
// keys the markers in the legend and collects the arms' labels.
func addFrontierPoints(p *plot.Plot, l *plot.Legend, s *analysis.Summary, pts []frontierPoint, yOf func(frontierPoint) float64, labels *pointLabels) error {
	glyphs := map[string]draw.GlyphDrawer{analysis.VerdictBaseline: draw.BoxGlyph{}, analysis.VerdictAccept: draw.CircleGlyph{}, analysis.VerdictReject: draw.CrossGlyph{}}
	shown := map[string]bool{}
	labels.style = draw.TextStyle{Font: font.From(chartFont, 10), XAlign: draw.XLeft, YAlign: draw.YBottom, Handler: plot.DefaultTextHandler}
	for _, a := range pts {
		sc, err := plotter.NewScatter(plotter.XYs{{X: a.cpp, Y: yOf(a)}})
		if err != nil {
			return err
		}
		v := s.Arms[a.i].Verdict
		sc.GlyphStyle = draw.GlyphStyle{Color: armColor(a.i), Radius: vg.Points(5), Shape: glyphs[v]}
		if sc.GlyphStyle.Shape == nil {
			sc.GlyphStyle.Shape = draw.RingGlyph{}
		}
		if v == analysis.VerdictReject {
			sc.GlyphStyle.Radius = vg.Points(6)
		}
		p.Add(sc)
		if !shown[v] {
			shown[v] = true
			key, err := plotter.NewScatter(plotter.XYs{{}})
			if err != nil {
				return err
			}
			key.GlyphStyle = sc.GlyphStyle
			key.GlyphStyle.Color = color.Gray{Y: 60}
			l.Add(v, key)
		}
		labels.xy = append(labels.xy, plotter.XY{X: a.cpp, Y: yOf(a)})
		labels.text = append(labels.text, chartName(s.Arms[a.i].Name))
		labels.colour = append(labels.colour, armColor(a.i))
	}
	labels.radius = vg.Points(7)
	return nil
}

// frontierAxes fits the axes to the points with room for their labels.
func frontierAxes(p *plot.Plot, pts []frontierPoint, yOf func(frontierPoint) float64, logX, logY bool) {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, a := range pts {
		xmin, xmax = math.Min(xmin, a.cpp), math.Max(xmax, a.cpp)
		ymin, ymax = math.Min(ymin, yOf(a)), math.Max(ymax, yOf(a))
	}
	if logX {
		logAxis(&p.X, xmin/1.3, xmax*1.6, func(v float64) string { return figure.Cost(v) })
	} else {
		dx := math.Max(xmax-xmin, math.Abs(xmax)*0.1+1e-9)
		p.X.Min, p.X.Max = math.Max(0, xmin-0.12*dx), xmax+0.3*dx
	}
	if logY {
		logAxis(&p.Y, ymin/1.5, ymax*1.5, fmtMsTick)
		p.Y.Scale = plot.InvertedScale{Normalizer: plot.LogScale{}}
	} else {
		dy := math.Max(ymax-ymin, 1)
		p.Y.Min, p.Y.Max = ymin-0.12*dy, ymax+0.12*dy
	}
}

// chartNameMax is the longest arm name a chart writes; longer ones are cut
// with an ellipsis (the tables have them whole).
const chartNameMax = 28

// chartName is an arm or group name as a chart writes it: control
// characters made visible (SVG is XML, which does not allow them), at most
// chartNameMax characters.
func chartName(s string) string {
	s = shown(s)
	if r := []rune(s); len(r) > chartNameMax {
		return string(r[:chartNameMax-1]) + "…"
	}
	return s
}

// pointLabels writes a label beside each of a chart's points where it
// overlaps no other label, no point and stays inside the plot: the first
// free place of eight around the point, then of eight further out; where
// none is free, the place that overlaps least.
type pointLabels struct {
	xy     plotter.XYs
	text   []string
	colour []color.Color
	style  draw.TextStyle
	radius vg.Length // of the markers, kept clear
	// placed are the labels' rectangles as last drawn, then the
	// markers'.
	placed []vg.Rectangle
}

// Plot implements plot.Plotter.
func (pl *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	at := make([]vg.Point, len(pl.xy))
	var taken []vg.Rectangle
	for i, xy := range pl.xy {
		at[i] = vg.Point{X: trX(xy.X), Y: trY(xy.Y)}
		r := pl.radius
		taken = append(taken, vg.Rectangle{Min: vg.Point{X: at[i].X - r, Y: at[i].Y - r}, Max: vg.Point{X: at[i].X + r, Y: at[i].Y + r}})
	}
	// Left to right, so that labels of arms close together take turns.
	order := make([]int, len(at))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return at[order[a]].X < at[order[b]].X })
	for _, i := range order {
		w, h := pl.style.Width(pl.text[i]), pl.style.Height(pl.text[i])
		best, bestCost := vg.Rectangle{}, math.Inf(1)
		for _, d := range []vg.Length{pl.radius + vg.Points(2), pl.radius + vg.Points(14)} {
			for _, off := range labelOffsets(w, h, d) {
				min := vg.Point{X: at[i].X + off.X, Y: at[i].Y + off.Y}
				r := vg.Rectangle{Min: min, Max: vg.Point{X: min.X + w, Y: min.Y + h}}
				cost := outside(r, c.Rectangle) * 4
				for _, t := range taken {
					cost += overlap(r, t)
				}
				if cost < bestCost {
					best, bestCost = r, cost
				}
				if cost == 0 {
					break
				}
			}
			if bestCost == 0 {
				break
			}
		}
		taken = append(taken, best)
		sty := pl.style
		sty.Color = pl.colour[i]
		c.FillText(sty, best.Min, pl.text[i])
	}
	pl.placed = append(taken[len(at):], taken[:len(at)]...)
}

// labelOffsets are the lower-left corners, relative to a point, of a w × h
// label d away from it: right, left, above, below, then the diagonals.
func labelOffsets(w, h, d vg.Length) []vg.Point {
	return []vg.Point{
		{X: d, Y: -h / 2}, {X: -d - w, Y: -h / 2}, {X: -w / 2, Y: d}, {X: -w / 2, Y: -d - h},
		{X: d * 0.7, Y: d * 0.7}, {X: d * 0.7, Y: -d*0.7 - h}, {X: -d*0.7 - w, Y: d * 0.7}, {X: -d*0.7 - w, Y: -d*0.7 - h},
	}
}

// overlap is the area two rectangles share.
func overlap(a, b vg.Rectangle) float64 {
	w := math.Min(float64(a.Max.X), float64(b.Max.X)) - math.Max(float64(a.Min.X), float64(b.Min.X))
	h := math.Min(float64(a.Max.Y), float64(b.Max.Y)) - math.Max(float64(a.Min.Y), float64(b.Min.Y))
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}

// outside is the area of r beyond bounds.
func outside(r, bounds vg.Rectangle) float64 {
	size := r.Size()
	return float64(size.X*size.Y) - overlap(r, bounds)
}

var _ plot.Plotter = (*pointLabels)(nil)
