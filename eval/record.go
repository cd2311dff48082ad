package eval

import "github.com/crab-testbed/crab/eval/records"

// Record is what the runner writes for every scheduled request (see package
// records, which reads them back).
type Record = records.Record

// The outcomes and misroute kinds the runner records (see package records).
const (
	OutcomeOK           = records.OutcomeOK
	OutcomeError        = records.OutcomeError
	OutcomeTimeout      = records.OutcomeTimeout
	OutcomeContractFail = records.OutcomeContractFail
	OutcomeCancelled    = records.OutcomeCancelled

	MisrouteUnder    = records.MisrouteUnder
	MisrouteOver     = records.MisrouteOver
	MisrouteHopeless = records.MisrouteHopeless
)
