package records

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// RecordsFile is the name of the records file inside a run directory.
const RecordsFile = "records.jsonl"

// Interchange CSV columns. Required columns must all be in the
// header; optional ones may be left out or left empty on a row.
var (
	csvRequired = []string{"arm", "task_id", "latency_ms", "outcome", "pass", "cost"}
	csvOptional = []string{"group", "repeat", "ttft_ms", "cache", "model", "correct", "attempts", "contract", "contract_ok", "leak", "unmeasured"}
)

// csvFigures maps each interchange CSV column that holds a figure a record
// can leave unmeasured (Figures) to that figure.
var csvFigures = map[string]string{
	"latency_ms": FigureLatency,
	"ttft_ms":    FigureTTFT,
	"pass":       FigureQuality,
	"correct":    FigureQuality,
	"cost":       FigureCost,
}

// CSVFigure is the figure the interchange CSV column col holds, "" for a
// column that holds none. A row whose unmeasured column names the figure
// has the column's cell empty, as crab export writes it, so that a
// spreadsheet summing the column adds no placeholder 0; crab reads the
// empty cell, required column or not, as the placeholder 0 or false.
func CSVFigure(col string) string { return csvFigures[col] }

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
func streamRecords(r io.Reader, name string, opt ReadOptions, emit func(rec *Record, line int) error) error {
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
	return readCSV(in, name, opt, emit)
}

// checkRecord validates the fields a JSONL record must get right.
// armNUL is why an arm name may not hold a NUL byte.
const armNUL = "holds a NUL byte: an arm name is text"

// CheckRecord checks one record as crab's reader does, naming file and
// line in the error: importers check what they build from another tool's
// file before anything reads it back.
func CheckRecord(rec *Record, name string, line int) error { return checkRecord(rec, name, line) }

func checkRecord(rec *Record, name string, line int) error {
	bad := func(field, format string, args ...any) error {
		return &InputError{File: name, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case strings.TrimSpace(rec.Arm) == "":
		return bad("arm", "required and empty")
	case strings.IndexByte(rec.Arm, 0) >= 0:
		// Reports escape other control characters of a name; a NUL ends it
		// early in every C string and file name it reaches.
		return bad("arm", "%s", armNUL)
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
	if _, err := MissingOf(rec.Unmeasured); err != nil {
		return bad("unmeasured", "%s", err.Error())
	}
	if rec.Pass && !rec.Measured(FigureQuality) {
		return bad("pass", "true on a request whose quality is unmeasured")
	}
	if msg := latencyUnmeasuredFault(rec); msg != "" {
		return bad("unmeasured", "%s", msg)
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

// emptyRequired records the error of a required cell left empty: one
// that holds a figure says when it may be.
func (p *csvRow) emptyRequired(field string) {
	msg := "required and empty"
	if f := CSVFigure(field); f != "" {
		msg += fmt.Sprintf(" (it may be empty only when the row's unmeasured column names %q)", f)
	}
	p.setErr(field, msg)
}

func (p *csvRow) num(field string, required bool) float64 {
	s := p.str(field)
	if s == "" {
		if required {
			p.emptyRequired(field)
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
			p.emptyRequired(field)
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
