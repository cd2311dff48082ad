package records

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// RecordSet is records in the compact form statistics and charts need:
// per request only the figures Summarize reads (latencies, cost, outcome,
// flags), with arm, task, group, model, cache status and the other strings
// stored once (see Sym). Answer text, violations, error text and timestamps
// are never kept, so a RecordSet costs about 120 bytes per request, none of
// them pointers: a million-request run fits in a few hundred megabytes where
// full records would need several gigabytes.
type RecordSet struct {
	syms    *Symbols
	chunks  [][]Rec
	n       int
	warm    int
	seen    map[setKey]uint64 // duplicate check: file index << 32 | line
	files   []string
	runIDs  map[string]bool
	current int // index in files of the input being read
	torn    []*TornError
}

// Rec is one request in a RecordSet. Field names follow Record, so the
// statistics read the same names in both forms.
type Rec struct {
	Arm, TaskID, Group, Outcome, Cache, Leak, Model, Misroute, Contract Sym
	// Violation is the answer's first contract violation and GradeFail the
	// grade's failed check, each as "pointer: rule" (see RuleKey), for
	// naming what most answers got wrong.
	Violation, GradeFail Sym

	Repeat int

	E2EMs, TTFTMs, LagMs, QueueMs                float64
	Cost, ShadowCost, EscalationCost, RouteScore float64
	GradeCost, GradeMs                           float64

	TokensOut, Attempts int32

	Warmup, ContractOK, Pass, Routed, Escalated, ScopeMismatch, SlotWait, GradeError bool
	// Semantic is a hit of a semantic cache (it carries a similarity);
	// FalseHit one that served another task's answer wrongly.
	Semantic, FalseHit bool
	// Timed is set when the record carries an intended send time (a run's
	// records; interchange CSV has none).
	Timed bool
	// At is the intended send time in Unix nanoseconds (0 when not Timed),
	// for finding failures clustered in time.
	At int64
}

// Sym stands for a string in its RecordSet's table of the distinct strings
// its records carry (arm and task ids, groups, models, cache and outcome
// names...): four bytes and no pointer per field, so the collector never
// scans the records of a large set.
type Sym uint32

// Symbols is a RecordSet's string table. A set is filled by one goroutine
// at a time, so the table needs no lock.
type Symbols struct {
	ids   map[string]Sym
	names []string
}

func newSymbols() *Symbols { return &Symbols{ids: map[string]Sym{}} }

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

// Str is the string y stands for.
func (t *Symbols) Str(y Sym) string { return t.names[y] }

type setKey struct {
	arm, task uint32
	repeat    int64
}

const setChunk = 4096

// SummarizeGCPercent is the garbage collector target (GOGC) commands set
// while they read and summarise records: a RecordSet holds no pointers, so
// collecting more often costs little time and keeps peak memory near what
// is live (about 130 bytes per record plus the duplicate check while
// reading) instead of twice that. The library never changes the setting
// itself; the process owner does (see run.go and report.go).
const SummarizeGCPercent = 20

// newRecordSet returns an empty set.
func newRecordSet() *RecordSet {
	return &RecordSet{seen: map[setKey]uint64{}, runIDs: map[string]bool{}, files: []string{""}, syms: newSymbols()}
}

// Len is the number of records in the set, warm-up ones included; 0 for a
// nil set.
func (s *RecordSet) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Symbols is the set's string table, which every Sym of its records
// stands in.
func (s *RecordSet) Symbols() *Symbols { return s.syms }

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

// add stores the compact form of r. When another record already has r's
// (arm, task_id, repeat), it stores nothing and returns that record's file
// index and line.
func (s *RecordSet) add(r *Record, line int) (dupFile int, dupLine int, dup bool) {
	k := setKey{uint32(s.syms.of(r.Arm)), uint32(s.syms.of(r.TaskID)), int64(r.Repeat)}
	if prev, ok := s.seen[k]; ok {
		return int(prev >> 32), int(uint32(prev)), true
	}
	s.seen[k] = uint64(s.current)<<32 | uint64(uint32(line))
	s.push(r)
	return 0, 0, false
}

// unixNano is t in Unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// push stores the compact form of r without the duplicate check.
func (s *RecordSet) push(r *Record) {
	if len(s.chunks) == 0 || len(s.chunks[len(s.chunks)-1]) == setChunk {
		s.chunks = append(s.chunks, make([]Rec, 0, setChunk))
	}
	c := &s.chunks[len(s.chunks)-1]
	*c = append(*c, Rec{
		Arm: s.syms.of(r.Arm), TaskID: s.syms.of(r.TaskID), Group: s.syms.of(r.Group), Outcome: s.syms.of(r.Outcome),
		Cache: s.syms.of(r.Cache), Leak: s.syms.of(r.Leak), Model: s.syms.of(r.Model), Misroute: s.syms.of(r.Misroute),
		Contract: s.syms.of(r.Contract), Violation: s.syms.of(firstRuleKey(r.Violations)), GradeFail: s.syms.of(RuleKey(r.GradeReason)),
		Repeat: r.Repeat, GradeCost: r.GradeCost, GradeMs: r.GradeMs, GradeError: r.GradeError != "", Semantic: r.Similarity != 0, FalseHit: r.FalseHit,
		E2EMs: r.E2EMs, TTFTMs: r.TTFTMs, LagMs: r.LagMs, QueueMs: r.QueueMs,
		Cost: r.Cost, ShadowCost: r.ShadowCost, EscalationCost: r.EscalationCost, RouteScore: r.RouteScore,
		TokensOut: int32(r.TokensOut), Attempts: int32(r.Attempts),
		Warmup: r.Warmup, ContractOK: r.ContractOK, Pass: r.Pass, Routed: r.Routed, Escalated: r.Escalated,
		ScopeMismatch: r.ScopeMismatch, SlotWait: r.SlotWait, Timed: !r.IntendedAt.IsZero(), At: unixNano(r.IntendedAt),
	})
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
	return readInto(paths, stdin, nil)
}

// ReadAll reads full records from paths exactly as ReadSet does (the same
// inputs, the same strict decoding and duplicate check, a torn last line
// kept apart in the set's Torn), for commands that need every field of a
// record, such as an export. It holds every record in memory; statistics
// read the compact ReadSet instead.
func ReadAll(paths []string, stdin io.Reader) ([]Record, *RecordSet, error) {
	var all []Record
	set, err := readInto(paths, stdin, func(rec *Record) { all = append(all, rec.detached()) })
	if err != nil {
		return nil, nil, err
	}
	return all, set, nil
}

// detached is a copy of rec whose strings share no memory with rec's: a
// reader hands out records whose strings alias its buffers, which it
// reuses.
func (rec *Record) detached() Record {
	c := *rec
	for _, p := range [...]*string{&c.RunID, &c.Arm, &c.Shard, &c.TaskID, &c.Group, &c.Difficulty, &c.Tenant, &c.Permission,
		&c.Lang, &c.DocVersion, &c.Outcome, &c.Error, &c.Cache, &c.Leak, &c.CacheOrigin, &c.Model, &c.Misroute,
		&c.Contract, &c.Category, &c.Expected, &c.GradeReason, &c.GradeError, &c.Output} {
		*p = strings.Clone(*p)
	}
	if c.Violations != nil {
		c.Violations = make([]string, len(rec.Violations))
		for i, v := range rec.Violations {
			c.Violations[i] = strings.Clone(v)
		}
	}
	return c
}

// readInto is ReadSet; keep, if set, also gets every record read.
func readInto(paths []string, stdin io.Reader, keep func(*Record)) (*RecordSet, error) {
	if len(paths) == 0 {
		return nil, &InputError{File: "-", Msg: "no input: name a run directory, a records.jsonl, a CSV file, or - for stdin"}
	}
	s := newRecordSet()
	usedStdin := false
	for _, p := range paths {
		r, name, closeInput, err := openInput(p, stdin, &usedStdin)
		if err != nil {
			return nil, err
		}
		defer closeInput()
		s.files = append(s.files, name)
		s.current = len(s.files) - 1
		err = streamRecords(r, name, func(rec *Record, line int) error {
			file, prev, dup := s.add(rec, line)
			if !dup {
				if keep != nil {
					keep(rec)
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
	s.seen = nil // the duplicate check is done: free it for the statistics
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
