package records

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"unsafe"
)

// RecordsFile is the name of the records file inside a run directory.
const RecordsFile = "records.jsonl"

// Interchange CSV columns. Required columns must all be in the
// header; optional ones may be left out or left empty on a row.
var (
	csvRequired = []string{"arm", "task_id", "latency_ms", "outcome", "pass", "cost"}
	csvOptional = []string{"group", "repeat", "ttft_ms", "cache", "model", "correct", "attempts", "contract", "contract_ok", "leak"}
)

// Outcomes lists every outcome a record may have, in the order messages
// name them.
var Outcomes = []string{OutcomeOK, OutcomeError, OutcomeTimeout, OutcomeContractFail, OutcomeCancelled}

var validOutcomes = map[string]bool{
	OutcomeOK: true, OutcomeError: true, OutcomeTimeout: true, OutcomeContractFail: true, OutcomeCancelled: true,
}

var validCache = map[string]bool{"": true, "hit": true, "miss": true, "bypass": true}

var validMisroute = map[string]bool{"": true, MisrouteUnder: true, MisrouteOver: true, MisrouteHopeless: true}

// recordKey identifies a request: no two records may share one.
type recordKey struct {
	arm, task string
	repeat    int
}

func (k recordKey) String() string {
	return fmt.Sprintf("(arm %q, task_id %q, repeat %d)", k.arm, k.task, k.repeat)
}

func keyOf(r *Record) recordKey { return recordKey{r.Arm, r.TaskID, r.Repeat} }

// openInput opens one input: "-" is stdin (at most once: *usedStdin
// tracks it), a directory is its records.jsonl, anything else a file. It
// returns the name messages use and a function closing what it opened.
func openInput(p string, stdin io.Reader, usedStdin *bool) (io.Reader, string, func(), error) {
	if p == "-" {
		if *usedStdin {
			return nil, "-", nil, &InputError{File: "-", Msg: "stdin named more than once"}
		}
		*usedStdin = true
		if stdin == nil {
			return nil, "<stdin>", nil, &InputError{File: "<stdin>", Msg: "no standard input to read"}
		}
		return stdin, "<stdin>", func() {}, nil
	}
	name := p
	st, err := os.Stat(p)
	if err != nil {
		return nil, name, nil, &InputError{File: name, Msg: "cannot read: " + errText(err)}
	}
	if st.IsDir() {
		name = filepath.Join(p, RecordsFile)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, name, nil, &InputError{File: name, Msg: "cannot read: " + errText(err)}
	}
	return f, name, func() { f.Close() }, nil
}

// streamRecords detects the format and hands each checked record, with the
// line it came from, to emit; the record is reused after emit returns.
// Duplicates are emit's to find.
func streamRecords(r io.Reader, name string, emit func(rec *Record, line int) error) error {
	br := bufio.NewReader(r)
	// Skip a UTF-8 byte order mark (spreadsheet exports) and leading blanks,
	// keeping the blanks so line numbers stay right.
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3)
	}
	var lead []byte
	first := byte(0)
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return &InputError{File: name, Msg: "no records"}
		}
		if err != nil {
			return &InputError{File: name, Msg: "read error: " + err.Error()}
		}
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			lead = append(lead, c)
			continue
		}
		first = c
		_ = br.UnreadByte()
		break
	}
	in := io.MultiReader(bytes.NewReader(lead), br)
	if first == '{' {
		return readJSONL(in, name, emit)
	}
	return readCSV(in, name, emit)
}

// readJSONL reads records.jsonl, one strict JSON object per line.
func readJSONL(r io.Reader, name string, emit func(*Record, int) error) error {
	// Lines are decoded in batches by one worker per CPU (JSON decoding is
	// most of the time a large report takes) and handed to emit in file
	// order, so the first fault reported is the first in the file, as with
	// one reader. A batch's lines are copied into one block, which the
	// decoded strings alias: a block is reused only once emit has seen
	// every record of its batch (emit's record is valid only during the
	// call, as for CSV).
	type batch struct {
		block  []byte
		ends   []int // ends[i] is where line i ends in block
		lines  []int
		recs   []Record
		bad    int   // index of the first line at fault, or -1
		err    error // its error
		syntax bool  // err is a JSON syntax error (a torn line looks like one)
		done   chan struct{}
	}
	const batchLines, batchBytes = 512, 1 << 20
	workers := max(1, runtime.GOMAXPROCS(0))
	free := make(chan *batch, 4*workers+2) // emitted batches, for reuse
	newBatch := func() *batch {
		select {
		case b := <-free:
			b.block, b.ends, b.lines = b.block[:0], b.ends[:0], b.lines[:0]
			b.bad, b.err, b.syntax, b.done = -1, nil, false, make(chan struct{})
			return b
		default:
			return &batch{block: make([]byte, 0, batchBytes), bad: -1, done: make(chan struct{})}
		}
	}
	work := make(chan *batch, 2*workers)
	ordered := make(chan *batch, 2*workers)
	stop := make(chan struct{})
	defer close(stop)
	var (
		scanErr     error
		lastLine    int
		lastContent int // the last line that is not blank
	)
	go func() {
		defer close(ordered)
		defer close(work)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
		line := 0
		b := newBatch()
		send := func() bool {
			select {
			case work <- b:
			case <-stop:
				return false
			}
			select {
			case ordered <- b:
			case <-stop:
				return false
			}
			b = newBatch()
			return true
		}
		for sc.Scan() {
			line++
			raw := bytes.TrimSpace(sc.Bytes())
			if len(raw) == 0 {
				continue
			}
			b.block = append(b.block, raw...)
			b.ends = append(b.ends, len(b.block))
			b.lines = append(b.lines, line)
			lastContent = line
			if (len(b.lines) == batchLines || len(b.block) >= batchBytes) && !send() {
				return
			}
		}
		scanErr, lastLine = sc.Err(), line
		if len(b.lines) > 0 {
			send()
		}
	}()
	for range workers {
		go func() {
			for b := range work {
				if cap(b.recs) < len(b.lines) {
					b.recs = make([]Record, len(b.lines))
				}
				b.recs = b.recs[:len(b.lines)]
				text := unsafe.String(unsafe.SliceData(b.block), len(b.block))
				start := 0
				for i, end := range b.ends {
					if err := decodeLine(text[start:end], b.block[start:end:end], &b.recs[i]); err != nil {
						b.bad, b.err = i, JSONLineError(name, b.lines[i], err)
						var se *json.SyntaxError
						b.syntax = errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF)
						break
					}
					if err := checkRecord(&b.recs[i], name, b.lines[i]); err != nil {
						b.bad, b.err = i, err
						break
					}
					start = end
				}
				close(b.done)
			}
		}()
	}
	n := 0
	for b := range ordered {
		<-b.done
		for i := range b.recs {
			if i == b.bad {
				// A syntax error on the last line with content is a torn
				// write: the process died mid-record. Every complete line
				// before it counts; the caller is told with a *TornError.
				torn := b.syntax && i == len(b.recs)-1
				for rest := range ordered {
					<-rest.done
					torn = torn && len(rest.lines) == 0
				}
				if torn && b.lines[i] == lastContent && n > 0 {
					return &TornError{File: name, Line: b.lines[i], Err: b.err}
				}
				return b.err
			}
			if err := emit(&b.recs[i], b.lines[i]); err != nil {
				return err
			}
			n++
		}
		select {
		case free <- b:
		default:
		}
	}
	if scanErr != nil {
		return &InputError{File: name, Line: lastLine + 1, Msg: scanErr.Error()}
	}
	if n == 0 {
		return &InputError{File: name, Msg: "no records"}
	}
	return nil
}

// checkRecord validates the fields a JSONL record must get right.
func checkRecord(rec *Record, name string, line int) error {
	bad := func(field, format string, args ...any) error {
		return &InputError{File: name, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case strings.TrimSpace(rec.Arm) == "":
		return bad("arm", "required and empty")
	case strings.TrimSpace(rec.TaskID) == "":
		return bad("task_id", "required and empty")
	case !validOutcomes[rec.Outcome]:
		return bad("outcome", "unknown outcome %q (want ok, error, timeout, contract_fail or cancelled)", rec.Outcome)
	case rec.Repeat < 0:
		return bad("repeat", "must not be negative, got %d", rec.Repeat)
	case rec.E2EMs < 0:
		return bad("e2e_ms", "must not be negative, got %v", rec.E2EMs)
	case rec.TTFTMs < 0:
		return bad("ttft_ms", "must not be negative, got %v", rec.TTFTMs)
	case rec.Cost < 0:
		return bad("cost", "must not be negative, got %v", rec.Cost)
	case rec.ShadowCost < 0:
		return bad("shadow_cost", "must not be negative, got %v", rec.ShadowCost)
	case rec.Attempts < 0:
		return bad("attempts", "must not be negative, got %d", rec.Attempts)
	case !validCache[rec.Cache]:
		return bad("cache", "unknown cache status %q (want hit, miss, bypass or empty)", rec.Cache)
	case !validMisroute[rec.Misroute]:
		return bad("misroute", "unknown misroute %q (want under, over, hopeless or empty)", rec.Misroute)
	case rec.Pass && rec.Outcome != OutcomeOK:
		return bad("pass", "true on a request whose outcome is %s: only an ok request can pass", rec.Outcome)
	}
	return nil
}

// readCSV reads interchange CSV.
func readCSV(r io.Reader, name string, emit func(*Record, int) error) error {
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
	col := map[string]int{}
	known := map[string]bool{}
	for _, c := range csvRequired {
		known[c] = true
	}
	for _, c := range csvOptional {
		known[c] = true
	}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if !known[h] {
			return &InputError{File: name, Line: headerLine, Field: h,
				Msg: "unknown column (want " + strings.Join(csvRequired, ",") + " and optionally " + strings.Join(csvOptional, ",") + ")"}
		}
		if _, dup := col[h]; dup {
			return &InputError{File: name, Line: headerLine, Field: h, Msg: "column appears twice"}
		}
		col[h] = i
	}
	for _, c := range csvRequired {
		if _, ok := col[c]; !ok {
			return &InputError{File: name, Line: headerLine, Field: c, Msg: "required column missing"}
		}
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
		p := csvRow{name: name, cr: cr, col: col, fields: fields}
		rec := Record{Seq: row}
		rec.Arm = p.str("arm")
		rec.TaskID = p.str("task_id")
		rec.Group = p.str("group")
		rec.Model = p.str("model")
		rec.Contract = p.str("contract")
		rec.Outcome = p.str("outcome")
		rec.Cache = strings.ToLower(p.str("cache"))
		// A hit is checked for leaks only when the export says which
		// scope its answer was built for: a leak column (the leak's kind,
		// empty for none). Without one, crab cannot tell, and says so.
		if _, ok := col["leak"]; ok {
			rec.Leak = p.str("leak")
		} else if rec.Cache == "hit" {
			rec.Leak = LeakUnchecked
		}
		rec.E2EMs = p.num("latency_ms", true)
		rec.Cost = p.num("cost", true)
		rec.TTFTMs = p.num("ttft_ms", false)
		rec.Pass = p.boolean("pass", true)
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
			return p.err
		}
		switch {
		case rec.Arm == "":
			return p.fail("arm", "required and empty")
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

// csvError turns an encoding/csv error into an InputError.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = "wrong number of fields (the header decides how many)"
		}
		return &InputError{File: name, Line: pe.Line, Msg: "invalid CSV: " + msg}
	}
	return &InputError{File: name, Msg: "read error: " + err.Error()}
}

// csvRow parses the cells of one CSV row, keeping the first error.
type csvRow struct {
	name   string
	cr     *csv.Reader
	col    map[string]int
	fields []string
	err    error
}

func (p *csvRow) fail(field, msg string) error {
	line := 0
	if i, ok := p.col[field]; ok {
		line, _ = p.cr.FieldPos(i)
	} else {
		line, _ = p.cr.FieldPos(0)
	}
	return &InputError{File: p.name, Line: line, Field: field, Msg: msg}
}

func (p *csvRow) str(field string) string {
	i, ok := p.col[field]
	if !ok {
		return ""
	}
	return strings.TrimSpace(p.fields[i])
}

func (p *csvRow) setErr(field, msg string) {
	if p.err == nil {
		p.err = p.fail(field, msg)
	}
}

// csvNumber is the one grammar of numbers in interchange CSV: decimal
// digits with an optional fraction and an optional exponent (1000, 12.5,
// 0.25, 1e3, 1.5E-2), and a leading minus sign only to be refused as
// negative. No plus sign, digit separators (1_000, 1,000), hexadecimal,
// Inf or NaN: strconv.ParseFloat alone would take some of them.
var csvNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// csvWhole is the grammar of whole numbers (repeat, attempts): digits only.
var csvWhole = regexp.MustCompile(`^[0-9]+$`)

// column is the 1-based column of field's cell in the current row.
func (p *csvRow) column(field string) int {
	if i, ok := p.col[field]; ok {
		_, c := p.cr.FieldPos(i)
		return c
	}
	return 0
}

func (p *csvRow) num(field string, required bool) float64 {
	s := p.str(field)
	if s == "" {
		if required {
			p.setErr(field, "required and empty")
		}
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if !csvNumber.MatchString(s) || err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.setErr(field, fmt.Sprintf("column %d: want a finite number (digits, an optional fraction and exponent: 1000, 12.5, 1e3), got %q", p.column(field), s))
		return 0
	}
	if v < 0 {
		p.setErr(field, fmt.Sprintf("must not be negative, got %q", s))
		return 0
	}
	return v
}

func (p *csvRow) integer(field string) int {
	s := p.str(field)
	if s == "" {
		return 0
	}
	v, err := strconv.Atoi(s)
	if !csvWhole.MatchString(s) || err != nil || v < 0 {
		p.setErr(field, fmt.Sprintf("column %d: want a whole number of 0 or more (digits only), got %q", p.column(field), s))
		return 0
	}
	return v
}

func (p *csvRow) boolean(field string, required bool) bool {
	s := strings.ToLower(p.str(field))
	switch s {
	case "true", "1":
		return true
	case "false", "0":
		return false
	case "":
		if required {
			p.setErr(field, "required and empty")
		}
		return false
	}
	p.setErr(field, fmt.Sprintf("want true, false, 1 or 0, got %q", p.str(field)))
	return false
}

// TornError reports a records file whose last line is cut short, as a
// process killed while writing leaves it. Readers keep every complete
// record before it; reports call such a run incomplete.
type TornError struct {
	File string
	Line int
	Err  error // the line's decoding error, for readers that accept no torn file
}

func (e *TornError) Error() string {
	return fmt.Sprintf("%s:%d: the last line is cut short (the writing process died mid-record); the complete records before it are used", e.File, e.Line)
}
