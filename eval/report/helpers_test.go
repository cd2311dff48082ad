package report

import (
	"io"
	"testing"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
)

// readSet builds the set of recs the way every command reads records.
func readSet(recs []Record) (*records.RecordSet, error) { return records.SetOf(recs) }

// mustSet is readSet for records a test knows to be valid.
func mustSet(t testing.TB, recs []Record) *records.RecordSet {
	t.Helper()
	set, err := readSet(recs)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// summarizeRecs summarizes recs as crab report does after reading them.
func summarizeRecs(recs []Record, opt analysis.Options) (*analysis.Summary, error) {
	set, err := readSet(recs)
	if err != nil {
		return nil, err
	}
	return analysis.Summarize(set, opt)
}

// exerciseOptions judge the six-request exercise as crab does wherever it
// runs: its outcomes are fixed, the same on every reading, so with the
// sample rule it states, net (lose no passing task of this sample).
func exerciseOptions() analysis.Options {
	return analysis.Options{Gate: &analysis.GateConfig{Rule: analysis.RuleNet}}
}

// exerciseSet reads the six-request exercise fixture.
func exerciseSet(t testing.TB) *records.RecordSet {
	t.Helper()
	set, err := records.ReadSet([]string{"../../fixtures/exercise.csv"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// mkRec builds a record the way the interchange CSV reader would.
func mkRec(arm, task string, latMs float64, outcome string, pass bool, cost float64) Record {
	return Record{Arm: arm, TaskID: task, E2EMs: latMs, Outcome: outcome, Pass: pass, Cost: cost, ContractOK: outcome != OutcomeContractFail}
}

// The records package's vocabulary, as the tests spell it.
type Record = records.Record

const (
	OutcomeOK           = records.OutcomeOK
	OutcomeError        = records.OutcomeError
	OutcomeTimeout      = records.OutcomeTimeout
	OutcomeContractFail = records.OutcomeContractFail
	OutcomeCancelled    = records.OutcomeCancelled
	MisrouteUnder       = records.MisrouteUnder
	MisrouteOver        = records.MisrouteOver
	MisrouteHopeless    = records.MisrouteHopeless
)

// WriteReport writes s in a format, without records.
func WriteReport(w io.Writer, s *analysis.Summary, format string) error {
	return Write(w, format, Input{Summary: s})
}

// WriteHTMLSet writes the page of s with the charts of recs.
func WriteHTMLSet(w io.Writer, s *analysis.Summary, recs *records.RecordSet) error {
	return Write(w, "html", Input{Summary: s, Records: recs})
}
