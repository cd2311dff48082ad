package analysis

import (
	"testing"

	"github.com/crab-testbed/crab/eval/internal/rectest"
	"github.com/crab-testbed/crab/eval/records"
)

// The record helpers shared with the report package's tests.
var (
	mustSet     = rectest.Set
	mkRec       = rectest.Rec
	exerciseSet = rectest.Exercise
)

// summarizeRecs summarizes recs as crab report does after reading them.
func summarizeRecs(recs []Record, opt Options) (*Summary, error) {
	return rectest.Summarize(recs, opt, Summarize)
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
