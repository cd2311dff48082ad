package records

import (
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// readCSV reads interchange CSV.
func readCSV(r io.Reader, name string, opt ReadOptions, emit func(*Record, int) error) error {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return &InputError{File: name, Msg: "no records"}
	}
	if err != nil {
		return csvError(name, err)
	}
	headerLine, _ := cr.FieldPos(0)
	col, err := csvColumns(header, name, headerLine, opt)
	if err != nil {
		return err
	}
	n := 0
	for row := 0; ; row++ {
		fields, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return csvError(name, err)
		}
		line, _ := cr.FieldPos(0)
		for i, f := range fields {
			if !utf8.ValidString(f) {
				l, _ := cr.FieldPos(i)
				field := fmt.Sprintf("column %d", i+1) // the header row is reused by now
				for c, at := range col {
					if at == i {
						field = c
					}
				}
				return &InputError{File: name, Line: l, Field: field, Msg: "not valid UTF-8: crab keeps text as it is and does not guess an encoding; save the file as UTF-8"}
			}
		}
		p := csvRow{name: name, cr: cr, col: col, fields: fields}
		rec, err := p.record(row)
		if err != nil {
			return err
		}
		if err := emit(&rec, line); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return &InputError{File: name, Line: headerLine, Msg: "header but no records"}
	}
	return nil
}

// csvColumns maps each known column of header to its index. An unknown
// column is an error, or with opt.IgnoreUnknownColumns left out and named
// in one warning for the file.
func csvColumns(header []string, name string, headerLine int, opt ReadOptions) (map[string]int, error) {
	col := map[string]int{}
	known := map[string]bool{}
	for _, c := range csvRequired {
		known[c] = true
	}
	for _, c := range csvOptional {
		known[c] = true
	}
	var ignored []string
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if !known[h] && opt.IgnoreUnknownColumns {
			ignored = append(ignored, fmt.Sprintf("%q", h))
			continue
		}
		if !known[h] {
			return nil, &InputError{File: name, Line: headerLine, Field: h,
				Msg: "unknown column (want " + strings.Join(csvRequired, ",") + " and optionally " + strings.Join(csvOptional, ",") +
					"; --ignore-unknown-columns skips such columns)"}
		}
		if _, dup := col[h]; dup {
			return nil, &InputError{File: name, Line: headerLine, Field: h, Msg: "column appears twice"}
		}
		col[h] = i
	}
	for _, c := range csvRequired {
		if _, ok := col[c]; !ok {
			return nil, &InputError{File: name, Line: headerLine, Field: c, Msg: "required column missing"}
		}
	}
	if len(ignored) > 0 {
		noun := "columns"
		if len(ignored) == 1 {
			noun = "column"
		}
		opt.warn(fmt.Sprintf("%s:%d: ignored %d unknown %s: %s", name, headerLine, len(ignored), noun, strings.Join(ignored, ", ")))
	}
	return col, nil
}

// record is the row as a Record (Seq its row number), checked.
func (p *csvRow) record(row int) (Record, error) {
	rec := Record{Seq: row}
	rec.Arm = p.str("arm")
	rec.TaskID = p.str("task_id")
	rec.Group = p.str("group")
	rec.Model = p.str("model")
	rec.Contract = p.str("contract")
	rec.Outcome = p.str("outcome")
	rec.Cache = strings.ToLower(p.str("cache"))
	// A hit is checked for leaks only when the export says which scope
	// its answer was built for: a leak column (the leak's kind, empty for
	// none). Without one, crab cannot tell, and says so.
	if _, ok := p.col["leak"]; ok {
		rec.Leak = p.str("leak")
	} else if rec.Cache == "hit" {
		rec.Leak = LeakUnchecked
	}
	// unmeasured names the figures the row's source did not measure,
	// separated by spaces or commas ("cost quality"): their cells, in
	// required columns too, are empty (or hold a placeholder 0, as files
	// written before crab left them empty do), and read as the placeholder.
	rec.Unmeasured = strings.FieldsFunc(strings.ToLower(p.str("unmeasured")), func(r rune) bool { return r == ' ' || r == ',' })
	if len(rec.Unmeasured) == 0 {
		rec.Unmeasured = nil
	}
	rec.E2EMs = p.num("latency_ms", needed("latency_ms", &rec))
	rec.Cost = p.num("cost", needed("cost", &rec))
	rec.TTFTMs = p.num("ttft_ms", false)
	rec.Pass = p.boolean("pass", needed("pass", &rec))
	rec.Correct = p.boolean("correct", false)
	// Without a contract_ok value only a contract_fail outcome says the
	// contract was broken; with one, an ok row whose answer broke the
	// contract shows as a silent violation.
	rec.ContractOK = rec.Outcome != OutcomeContractFail
	if p.str("contract_ok") != "" {
		rec.ContractOK = p.boolean("contract_ok", false)
	}
	rec.Repeat = p.integer("repeat")
	rec.Attempts = p.integer("attempts")
	if p.err != nil {
		return rec, p.err
	}
	return rec, p.check(&rec)
}

// needed reports whether the required column field must hold a value on
// the row of rec, whose Unmeasured is read: not when the row names the
// figure the column holds as unmeasured.
func needed(field string, rec *Record) bool {
	f := CSVFigure(field)
	return f == "" || rec.Measured(f)
}

// check validates the fields a CSV row must get right.
func (p *csvRow) check(rec *Record) error {
	switch {
	case rec.Arm == "":
		return p.fail("arm", "required and empty")
	case strings.IndexByte(rec.Arm, 0) >= 0:
		return p.fail("arm", armNUL)
	case rec.TaskID == "":
		return p.fail("task_id", "required and empty")
	case !validOutcomes[rec.Outcome]:
		return p.fail("outcome", fmt.Sprintf("unknown outcome %q (want ok, error, timeout, contract_fail or cancelled)", rec.Outcome))
	case !validCache[rec.Cache]:
		return p.fail("cache", fmt.Sprintf("unknown cache status %q (want hit, miss, bypass or empty)", rec.Cache))
	case rec.Pass && rec.Outcome != OutcomeOK:
		return p.fail("pass", "true on a request whose outcome is "+rec.Outcome+": only an ok request can pass")
	case rec.Pass && !rec.ContractOK:
		return p.fail("pass", "true on a request whose answer broke the contract (contract_ok false): such an answer cannot pass")
	case rec.Outcome == OutcomeContractFail && rec.ContractOK:
		return p.fail("contract_ok", "true on a request whose outcome is contract_fail")
	}
	if _, err := MissingOf(rec.Unmeasured); err != nil {
		return p.fail("unmeasured", err.Error())
	}
	if rec.Pass && !rec.Measured(FigureQuality) {
		return p.fail("pass", "true on a request whose quality is unmeasured")
	}
	if msg := latencyUnmeasuredFault(rec); msg != "" {
		return p.fail("unmeasured", msg)
	}
	return nil
}
