// Package rectest holds the record helpers the tests of crab's analysis
// and report packages share: records built as the interchange CSV reader
// builds them, read back as every command reads them, and the
// six-request exercise fixture. Only tests import it.
package rectest

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

// Rec builds a record the way the interchange CSV reader would.
func Rec(arm, task string, latMs float64, outcome string, pass bool, cost float64) records.Record {
	return records.Record{Arm: arm, TaskID: task, E2EMs: latMs, Outcome: outcome, Pass: pass, Cost: cost, ContractOK: outcome != records.OutcomeContractFail}
}

// Set builds the set of recs the way every command reads records, for
// records a test knows to be valid.
func Set(t testing.TB, recs []records.Record) *records.RecordSet {
	t.Helper()
	set, err := records.SetOf(recs)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// Summarize reads recs back as every command does and hands the set to
// summarize (analysis.Summarize) with opt, as crab report does.
func Summarize[O, S any](recs []records.Record, opt O, summarize func(*records.RecordSet, O) (S, error)) (S, error) {
	set, err := records.SetOf(recs)
	if err != nil {
		var zero S
		return zero, err
	}
	return summarize(set, opt)
}

// Exercise reads the six-request exercise fixture (fixtures/exercise.csv).
func Exercise(t testing.TB) *records.RecordSet {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "..", "fixtures", "exercise.csv")
	set, err := records.ReadSet([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return set
}
