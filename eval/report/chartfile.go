package report

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
)

// NewChart is a plot in the style of the report's charts (fonts, a light
// grid, tick labels without trailing zeros), for figures other commands
// draw (crab tune's Pareto plots).
func NewChart(title, xlabel, ylabel string) *plot.Plot { return newChart(title, xlabel, ylabel) }

// ChartLegend is a legend drawn beside a NewChart plot, not over its data.
func ChartLegend() plot.Legend { return chartLegend() }

// WriteChartSVG draws p, with its legend l (nil: none) in a strip to the
// right, as one SVG document of the report charts' size. A panic of the
// plotting library (data it cannot place) is returned as an error.
func WriteChartSVG(w io.Writer, p *plot.Plot, l *plot.Legend) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("report: drawing chart %q: %v", p.Title.Text, r)
		}
	}()
	svg, err := renderSVG(p, l)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, string(svg)+"\n")
	return err
}
