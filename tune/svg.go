package tune

import (
	"image/color"
	"io"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/crab-testbed/crab/eval/report"
)

// Colours of the Pareto figure.
var (
	calibrationColour = color.RGBA{0x99, 0x99, 0x99, 0xff}
	holdoutColour     = color.RGBA{0x1f, 0x77, 0xb4, 0xff}
	chosenColour      = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	largeColour       = color.RGBA{0x22, 0x22, 0x22, 0xff}
	smallColour       = color.RGBA{0x2c, 0xa0, 0x2c, 0xff}
	randomColour      = color.RGBA{0xff, 0x7f, 0x0e, 0xff}
)

// WriteSVG draws the policy's cost–pass figure as a self-contained SVG
// (gonum/plot, in the style of the report's charts): cost per request on
// x, pass rate on y; every calibration threshold (grey) with its Pareto
// frontier, the same thresholds replayed on the holdout (blue) with
// theirs, the chosen threshold marked on both (red ring on calibration,
// red dot on the holdout), and all-small, all-large and random routing on
// the holdout. Rates and costs per request put both sides, of different
// sizes, on one scale. When cost is not measured (a model without a
// price), x is the share of requests that call the large model instead.
func (p *PolicyReport) WriteSVG(w io.Writer, title string) error {
	h := &p.Holdout
	x := func(s *Point) float64 { return float64(s.CostPerRequest()) }
	xLabel := "cost per request"
	n := float64(max(h.N, 1))
	allLarge, allSmall, random := float64(h.CostAllLarge)/n, float64(h.CostAllSmall)/n, float64(h.Random.CostMean)/n
	if !p.costed() {
		x = func(s *Point) float64 { return s.StrongShare }
		xLabel = "share of requests calling the large model (cost not measured)"
		allLarge, allSmall, random = 1, 0, h.Random.StrongShare
	}
	pl := report.NewChart(title, xLabel, "pass rate (%)")
	leg := report.ChartLegend()
	if err := addCurve(pl, &leg, p.Sweep, x, calibrationColour, "calibration sweep"); err != nil {
		return err
	}
	if err := addCurve(pl, &leg, h.Curve, x, holdoutColour, "same thresholds, holdout"); err != nil {
		return err
	}
	type mark struct {
		pt     plotter.XY
		c      color.Color
		shape  draw.GlyphDrawer
		radius float64
		label  string
	}
	var marks []mark
	for i := range p.Sweep {
		if p.Sweep[i].Threshold == p.Threshold {
			marks = append(marks, mark{pointXY(&p.Sweep[i], x), chosenColour, boldRing{}, 6, "chosen (calibration)"},
				mark{pointXY(&h.Curve[i], x), chosenColour, draw.CircleGlyph{}, 5, "chosen (holdout)"})
			break
		}
	}
	marks = append(marks,
		mark{plotter.XY{X: allLarge, Y: 100 * float64(h.PassAllLarge) / n}, largeColour, draw.BoxGlyph{}, 4.5, "all-large (holdout)"},
		mark{plotter.XY{X: allSmall, Y: 100 * float64(h.PassAllSmall) / n}, smallColour, draw.BoxGlyph{}, 4.5, "all-small (holdout)"},
		mark{plotter.XY{X: random, Y: 100 * h.Random.PassMean / n}, randomColour, draw.PyramidGlyph{}, 5, "random, same share"})
	for _, m := range marks {
		sc, err := plotter.NewScatter(plotter.XYs{m.pt})
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: m.c, Radius: vg.Points(m.radius), Shape: m.shape}
		pl.Add(sc)
		leg.Add(m.label, sc)
	}
	return report.WriteChartSVG(w, pl, &leg)
}

// pointXY is a point of a sweep on the figure: x(s) (cost per request),
// pass rate in percent.
func pointXY(s *Point, x func(*Point) float64) plotter.XY {
	return plotter.XY{X: x(s), Y: 100 * s.PassRate()}
}

// addCurve adds the points of one side's sweep, and the line through its
// Pareto frontier, to the figure and the legend.
func addCurve(pl *plot.Plot, leg *plot.Legend, pts []Point, x func(*Point) float64, c color.Color, label string) error {
	xy := make(plotter.XYs, len(pts))
	var frontier plotter.XYs
	for i := range pts {
		xy[i] = pointXY(&pts[i], x)
		if pts[i].Frontier {
			frontier = append(frontier, xy[i])
		}
	}
	sort.Slice(frontier, func(i, j int) bool { return frontier[i].X < frontier[j].X })
	thumbs := []plot.Thumbnailer{}
	if len(frontier) > 1 {
		line, err := plotter.NewLine(frontier)
		if err != nil {
			return err
		}
		line.LineStyle.Color, line.LineStyle.Width = c, vg.Points(1.5)
		pl.Add(line)
		thumbs = append(thumbs, line)
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	pl.Add(sc)
	leg.Add(label, append(thumbs, sc)...)
	return nil
}

// boldRing is a ring glyph with a line heavy enough to read against the
// dots it surrounds (draw.RingGlyph's is half a point).
type boldRing struct{}

func (boldRing) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineWidth(vg.Points(2))
	c.SetColor(sty.Color)
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}
