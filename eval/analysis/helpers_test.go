package analysis

import (
	"testing"

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
func summarizeRecs(recs []Record, opt Options) (*Summary, error) {
	set, err := readSet(recs)
	if err != nil {
		return nil, err
	}
	return Summarize(set, opt)
}

// comparePairedRecs compares candidate with baseline records as Summarize
// does, after reading both back like every command.
func comparePairedRecs(t testing.TB, baseline, candidate []Record, opt PairOptions) Paired {
	t.Helper()
	set := mustSet(t, append(append([]Record(nil), baseline...), candidate...))
	var b, c []*records.Rec
	i := 0
	set.Each(func(r *records.Rec) {
		if i < len(baseline) {
			b = append(b, r)
		} else {
			c = append(c, r)
		}
		i++
	})
	return comparePaired(set.Symbols(), b, c, opt)
}

// netGate is the gate of tests whose outcomes are the same on every call,
// judged (as the six-request exercise is) with the sample rule net.
func netGate() *GateConfig { return &GateConfig{Rule: RuleNet} }

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
