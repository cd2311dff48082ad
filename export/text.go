package export

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/crab-testbed/crab/eval/records"
)

// csvHeader is the interchange CSV header: the required columns, then
// every optional one crab's records can fill.
var csvHeader = []string{"arm", "task_id", "latency_ms", "outcome", "pass", "cost",
	"group", "repeat", "ttft_ms", "cache", "model", "correct", "attempts", "contract", "contract_ok"}

// writeCSV writes recs as interchange CSV. Warm-up requests are left out:
// the format has no column to mark them, and a reader would count them.
func writeCSV(w io.Writer, recs []records.Record) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	row := make([]string, len(csvHeader))
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		row = append(row[:0], r.Arm, r.TaskID, num(r.E2EMs), r.Outcome, strconv.FormatBool(r.Pass), num(r.Cost),
			r.Group, strconv.Itoa(r.Repeat), num(r.TTFTMs), r.Cache, r.Model, strconv.FormatBool(r.Correct),
			strconv.Itoa(r.Attempts), r.Contract, strconv.FormatBool(r.ContractOK))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeJSONL writes recs as records.jsonl, one object per line, as crab
// run writes them.
func writeJSONL(w io.Writer, recs []records.Record) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for i := range recs {
		var ok bool
		buf, ok = recs[i].AppendJSON(buf[:0])
		if !ok {
			return fmt.Errorf("export: record %s/%s/%d holds a value JSON cannot carry (NaN, infinity or a year outside 0-9999)",
				recs[i].Arm, recs[i].TaskID, recs[i].Repeat)
		}
		if _, err := bw.Write(append(buf, '\n')); err != nil {
			return err
		}
	}
	return bw.Flush()
}
