package records

import (
	"fmt"
	"strings"
)

// Figures a record can say it did not measure (Record.Unmeasured): records
// from elsewhere (a benchmark tool's results, a proxy's spend logs) often
// lack some, and a figure nobody measured is not 0.
const (
	// FigureCost: the record's cost is unknown (Cost is 0 only as a
	// placeholder).
	FigureCost = "cost"
	// FigureQuality: the answer was never graded, so Pass and Correct say
	// nothing.
	FigureQuality = "quality"
	// FigureTokens: the token counts are unknown.
	FigureTokens = "tokens"
	// FigureTTFT: no time to first byte was taken.
	FigureTTFT = "ttft"
	// FigureLoad: no crab load generator sent the request, so there is no
	// schedule lag and no concurrency-slot queue time (LagMs and QueueMs
	// are 0 only as placeholders).
	FigureLoad = "load"
	// FigureLatency: the record's source gave no duration for it (a
	// failure a benchmark tool writes with a latency of 0): E2EMs and
	// ModelMs are 0 only as placeholders. Unlike the other figures it is
	// judged per record: latency statistics leave such records out and
	// say how many, and are "-" only when no record of an arm measured
	// latency. Only a failed request may leave it unmeasured.
	FigureLatency = "latency"
	// FigureShadowCost and FigureGradeCost: what judging the routing
	// decision (ShadowCost) or grading the answer (GradeCost) cost is
	// unknown, since a call went to a model without a price; the field is
	// 0 only as a placeholder. Evaluation overhead, apart from Cost.
	FigureShadowCost = "shadow_cost"
	FigureGradeCost  = "grade_cost"
)

// Figures lists the figures a record can leave unmeasured, in the order
// reports name them.
var Figures = []string{FigureCost, FigureQuality, FigureTokens, FigureTTFT, FigureLoad, FigureLatency, FigureShadowCost, FigureGradeCost}

// Missing is a set of unmeasured figures, one bit per entry of Figures:
// room for 16 (a test checks that they fit). It lives in Attrs only, never
// in a file: records write the figures' names.
type Missing uint16

// MissingOf is the set of the named figures; an unknown name is an error
// naming the figures there are.
func MissingOf(names []string) (Missing, error) {
	var m Missing
	for _, n := range names {
		i := figureIndex(n)
		if i < 0 {
			return 0, fmt.Errorf("unknown figure %q (want %s)", n, strings.Join(Figures, ", "))
		}
		m |= 1 << i
	}
	return m, nil
}

func figureIndex(name string) int {
	for i, f := range Figures {
		if f == name {
			return i
		}
	}
	return -1
}

// Has reports whether figure is in m.
func (m Missing) Has(figure string) bool {
	i := figureIndex(figure)
	return i >= 0 && m&(1<<i) != 0
}

// Names lists the figures in m, in the order of Figures.
func (m Missing) Names() []string {
	var out []string
	for i, f := range Figures {
		if m&(1<<i) != 0 {
			out = append(out, f)
		}
	}
	return out
}

// Measured reports whether the record measured figure (one of Figures).
func (r *Record) Measured(figure string) bool {
	for _, f := range r.Unmeasured {
		if f == figure {
			return false
		}
	}
	return true
}

// MarkUnmeasured adds figures to the record's unmeasured ones, each once,
// in the order of Figures.
func (r *Record) MarkUnmeasured(figures ...string) {
	m, _ := MissingOf(r.Unmeasured)
	add, _ := MissingOf(figures)
	r.Unmeasured = (m | add).Names()
}

// AddShadowCost adds what a call judging the routing decision cost to
// ShadowCost; unpriced (the call went to a model without a price) leaves
// it unmeasured, 0 as its placeholder, whatever else is added.
func (r *Record) AddShadowCost(cost float64, unpriced bool) {
	r.addCost(&r.ShadowCost, FigureShadowCost, cost, unpriced)
}

// AddGradeCost adds what a grader's call cost to GradeCost, as
// AddShadowCost does to ShadowCost.
func (r *Record) AddGradeCost(cost float64, unpriced bool) {
	r.addCost(&r.GradeCost, FigureGradeCost, cost, unpriced)
}

func (r *Record) addCost(field *float64, figure string, cost float64, unpriced bool) {
	if unpriced {
		r.MarkUnmeasured(figure)
	}
	if !r.Measured(figure) {
		*field = 0
		return
	}
	*field += cost
}

// latencyUnmeasuredFault says why a record may not leave its latency
// unmeasured ("" when it may): a request that succeeded was timed, and a
// placeholder latency is 0.
func latencyUnmeasuredFault(rec *Record) string {
	if rec.Measured(FigureLatency) {
		return ""
	}
	switch {
	case rec.Outcome == OutcomeOK:
		return "latency unmeasured on a request whose outcome is ok: only a failed request can lack a duration"
	case rec.E2EMs != 0:
		return fmt.Sprintf("latency unmeasured, but e2e_ms is %v: an unmeasured latency is written as 0", rec.E2EMs)
	}
	return ""
}
