package eval

import (
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
)

// summarizeRecs reads recs back as every command reads records
// (records.SetOf) and summarizes them, as crab report does.
func summarizeRecs(recs []records.Record, opt analysis.Options) (*analysis.Summary, error) {
	set, err := records.SetOf(recs)
	if err != nil {
		return nil, err
	}
	return analysis.Summarize(set, opt)
}
