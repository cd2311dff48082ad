package report

import (
	"fmt"
	"html/template"
	"io"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// SweepArm is one arm of a rate sweep as the sweep's page draws it: per
// rung, the offered rate, the goodput (passing requests within the SLO
// per second) and the p95 latency (NaN: not measured), and the knee (NaN:
// outside the ladder).
type SweepArm struct {
	Name       string
	Rates      []float64
	GoodputRPS []float64
	P95Ms      []float64
	Knee       float64
}

// SweepPage is a rate sweep's page: its figures as text, the arms'
// curves and the notes.
type SweepPage struct {
	Title string
	Text  string
	Arms  []SweepArm
	Notes []string
}

// sweepPageTmpl is the sweep's page: the figures as the command printed
// them, then the two charts.
var sweepPageTmpl = template.Must(template.New("sweep").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;margin:2em;max-width:60em}pre{font-size:13px;background:#f6f6f6;padding:1em;overflow-x:auto}figure{margin:1.5em 0}figcaption{font-size:13px;color:#444}</style>
</head><body>
<h1>{{.Title}}</h1>
<pre>{{.Text}}</pre>
{{range .Charts}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{end}}{{range .Failed}}<p>{{.}}</p>
{{end}}</body></html>
`))

// WriteSweepHTML writes the sweep's page: its figures, then goodput and
// p95 latency against the offered rate, one line per arm, each arm's knee
// marked by a dashed vertical line in its colour.
func WriteSweepHTML(w io.Writer, p SweepPage) error {
	data := struct {
		Title, Text string
		Charts      []htmlChart
		Failed      []string
	}{Title: p.Title, Text: p.Text}
	for _, c := range []struct {
		id, title, ylabel, caption string
		val                        func(a SweepArm) []float64
	}{
		{"goodput", "Goodput against offered rate", "passing requests within the SLO per second",
			"Goodput per second at each offered rate (requests per second, in the models' time); a dashed line marks each arm's knee, the highest rate at which it kept the declared share within the SLO.",
			func(a SweepArm) []float64 { return a.GoodputRPS }},
		{"p95", "p95 latency against offered rate", "p95 end to end (ms)",
			"Nearest-rank p95 of end-to-end latency at each offered rate, in the models' milliseconds; a dashed line marks each arm's knee.",
			func(a SweepArm) []float64 { return a.P95Ms }},
	} {
		ch, err := drawSafely(func() (*htmlChart, error) { return sweepChart(p.Arms, c.title, c.ylabel, c.val) })
		if err != nil {
			data.Failed = append(data.Failed, fmt.Sprintf("The %s chart could not be drawn: %v.", c.id, err))
			continue
		}
		ch.ID, ch.Caption = c.id, c.caption
		data.Charts = append(data.Charts, *ch)
	}
	return sweepPageTmpl.Execute(w, data)
}

// sweepChart draws val against the offered rate, one line with points per
// arm (arm 0 the baseline's grey), the knees as dashed vertical lines.
func sweepChart(arms []SweepArm, title, ylabel string, val func(a SweepArm) []float64) (*htmlChart, error) {
	p := newChart(title, "offered rate (requests per second)", ylabel)
	l := chartLegend()
	ymax := 0.0
	for _, a := range arms {
		for _, v := range val(a) {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				ymax = math.Max(ymax, v)
			}
		}
	}
	if ymax == 0 {
		ymax = 1
	}
	p.Y.Min = 0
	p.Y.Max = ymax * 1.05
	for i, a := range arms {
		ys := val(a)
		var pts plotter.XYs
		for k, x := range a.Rates {
			if k < len(ys) && !math.IsNaN(ys[k]) && !math.IsInf(ys[k], 0) {
				pts = append(pts, plotter.XY{X: x, Y: ys[k]})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color = armColor(i), armColor(i)
		line.Width = vg.Points(1.5)
		line.Dashes = armDashes(i)
		points.Radius = vg.Points(2.5)
		p.Add(line, points)
		l.Add(a.Name, line, points)
		if !math.IsNaN(a.Knee) && !math.IsInf(a.Knee, 0) {
			k, err := plotter.NewLine(plotter.XYs{{X: a.Knee, Y: 0}, {X: a.Knee, Y: ymax * 1.05}})
			if err != nil {
				return nil, err
			}
			k.Color = armColor(i)
			k.Width = vg.Points(1)
			k.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(k)
		}
	}
	svg, err := renderSVG(p, &l)
	if err != nil {
		return nil, err
	}
	return &htmlChart{Title: title, SVG: svg}, nil
}
