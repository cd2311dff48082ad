package eval

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RecordSet is records in the compact form statistics and charts need:
// per request only the figures Summarize reads (latencies, cost, outcome,
// flags), with arm, task, group, model, cache status and the other strings
// stored once (see sym). Answer text, violations, error text and timestamps
// are never kept, so a RecordSet costs about 120 bytes per request, none of
// them pointers: a million-request run fits in a few hundred megabytes where
// full records would need several gigabytes.
type RecordSet struct {
	syms    *symbols
	chunks  [][]statRec
	n       int
	warm    int
	seen    map[setKey]uint64 // duplicate check: file index << 32 | line
	files   []string
	runIDs  map[string]bool
	current int // index in files of the input being read
	torn    []*TornError
}

// statRec is one request in a RecordSet. Field names follow Record, so the
// statistics read the same names in both forms.
type statRec struct {
	Arm, TaskID, Group, Outcome, Cache, Leak, Model, Misroute, Contract sym
	// Violation is the answer's first contract violation and GradeFail the
	// grade's failed check, each as "pointer: rule" (see ruleKey), for
	// naming what most answers got wrong.
	Violation, GradeFail sym

	Repeat int

	E2EMs, TTFTMs, LagMs, QueueMs                float64
	Cost, ShadowCost, EscalationCost, RouteScore float64
	GradeCost, GradeMs                           float64

	TokensOut, Attempts int32

	Warmup, ContractOK, Pass, Routed, Escalated, ScopeMismatch, SlotWait, GradeError bool
	// Timed is set when the record carries an intended send time (a run's
	// records; interchange CSV has none).
	Timed bool
	// At is the intended send time in Unix nanoseconds (0 when not Timed),
	// for finding failures clustered in time.
	At int64
}

// sym stands for a string in its RecordSet's table of the distinct strings
// its records carry (arm and task ids, groups, models, cache and outcome
// names...): four bytes and no pointer per field, so the collector never
// scans the records of a large set.
type sym uint32

// symbols is a RecordSet's string table. A set is filled by one goroutine
// at a time, so the table needs no lock.
type symbols struct {
	ids   map[string]sym
	names []string
}

func newSymbols() *symbols { return &symbols{ids: map[string]sym{}} }

// of returns the sym of v, adding v to the table if it is new.
func (t *symbols) of(v string) sym {
	if id, ok := t.ids[v]; ok {
		return id
	}
	v = strings.Clone(v)
	id := sym(len(t.names))
	t.names = append(t.names, v)
	t.ids[v] = id
	return id
}

// str is the string y stands for.
func (t *symbols) str(y sym) string { return t.names[y] }

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

// NewRecordSet returns an empty set.
func NewRecordSet() *RecordSet {
	return &RecordSet{seen: map[setKey]uint64{}, runIDs: map[string]bool{}, files: []string{""}, syms: newSymbols()}
}

// Len is the number of records in the set, warm-up ones included.
func (s *RecordSet) Len() int { return s.n }

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
		s.chunks = append(s.chunks, make([]statRec, 0, setChunk))
	}
	c := &s.chunks[len(s.chunks)-1]
	*c = append(*c, statRec{
		Arm: s.syms.of(r.Arm), TaskID: s.syms.of(r.TaskID), Group: s.syms.of(r.Group), Outcome: s.syms.of(r.Outcome),
		Cache: s.syms.of(r.Cache), Leak: s.syms.of(r.Leak), Model: s.syms.of(r.Model), Misroute: s.syms.of(r.Misroute),
		Contract: s.syms.of(r.Contract), Violation: s.syms.of(firstRuleKey(r.Violations)), GradeFail: s.syms.of(ruleKey(r.GradeReason)),
		Repeat: r.Repeat, GradeCost: r.GradeCost, GradeMs: r.GradeMs, GradeError: r.GradeError != "",
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

// each calls f on every record in the order they were added.
func (s *RecordSet) each(f func(r *statRec)) {
	for _, c := range s.chunks {
		for i := range c {
			f(&c[i])
		}
	}
}

// setOf converts records; a duplicate (arm, task_id, repeat) is an
// ErrDuplicateRecord error.
func setOf(recs []Record) (*RecordSet, error) {
	s := NewRecordSet()
	for i := range recs {
		if _, _, dup := s.add(&recs[i], i+1); dup {
			return nil, fmt.Errorf("%w: %s", ErrDuplicateRecord, keyOf(&recs[i]))
		}
	}
	return s, nil
}

// setPtrs converts two lists of records into one set (one string table)
// without the duplicate check, for ComparePaired, which takes any records.
func setPtrs(a, b []Record) (*RecordSet, []*statRec, []*statRec) {
	s := NewRecordSet()
	for i := range a {
		s.push(&a[i])
	}
	for i := range b {
		s.push(&b[i])
	}
	all := make([]*statRec, 0, len(a)+len(b))
	s.each(func(r *statRec) { all = append(all, r) })
	return s, all[:len(a)], all[len(a):]
}

// ReadSet reads and merges records from several inputs into the compact
// form, one record at a time, with the checks and errors of ReadPaths: each
// path is a run directory, a records.jsonl file or an interchange CSV file,
// "-" reads stdin (at most once), and every fault is an *InputError.
func ReadSet(paths []string, stdin io.Reader) (*RecordSet, error) {
	if len(paths) == 0 {
		return nil, &InputError{File: "-", Msg: "no input: name a run directory, a records.jsonl, a CSV file, or - for stdin"}
	}
	s := NewRecordSet()
	usedStdin := false
	for _, p := range paths {
		var r io.Reader
		name := p
		if p == "-" {
			if usedStdin {
				return nil, &InputError{File: "-", Msg: "stdin named more than once"}
			}
			usedStdin = true
			name = "<stdin>"
			if stdin == nil {
				return nil, &InputError{File: name, Msg: "no standard input to read"}
			}
			r = stdin
		} else {
			st, err := os.Stat(p)
			if err != nil {
				return nil, &InputError{File: name, Msg: "cannot read: " + errText(err)}
			}
			if st.IsDir() {
				name = filepath.Join(p, RecordsFile)
			}
			f, err := os.Open(name)
			if err != nil {
				return nil, &InputError{File: name, Msg: "cannot read: " + errText(err)}
			}
			defer f.Close()
			r = f
		}
		s.files = append(s.files, name)
		s.current = len(s.files) - 1
		err := streamRecords(r, name, func(rec *Record, line int) error {
			file, prev, dup := s.add(rec, line)
			if !dup {
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

// SummarizePaths reads the records of paths (see ReadSet) in compact form
// and summarizes them: Summarize without holding full records, for runs of
// any size. The set is returned for the charts of the HTML report.
func SummarizePaths(paths []string, stdin io.Reader, opt Options) (*Summary, *RecordSet, error) {
	set, err := ReadSet(paths, stdin)
	if err != nil {
		return nil, nil, err
	}
	sum, err := SummarizeSet(set, opt)
	if err != nil {
		return nil, nil, err
	}
	return sum, set, nil
}
