package records

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// RecordSet is records in the compact form statistics and charts need:
// per request only the figures Summarize reads (latencies, cost, tokens,
// the intended send time) and, shared by the many requests that have the
// same ones, its strings and flags (see Attrs). Answer text, violations,
// error text and the other timestamps are never kept, so a RecordSet costs
// about 72 bytes per request, none of them pointers: ten million requests
// fit in well under a gigabyte where full records would need tens.
type RecordSet struct {
	syms    *Symbols
	chunks  [][]Rec
	n       int
	warm    int
	dups    dupTable // while reading
	files   []string
	runIDs  map[string]bool
	current int // index in files of the input being read
	torn    []*TornError
	// keysOnly: the set keeps no records, only their keys for the
	// duplicate check (see ReadEach).
	keysOnly bool
}

// Rec is one request in a RecordSet. Field names follow Record; what many
// requests share (group, outcome, cache status, model, repeat, flags...)
// is in its Attrs, and the figures most requests leave zero in its Extras,
// both read through the set's Symbols.
type Rec struct {
	Arm, TaskID Sym
	Kind        Kind // the request's Attrs in the set's table
	TokensOut   int32
	extra       uint32 // 1 + the index of the request's Extras, 0 when they are all zero
	// Block is the switchback block the request was sent in (Record.Block;
	// 0 in other orders).
	Block int32

	E2EMs, TTFTMs, LagMs, QueueMs, Cost float64
	// At is the intended send time in Unix nanoseconds (0 when not Timed),
	// for finding failures clustered in time.
	At int64
}

// Kind stands for an Attrs in its RecordSet's table.
type Kind uint32

// Attrs is what a request shares with many others of its set: its strings
// but arm and task, its repeat, attempts and flags. Field names follow
// Record.
type Attrs struct {
	Group, Outcome, Cache, Leak, Model, Misroute, Contract Sym
	// Violation is the answer's first contract violation and GradeFail the
	// grade's failed check, each as "pointer: rule" (see RuleKey), for
	// naming what most answers got wrong.
	Violation, GradeFail Sym

	Repeat   int
	Attempts int32

	Warmup, ContractOK, Pass, Routed, RouteFallback, Escalated, ScopeMismatch, SlotWait, GradeError bool
	// Semantic is a hit of a semantic cache (it carries a similarity);
	// Similar one of those served by similarity alone, for a text other
	// than the entry's (similarity below 1: the cache reports exactly 1
	// for the same normalised text, a hit an exact cache would serve too);
	// FalseHit one that served another task's answer wrongly.
	Semantic, Similar, FalseHit bool
	// Timed is set when the record carries an intended send time (a run's
	// records; interchange CSV has none).
	Timed bool
	// BurnIn marks a request in its switchback block's burn-in
	// (Record.BurnIn).
	BurnIn bool
	// Unmeasured is the figures the record did not measure
	// (Record.Unmeasured).
	Unmeasured Missing
}

// Extras are the figures of a request that most requests leave zero
// (evaluation overhead, escalation, routing score), stored only for those
// that have one.
type Extras struct {
	ShadowCost, EscalationCost, RouteScore, GradeCost, GradeMs float64
}

// zero reports whether every figure of x is +0 (a -0 is kept as it is).
func (x Extras) zero() bool {
	return math.Float64bits(x.ShadowCost)|math.Float64bits(x.EscalationCost)|math.Float64bits(x.RouteScore)|
		math.Float64bits(x.GradeCost)|math.Float64bits(x.GradeMs) == 0
}

// Sym stands for a string in its RecordSet's table of the distinct strings
// its records carry (arm and task ids, groups, models, cache and outcome
// names...): four bytes and no pointer per field, so the collector never
// scans the records of a large set.
type Sym uint32

// Symbols is a RecordSet's tables: the distinct strings its records carry,
// the distinct Attrs, and the Extras of the requests that have any. A set
// is filled by one goroutine at a time, so the tables need no lock.
type Symbols struct {
	ids    map[string]Sym
	names  []string
	kinds  map[Attrs]Kind
	attrs  []Attrs
	extras []Extras
}

func newSymbols() *Symbols { return &Symbols{ids: map[string]Sym{}, kinds: map[Attrs]Kind{}} }

// of returns the Sym of v, adding v to the table if it is new.
func (t *Symbols) of(v string) Sym {
	if id, ok := t.ids[v]; ok {
		return id
	}
	v = strings.Clone(v)
	id := Sym(len(t.names))
	t.names = append(t.names, v)
	t.ids[v] = id
	return id
}

// Len is the number of distinct strings in the table: every Sym is below
// it.
func (t *Symbols) Len() int { return len(t.names) }

// Str is the string y stands for.
func (t *Symbols) Str(y Sym) string { return t.names[y] }

// Attrs is r's shared part; the pointer stays valid until a record is
// added to the set.
func (t *Symbols) Attrs(r *Rec) *Attrs { return &t.attrs[r.Kind] }

// Extras is r's rarely non-zero figures.
func (t *Symbols) Extras(r *Rec) Extras {
	if r.extra == 0 {
		return Extras{}
	}
	return t.extras[r.extra-1]
}

// kind returns the Kind of a, adding a to the table if it is new.
func (t *Symbols) kind(a *Attrs) Kind {
	if k, ok := t.kinds[*a]; ok {
		return k
	}
	k := Kind(len(t.attrs))
	t.attrs = append(t.attrs, *a)
	t.kinds[*a] = k
	return k
}

const setChunk = 4096

// SummarizeGCPercent is the garbage collector target (GOGC) commands set
// while they read and summarise records: a RecordSet holds no pointers, so
// collecting more often costs little time and keeps peak memory near what
// is live (about 72 bytes per record, plus the duplicate check's 7 to 13
// while reading, plus the statistics' pieces, within their budget)
// instead of twice that: at 5%, 10 million records peak about 70 MB
// lower than at 10%, for about the same CPU. The library never changes
// the setting itself;
// the process owner does (see run.go and report.go).
const SummarizeGCPercent = 5

// newRecordSet returns an empty set.
func newRecordSet() *RecordSet {
	return &RecordSet{runIDs: map[string]bool{}, files: []string{""}, syms: newSymbols()}
}

// Len is the number of records in the set, warm-up ones included; 0 for a
// nil set.
func (s *RecordSet) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Symbols is the set's tables, which every Sym, Kind and Extras of its
// records stands in; nil for a nil set.
func (s *RecordSet) Symbols() *Symbols {
	if s == nil {
		return nil
	}
	return s.syms
}

// Warmup is the number of warm-up records in the set.
func (s *RecordSet) Warmup() int { return s.warm }

// RunIDs lists the distinct non-empty run ids of the records, sorted.
func (s *RecordSet) RunIDs() []string {
	var ids []string
	for id := range s.runIDs {
		if id != "" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// Torn lists the inputs whose last line was cut short: the set holds
// every complete record before it, and the run they come from did not
// finish writing.
func (s *RecordSet) Torn() []*TornError { return s.torn }

// rec is the i-th record added.
func (s *RecordSet) rec(i int) *Rec { return &s.chunks[i/setChunk][i%setChunk] }

// add stores the compact form of r, read from line of the current input.
// When another record already has r's (arm, task_id, repeat), it stores
// nothing and returns that record's file index and line.
func (s *RecordSet) add(r *Record, line int) (dupFile int, dupLine int, dup bool) {
	c := s.compact(r)
	if prev, ok := s.dups.insert(s, &c); ok {
		file, line := s.dups.place(prev)
		return file, line, true
	}
	s.dups.addLine(s.n, line)
	if f := s.dups.files; len(f) == 0 || f[len(f)-1].file != s.current {
		s.dups.files = append(f, fileStart{s.current, s.n})
	}
	if s.keysOnly {
		s.dups.keys = append(s.dups.keys, dupKey{c.Arm, c.TaskID, s.syms.attrs[c.Kind].Repeat})
		s.n++
		return 0, 0, false
	}
	s.push(r, c)
	return 0, 0, false
}

// unixNano is t in Unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// compact is the Rec of r, adding its strings, Attrs and Extras to the
// tables.
func (s *RecordSet) compact(r *Record) Rec {
	t := s.syms
	a := Attrs{
		Group: t.of(r.Group), Outcome: t.of(r.Outcome), Cache: t.of(r.Cache), Leak: t.of(r.Leak), Model: t.of(r.Model),
		Misroute: t.of(r.Misroute), Contract: t.of(r.Contract), Violation: t.of(firstRuleKey(r.Violations)), GradeFail: t.of(RuleKey(r.GradeReason)),
		Repeat: r.Repeat, Attempts: int32(r.Attempts),
		Warmup: r.Warmup, ContractOK: r.ContractOK, Pass: r.Pass, Routed: r.Routed, RouteFallback: r.RouteFallback, Escalated: r.Escalated,
		ScopeMismatch: r.ScopeMismatch, SlotWait: r.SlotWait, GradeError: r.GradeError != "",
		Semantic: r.Similarity != 0, Similar: r.Similarity != 0 && r.Similarity < 1, FalseHit: r.FalseHit, Timed: !r.IntendedAt.IsZero(),
		BurnIn: r.BurnIn,
	}
	a.Unmeasured, _ = MissingOf(r.Unmeasured) // checked as the record was read
	return Rec{
		Arm: t.of(r.Arm), TaskID: t.of(r.TaskID), Kind: t.kind(&a), TokensOut: int32(r.TokensOut), Block: int32(r.Block),
		E2EMs: r.E2EMs, TTFTMs: r.TTFTMs, LagMs: r.LagMs, QueueMs: r.QueueMs, Cost: r.Cost, At: unixNano(r.IntendedAt),
	}
}

// push stores c, the compact form of r, without the duplicate check.
func (s *RecordSet) push(r *Record, c Rec) {
	if x := (Extras{r.ShadowCost, r.EscalationCost, r.RouteScore, r.GradeCost, r.GradeMs}); !x.zero() {
		s.syms.extras = append(s.syms.extras, x)
		c.extra = uint32(len(s.syms.extras))
	}
	if len(s.chunks) == 0 || len(s.chunks[len(s.chunks)-1]) == setChunk {
		s.chunks = append(s.chunks, make([]Rec, 0, setChunk))
	}
	last := &s.chunks[len(s.chunks)-1]
	*last = append(*last, c)
	if r.RunID != "" && !s.runIDs[r.RunID] {
		s.runIDs[strings.Clone(r.RunID)] = true
	}
	if r.Warmup {
		s.warm++
	}
	s.n++
}

// Each calls f on every record in the order they were added; a nil set
// has none.
func (s *RecordSet) Each(f func(r *Rec)) {
	if s == nil {
		return
	}
	for _, c := range s.chunks {
		for i := range c {
			f(&c[i])
		}
	}
}

// SetOf builds the set of records held in memory by writing them as
// records.jsonl and reading them back through ReadSet, so they meet every
// check a command's input meets.
func SetOf(recs []Record) (*RecordSet, error) {
	var buf bytes.Buffer
	w := JSONLWriter(&buf)
	for _, r := range recs {
		if err := w(r); err != nil {
			return nil, err
		}
	}
	return ReadSet([]string{"-"}, &buf)
}

// ReadSet reads and merges records from several inputs into the compact
// form, one record at a time. Each path is a run directory (its
// records.jsonl is read), a records.jsonl file or an interchange CSV file
// (the format is told from the first byte); "-" reads stdin (at most
// once). The same (arm, task_id, repeat) twice, in one input or two, is an
// error naming both places. Every fault is an *InputError, except that a
// records.jsonl whose last line is cut short keeps the records before it
// (see Torn).
//
// records.jsonl is decoded strictly: an unknown field is an error. In CSV,
// latency_ms becomes E2EMs. The optional contract_ok column says whether
// the answer met the contract; left out or empty it is taken as outcome !=
// contract_fail, so an answer that broke the contract but was delivered as
// ok shows (as a silent violation) only where contract_ok says so. The
// optional contract column names the contract (its hash or any other
// identifier) the answers were validated against.
func ReadSet(paths []string, stdin io.Reader) (*RecordSet, error) {
	return ReadOptions{}.ReadSet(paths, stdin)
}

// ReadOptions change how the readers take their inputs; the zero value is
// what ReadSet, ReadAll and ReadEach do.
type ReadOptions struct {
	// IgnoreUnknownColumns skips interchange CSV columns crab does not
	// know (a spend log's request_id, say) instead of refusing the file;
	// each file's skipped columns are named in one line to Warn. Known
	// columns are read and checked as always.
	IgnoreUnknownColumns bool
	// Warn gets each warning, one line without a newline; nil writes
	// "crab: warning: " and the line to standard error.
	Warn func(line string)
}

func (o ReadOptions) warn(line string) {
	if o.Warn != nil {
		o.Warn(line)
		return
	}
	fmt.Fprintln(os.Stderr, "crab: warning: "+line)
}

// ReadSet is the package's ReadSet with these options.
func (o ReadOptions) ReadSet(paths []string, stdin io.Reader) (*RecordSet, error) {
	return o.readInto(paths, stdin, false, nil)
}

// ReadAll reads full records from paths exactly as ReadSet does (the same
// inputs, the same strict decoding and duplicate check, a torn last line
// kept apart in the set's Torn), for commands that need every field of a
// record, such as an export. It holds every record in memory; statistics
// read the compact ReadSet instead.
func ReadAll(paths []string, stdin io.Reader) ([]Record, *RecordSet, error) {
	var all []Record
	set, err := ReadOptions{}.readInto(paths, stdin, false, func(rec *Record) error {
		all = append(all, rec.Clone())
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return all, set, nil
}

// ReadEach reads full records from paths as ReadAll does (the same inputs,
// the same strict decoding and duplicate check), handing each in turn to
// each instead of keeping them: memory stays at the duplicate check's few
// tens of bytes a record, whatever the records hold. The record is valid
// only during the call (its strings share the reader's buffers; Clone
// keeps one). An error from each stops the reading and is returned as
// is. A records.jsonl whose last line is cut short yields the records
// before it and a *TornError in torn.
//
// Records are handed out as they are read: a fault found later (a bad
// line, a duplicate) comes after each has seen the records before it, so
// a caller that must write nothing on bad input writes somewhere it can
// discard.
func ReadEach(paths []string, stdin io.Reader, each func(rec *Record) error) (torn []*TornError, err error) {
	return ReadOptions{}.ReadEach(paths, stdin, each)
}

// ReadEach is the package's ReadEach with these options.
func (o ReadOptions) ReadEach(paths []string, stdin io.Reader, each func(rec *Record) error) (torn []*TornError, err error) {
	set, err := o.readInto(paths, stdin, true, each)
	if err != nil {
		return nil, err
	}
	return set.torn, nil
}

// readInto is ReadSet; keep, if set, also gets every record read. With
// keysOnly the set keeps no compact records, only what the duplicate
// check needs while reading.
func (o ReadOptions) readInto(paths []string, stdin io.Reader, keysOnly bool, keep func(*Record) error) (*RecordSet, error) {
	if len(paths) == 0 {
		return nil, &InputError{File: "-", Msg: "no input: name a run directory, a records.jsonl, a CSV file, or - for stdin"}
	}
	s := newRecordSet()
	s.keysOnly = keysOnly
	usedStdin := false
	for _, p := range paths {
		r, name, closeInput, err := openInput(p, stdin, &usedStdin)
		if err != nil {
			return nil, err
		}
		defer closeInput()
		s.files = append(s.files, name)
		s.current = len(s.files) - 1
		err = streamRecords(r, name, o, func(rec *Record, line int) error {
			file, prev, dup := s.add(rec, line)
			if !dup {
				if keep != nil {
					return keep(rec)
				}
				return nil
			}
			if file == s.current {
				return &InputError{File: name, Line: line, Field: "task_id", Msg: fmt.Sprintf("duplicate record %s, first on line %d", keyOf(rec), prev)}
			}
			return &InputError{File: name, Line: line, Field: "task_id",
				Msg: fmt.Sprintf("duplicate record %s, also in %s:%d", keyOf(rec), s.files[file], prev)}
		})
		var te *TornError
		if errors.As(err, &te) {
			s.torn = append(s.torn, te)
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	s.dups = dupTable{} // the duplicate check is done: free it for the statistics
	return s, nil
}

// RuleKey is the "pointer: rule" head of a violation or a grade reason
// ("/evidence: required: missing ..." → "/evidence: required"), the part
// answers share when they fail the same way; "" for "".
func RuleKey(s string) string {
	i := strings.Index(s, ": ")
	if i < 0 {
		return s
	}
	j := strings.Index(s[i+2:], ": ")
	if j < 0 {
		return s
	}
	return s[:i+2+j]
}

func firstRuleKey(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return RuleKey(vs[0])
}
