package tune

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// WriteSVG draws the policy's cost–pass figure as a self-contained SVG:
// cost per request on x, pass rate on y; every calibration threshold (grey)
// with its Pareto frontier, the same thresholds replayed on the holdout
// (blue) with theirs, the chosen threshold marked on both (red), and
// all-small, all-large and random routing on the holdout. Rates and costs
// per request put both sides, of different sizes, on one scale.
func (p *PolicyReport) WriteSVG(w io.Writer, title string) error {
	const (
		width, height          = 760, 500
		left, right, top, bott = 70, 200, 40, 60
	)
	pw, ph := float64(width-left-right), float64(height-top-bott)
	h := &p.Holdout
	type pt struct{ x, y float64 }
	var all []pt
	for _, s := range p.Sweep {
		all = append(all, pt{s.CostPerRequest(), s.PassRate()})
	}
	for _, s := range h.Curve {
		all = append(all, pt{s.CostPerRequest(), s.PassRate()})
	}
	n := float64(max(h.N, 1))
	large := pt{h.CostAllLarge / n, float64(h.PassAllLarge) / n}
	small := pt{h.CostAllSmall / n, float64(h.PassAllSmall) / n}
	random := pt{h.Random.CostMean / n, h.Random.PassMean / n}
	all = append(all, large, small, random)
	xmax, ymin, ymax := 0.0, 1.0, 0.0
	for _, q := range all {
		xmax = max(xmax, q.x)
		ymin = min(ymin, q.y)
		ymax = max(ymax, q.y)
	}
	xt := niceTicks(0, xmax)
	yt := niceTicks(max(0, ymin-0.02), min(1, ymax+0.02))
	x0, x1 := xt[0], xt[len(xt)-1]
	y0, y1 := yt[0], yt[len(yt)-1]
	if x1 == x0 {
		x1 = x0 + 1
	}
	if y1 == y0 {
		y1 = y0 + 1
	}
	X := func(v float64) float64 { return float64(left) + (v-x0)/(x1-x0)*pw }
	Y := func(v float64) float64 { return float64(top) + (1-(v-y0)/(y1-y0))*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	// grid and axes
	for _, v := range xt {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", X(v), top, X(v), height-bott)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", X(v), height-bott+16, tickLabel(v, xt))
	}
	for _, v := range yt {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", left, Y(v), width-right, Y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s%%</text>`+"\n", left-6, Y(v)+4, tickLabel(100*v, scale(yt, 100)))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">cost per request</text>`+"\n", float64(left)+pw/2, height-18)
	fmt.Fprintf(&b, `<text transform="translate(18,%.1f) rotate(-90)" text-anchor="middle">pass rate</text>`+"\n", float64(top)+ph/2)

	curve := func(pts []Point, color, label string) {
		var fr []Point
		for _, s := range pts {
			if s.Frontier {
				fr = append(fr, s)
			}
		}
		sort.Slice(fr, func(i, j int) bool { return fr[i].CostPerRequest() < fr[j].CostPerRequest() })
		if len(fr) > 1 {
			var path []string
			for _, s := range fr {
				path = append(path, fmt.Sprintf("%.1f,%.1f", X(s.CostPerRequest()), Y(s.PassRate())))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"><title>%s Pareto frontier</title></polyline>`+"\n", strings.Join(path, " "), color, label)
		}
		for _, s := range pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s" fill-opacity="0.7"><title>%s: threshold %s, pass %d/%d, cost %s</title></circle>`+"\n",
				X(s.CostPerRequest()), Y(s.PassRate()), color, label, fmtThreshold(s.Threshold), s.Pass, s.N, fmtCost(s.Cost))
		}
	}
	curve(p.Sweep, "#999", "calibration")
	curve(h.Curve, "#1f77b4", "holdout")
	// chosen point on both sides
	var calChosen, holdChosen *Point
	for i := range p.Sweep {
		if p.Sweep[i].Threshold == p.Threshold {
			calChosen, holdChosen = &p.Sweep[i], &h.Curve[i]
		}
	}
	if calChosen != nil {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="7" fill="none" stroke="#d62728" stroke-width="2"><title>chosen on calibration</title></circle>`+"\n", X(calChosen.CostPerRequest()), Y(calChosen.PassRate()))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="6" fill="#d62728"><title>chosen, on the holdout</title></circle>`+"\n", X(holdChosen.CostPerRequest()), Y(holdChosen.PassRate()))
	}
	square := func(q pt, color, label string) {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="9" height="9" fill="%s"><title>%s</title></rect>`+"\n", X(q.x)-4.5, Y(q.y)-4.5, color, label)
	}
	square(large, "#222", "all-large (holdout)")
	square(small, "#2ca02c", "all-small (holdout)")
	fmt.Fprintf(&b, `<path d="M%.1f %.1f l6 6 l-6 6 l-6 -6 z" fill="#ff7f0e"><title>random routing at the chosen share (holdout)</title></path>`+"\n", X(random.x), Y(random.y)-6)

	// legend
	lx, ly := width-right+16, top+10
	items := []struct{ shape, color, text string }{
		{"dot", "#999", "calibration sweep"},
		{"dot", "#1f77b4", "same thresholds, holdout"},
		{"ring", "#d62728", "chosen (calibration)"},
		{"fill", "#d62728", "chosen (holdout)"},
		{"square", "#222", "all-large (holdout)"},
		{"square", "#2ca02c", "all-small (holdout)"},
		{"diamond", "#ff7f0e", "random, same share"},
	}
	for i, it := range items {
		y := ly + 20*i
		switch it.shape {
		case "dot":
			fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="3" fill="%s"/>`, lx, y, it.color)
		case "ring":
			fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="6" fill="none" stroke="%s" stroke-width="2"/>`, lx, y, it.color)
		case "fill":
			fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="5" fill="%s"/>`, lx, y, it.color)
		case "square":
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="9" height="9" fill="%s"/>`, lx-4, y-4, it.color)
		case "diamond":
			fmt.Fprintf(&b, `<path d="M%d %d l5 5 l-5 5 l-5 -5 z" fill="%s"/>`, lx, y-5, it.color)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+12, y+4, html.EscapeString(it.text))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceTicks returns 3 to 8 round tick values covering [lo, hi].
func niceTicks(lo, hi float64) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	span := hi - lo
	step := math.Pow(10, math.Floor(math.Log10(span/5)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if span/(step*m) <= 6 {
			step *= m
			break
		}
	}
	start := math.Floor(lo/step) * step
	var out []float64
	for v := start; v <= hi+step*1e-9 || len(out) < 2; v += step {
		out = append(out, math.Round(v/step)*step)
		if v >= hi {
			break
		}
	}
	if out[len(out)-1] < hi {
		out = append(out, out[len(out)-1]+step)
	}
	return out
}

func scale(v []float64, f float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * f
	}
	return out
}

// tickLabel prints v with as many decimals as the tick step needs.
func tickLabel(v float64, ticks []float64) string {
	dec := 0
	if len(ticks) > 1 {
		step := math.Abs(ticks[1] - ticks[0])
		for step > 0 && step*math.Pow(10, float64(dec)) < 0.999 && dec < 10 {
			dec++
		}
		if step*math.Pow(10, float64(dec)) != math.Round(step*math.Pow(10, float64(dec))) && dec < 10 {
			dec++
		}
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}
