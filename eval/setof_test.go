package eval

import (
	"bytes"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
)

// summarizeRecs writes recs as records.jsonl, reads them back with
// records.ReadSet and summarizes them, as crab report does.
func summarizeRecs(recs []Record, opt analysis.Options) (*analysis.Summary, error) {
	var buf bytes.Buffer
	w := records.JSONLWriter(&buf)
	for _, r := range recs {
		if err := w(r); err != nil {
			return nil, err
		}
	}
	set, err := records.ReadSet([]string{"-"}, &buf)
	if err != nil {
		return nil, err
	}
	return analysis.Summarize(set, opt)
}
