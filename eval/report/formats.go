package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// ErrUnknownFormat: Write was asked for a format it does not write; the
// message lists the ones it does.
var ErrUnknownFormat = errors.New("report: unknown format")

// Input is what a format is written from: the summary and, for the charts
// of the HTML page, the records it was computed from (nil: none).
type Input struct {
	Summary *analysis.Summary
	Records *records.RecordSet
}

// format is one registered report format.
type format struct {
	rank  int    // place in Names
	about string // what the format is, for help text
	write func(w io.Writer, in Input) error
}

// formats is every report format crab writes, by name: Write dispatches on
// it, Valid checks against it, Names and Help list it.
var formats = map[string]format{
	"text": {0, "aligned tables", func(w io.Writer, in Input) error { return Build(in.Summary).WriteText(w) }},
	"md":   {1, "Markdown", func(w io.Writer, in Input) error { return Build(in.Summary).WriteMarkdown(w) }},
	"json": {2, "the summary (summary.json)", writeJSON},
	"csv":  {3, "one row of figures per arm", writeCSV},
	"html": {4, "a self-contained page with charts", func(w io.Writer, in Input) error { return Build(in.Summary).WriteHTML(w, in) }},
}

// DefaultFormat is the format an empty name stands for.
const DefaultFormat = "text"

// Names lists the formats in their documented order.
func Names() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return formats[a].rank - formats[b].rank })
	return names
}

// Help lists the formats for a flag's help: "text, md, json, csv or html".
func Help() string { return words.Or(Names()) }

// Valid reports whether name is a format Write writes ("" is the default).
func Valid(name string) bool {
	_, ok := formats[name]
	return ok || name == ""
}

// Write writes a report in the named format ("" is DefaultFormat).
func Write(w io.Writer, name string, in Input) error {
	if name == "" {
		name = DefaultFormat
	}
	f, ok := formats[name]
	if !ok {
		return fmt.Errorf("%w %q (want %s)", ErrUnknownFormat, name, Help())
	}
	return f.write(w, in)
}

// writeJSON writes the summary with the documented summary.json names.
func writeJSON(w io.Writer, in Input) error {
	b, err := json.MarshalIndent(in.Summary, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encoding summary: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeCSV writes one row per arm with the main figures, unrounded; empty
// cells are figures that do not exist for the arm (e.g. cost_per_pass with
// no pass).
func writeCSV(w io.Writer, in Input) error {
	s := in.Summary
	cw := csv.NewWriter(w)
	header := []string{"arm", "verdict", "n", "warmup", "ok", "failed", "timeouts", "pass",
		"p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms", "min_ms", "ok_p50_ms", "ok_p95_ms", "ok_mean_ms",
		"ttft_p50_ms", "ttft_p95_ms", "cost", "cost_per_pass", "hit_rate", "hit_p50_ms", "miss_p50_ms", "leaks",
		"silent_violations", "lost", "gained", "unmatched", "mcnemar_p", "latency_delta_mean_ms", "latency_delta_ci_low_ms",
		"latency_delta_ci_high_ms", "cost_delta_mean", "cost_delta_ci_low", "cost_delta_ci_high"}
	if err := cw.Write(header); err != nil {
		return err
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return num(*v)
	}
	itoa := strconv.Itoa
	for i := range s.Arms {
		a := &s.Arms[i]
		pass, cost := itoa(a.Pass), num(a.Cost)
		if !a.Measured(records.FigureQuality) {
			pass = "" // not measured: no figure, like a cost per pass with no pass
		}
		if !a.Measured(records.FigureCost) {
			cost = ""
		}
		lat := []string{num(a.P50Ms), num(a.P90Ms), num(a.P95Ms), num(a.P99Ms), num(a.MaxMs), num(a.MeanMs), num(a.MinMs)}
		if !a.Measured(records.FigureLatency) {
			lat = make([]string, len(lat)) // not measured: no figure
		}
		row := []string{a.Name, a.Verdict, itoa(a.N), itoa(a.Warmup), itoa(a.OK), itoa(a.Failed), itoa(a.Timeouts), pass}
		row = append(row, lat...)
		row = append(row,
			opt(a.OKP50Ms), opt(a.OKP95Ms), opt(a.OKMeanMs), opt(a.TTFTP50Ms), opt(a.TTFTP95Ms), cost, opt(a.CostPerPass))
		if c := a.CacheStats; c != nil {
			row = append(row, num(c.HitRate), opt(c.HitP50Ms), opt(c.MissP50Ms), itoa(a.LeakCount()))
		} else {
			row = append(row, "", "", "", "")
		}
		row = append(row, itoa(a.SilentViolations))
		if p := a.Paired; p != nil {
			if qualityPaired(s, a) {
				row = append(row, itoa(len(p.Lost)), itoa(len(p.Gained)), itoa(len(p.Unmatched)), num(p.McNemarP))
			} else {
				row = append(row, "", "", itoa(len(p.Unmatched)), "")
			}
			for _, d := range []*analysis.Delta{p.LatencyDeltaMs, p.CostDelta} {
				if d != nil {
					row = append(row, num(d.Mean), num(d.CILow), num(d.CIHigh))
				} else {
					row = append(row, "", "", "")
				}
			}
		} else {
			row = append(row, "", "", "", "", "", "", "", "", "", "")
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
