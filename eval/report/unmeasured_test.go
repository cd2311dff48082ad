package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/rectest"
	"github.com/crab-testbed/crab/eval/records"
)

// TestUnmeasuredFormats: in every format, an arm whose records carry no
// cost and no grading shows "-" (an empty CSV cell, null in JSON) for
// pass and cost, never 0.
func TestUnmeasuredFormats(t *testing.T) {
	t.Parallel()
	var recs []records.Record
	for _, arm := range []string{"baseline", "cand"} {
		for i := range 6 {
			r := rectest.Rec(arm, fmt.Sprint("t", i), 100+float64(i), records.OutcomeOK, false, 0)
			r.Unmeasured = []string{records.FigureCost, records.FigureQuality}
			recs = append(recs, r)
		}
	}
	out := renderer(t, recs)
	for _, format := range []string{"text", "md"} {
		o := out(format)
		if strings.Contains(o, "0/6") {
			t.Errorf("%s shows a pass count of 0/6 for ungraded records:\n%s", format, o)
		}
		for _, want := range []string{"cost not measured: the records of baseline and cand", "quality not measured: the records of baseline and cand"} {
			if !strings.Contains(o, want) {
				t.Errorf("%s lacks the note %q", format, want)
			}
		}
	}
	if o := out("html"); strings.Contains(o, "0/6") {
		t.Errorf("html shows a pass count of 0/6 for ungraded records")
	}
	j := out("json")
	for _, want := range []string{`"pass": null`, `"cost": null`, `"unmeasured": [`} {
		if !strings.Contains(j, want) {
			t.Errorf("json lacks %s", want)
		}
	}
	rows, col := csvTable(t, out("csv"))
	for _, row := range rows[1:] {
		for _, h := range []string{"pass", "cost", "cost_per_pass", "lost", "gained", "mcnemar_p"} {
			if row[col[h]] != "" {
				t.Errorf("csv %s of %s = %q; want empty (not measured)", h, row[0], row[col[h]])
			}
		}
	}
}

// TestLatencyUnmeasuredFormats: an arm whose every request failed without
// a duration shows "-" for its latency in text and markdown, empty CSV
// cells and null in JSON; an arm with some such failures says its latency
// is over the requests with one.
func TestLatencyUnmeasuredFormats(t *testing.T) {
	t.Parallel()
	var recs []records.Record
	for _, arm := range []string{"baseline", "cand"} {
		for i := range 6 {
			r := rectest.Rec(arm, fmt.Sprint("t", i), 100+float64(i), records.OutcomeOK, false, 0)
			r.Group = "short"
			if arm == "cand" || i == 0 {
				r.Outcome, r.Error, r.E2EMs = records.OutcomeError, "HTTP 503", 0
				r.Unmeasured = []string{records.FigureLatency}
			}
			r.MarkUnmeasured(records.FigureCost, records.FigureQuality)
			recs = append(recs, r)
		}
	}
	out := renderer(t, recs)
	text := out("text")
	var row []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "cand ") {
			row = strings.Fields(l)
			break
		}
	}
	// arm n ok fail timeouts pass p50 p95 p99 max mean
	if len(row) < 11 || row[3] != "6" || strings.Join(row[6:11], " ") != "- - - - -" {
		t.Errorf("text row of the arm that measured no latency: %q", row)
	}
	if !strings.Contains(text, "over every request with a duration") || !strings.Contains(text, "latency not measured for 1 of 6 requests of baseline") {
		t.Errorf("text does not say which latencies are left out:\n%s", text)
	}
	rows, col := csvTable(t, out("csv"))
	for _, h := range []string{"p50_ms", "max_ms", "mean_ms"} {
		if i, ok := col[h]; !ok || rows[2][i] != "" || rows[1][i] == "" {
			t.Errorf("CSV %s: baseline %q cand %q; want a figure and an empty cell", h, rows[1][col[h]], rows[2][col[h]])
		}
	}
	if js := strings.ReplaceAll(out("json"), " ", ""); !strings.Contains(js, `"p50_ms":null`) || !strings.Contains(js, `"latency_unmeasured":6`) {
		t.Errorf("JSON lacks null latency for the arm that measured none")
	}
}

// renderer summarizes recs and returns a function writing the report in a
// format.
func renderer(t *testing.T, recs []records.Record) func(format string) string {
	t.Helper()
	s, err := summarizeRecs(recs, analysis.Options{Seed: 1, Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	return func(format string) string {
		var b bytes.Buffer
		if err := Write(&b, format, Input{Summary: s, Records: rectest.Set(t, recs)}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		return b.String()
	}
}

// csvTable is the rows of a CSV report and the index of each column.
func csvTable(t *testing.T, text string) ([][]string, map[string]int) {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	return rows, col
}
