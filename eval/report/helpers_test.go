package report

import (
	"io"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/rectest"
	"github.com/crab-testbed/crab/eval/records"
)

// summarizeRecs summarizes recs as crab report does after reading them.
func summarizeRecs(recs []records.Record, opt analysis.Options) (*analysis.Summary, error) {
	return rectest.Summarize(recs, opt, analysis.Summarize)
}

// exerciseOptions judge the six-request exercise as crab does wherever it
// runs: its outcomes are fixed, the same on every reading, so with the
// sample rule it states, net (lose no passing task of this sample).
func exerciseOptions() analysis.Options {
	return analysis.Options{Gate: &analysis.GateConfig{Rule: analysis.RuleNet}}
}

// WriteReport writes s in a format, without records.
func WriteReport(w io.Writer, s *analysis.Summary, format string) error {
	return Write(w, format, Input{Summary: s})
}

// WriteHTMLSet writes the page of s with the charts of recs.
func WriteHTMLSet(w io.Writer, s *analysis.Summary, recs *records.RecordSet) error {
	return Write(w, "html", Input{Summary: s, Records: recs})
}
