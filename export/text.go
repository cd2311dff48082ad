package export

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
)

// csvHeader is the interchange CSV header: the required columns, then
// every optional one crab's records can fill.
var csvHeader = []string{"arm", "task_id", "latency_ms", "outcome", "pass", "cost",
	"group", "repeat", "ttft_ms", "cache", "model", "correct", "attempts", "contract", "contract_ok"}

// csvWriter writes interchange CSV. Warm-up requests are left out: the
// format has no column to mark them, and a reader would count them.
type csvWriter struct {
	cw     *csv.Writer
	row    []string
	header bool // written
	// unmeasured: the header has the unmeasured column, because some
	// record names figures it did not measure (imported records, a cost
	// of a model without a price): the caller said so (SomeUnmeasured),
	// or the first record does. Records that measure everything keep the
	// format's columns.
	unmeasured bool
}

func newCSVWriter(w io.Writer, o options) RecordWriter {
	return &csvWriter{cw: csv.NewWriter(w), row: make([]string, len(csvHeader)), unmeasured: o.someUnmeasured}
}

func (c *csvWriter) writeHeader(first *records.Record) error {
	if c.header {
		return nil
	}
	c.header = true
	if c.unmeasured || first != nil && len(first.Unmeasured) > 0 {
		c.unmeasured = true
		return c.cw.Write(append(slices.Clone(csvHeader), "unmeasured"))
	}
	return c.cw.Write(csvHeader)
}

func (c *csvWriter) Write(r *records.Record) error {
	if err := c.writeHeader(r); err != nil {
		return err
	}
	if r.Warmup {
		return nil
	}
	if len(r.Unmeasured) > 0 && !c.unmeasured {
		// The header has no unmeasured column, so the row could not say
		// which of its figures are missing: a placeholder would read back
		// as measured, an empty cell as bad input.
		return fmt.Errorf("export: record %s/%s/%d does not measure %s, but the records before it measured everything: export it from a file rather than stdin, as jsonl, or apart",
			r.Arm, r.TaskID, r.Repeat, strings.Join(r.Unmeasured, ", "))
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	c.row = append(c.row[:0], r.Arm, r.TaskID, num(r.E2EMs), r.Outcome, strconv.FormatBool(r.Pass), num(r.Cost),
		r.Group, strconv.Itoa(r.Repeat), num(r.TTFTMs), r.Cache, r.Model, strconv.FormatBool(r.Correct),
		strconv.Itoa(r.Attempts), r.Contract, strconv.FormatBool(r.ContractOK))
	if c.unmeasured {
		// A figure the record did not measure is an empty cell, never its
		// placeholder 0 or false: a spreadsheet summing the column would
		// add it as measured. The unmeasured column says why it is empty.
		for i, h := range csvHeader {
			if f := records.CSVFigure(h); f != "" && !r.Measured(f) {
				c.row[i] = ""
			}
		}
		c.row = append(c.row, strings.Join(r.Unmeasured, " "))
	}
	return c.cw.Write(c.row)
}

func (c *csvWriter) Close() error {
	if err := c.writeHeader(nil); err != nil {
		return err
	}
	c.cw.Flush()
	return c.cw.Error()
}

// jsonlWriter writes records.jsonl, one object per line, as crab run
// writes them.
type jsonlWriter struct {
	bw  *bufio.Writer
	buf []byte
}

func newJSONLWriter(w io.Writer, _ options) RecordWriter { return &jsonlWriter{bw: bufio.NewWriter(w)} }

func (j *jsonlWriter) Write(rec *records.Record) error {
	var ok bool
	j.buf, ok = rec.AppendJSON(j.buf[:0])
	if !ok {
		return fmt.Errorf("export: record %s/%s/%d holds a value JSON cannot carry (NaN, infinity or a year outside 0-9999)",
			rec.Arm, rec.TaskID, rec.Repeat)
	}
	j.buf = append(j.buf, '\n')
	_, err := j.bw.Write(j.buf)
	return err
}

func (j *jsonlWriter) Close() error { return j.bw.Flush() }
