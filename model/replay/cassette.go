package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/crab-testbed/crab/internal/jsonl"
	"github.com/crab-testbed/crab/internal/jsonw"
	"github.com/crab-testbed/crab/model"
)

// FileError is a fault of a recording file at a line and a field; it
// wraps ErrRecording.
type FileError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *FileError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Msg
}

func (e *FileError) Unwrap() error { return ErrRecording }

// MaxLine is the longest line of a recording (16 MiB): one call's answer
// with its usage and timings. A longer line is an error naming it.
const MaxLine = jsonl.MaxLine

// loc is one call in the index: what identifies it, hashed, and where its
// line lies in the file.
type loc struct {
	call    uint64 // hashOf(model, key)
	task    uint64 // hashOf(task id)
	seed    int64
	off     int64
	n       uint32
	attempt int32
}

// Cassette is an open recording: its header and an index of its calls.
// Entries stay in the file and are read on demand, so a recording of
// millions of calls costs its index (40 bytes a call), not its
// answers.
// It is safe for concurrent use.
type Cassette struct {
	Path   string
	Header Header
	f      io.ReaderAt
	closer io.Closer
	index  []loc
	// tasks is hashOf(task id) of every task with a call, sorted, each
	// once; built by the first HasTask (a recording of the run's own task
	// set is never asked).
	tasks     []uint64
	tasksOnce sync.Once
	models    map[string]int
	bufs      sync.Pool
	closed    bool
}

// Open reads the header of the recording at path and indexes its calls.
// A fault of the file is a *FileError naming its line and field.
func Open(path string) (*Cassette, error) {
	f, err := jsonl.OpenRegular(path)
	if err != nil {
		return nil, &FileError{File: path, Msg: "cannot read: " + err.Error()}
	}
	c, err := index(path, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.closer = f
	return c, nil
}

// ids is what the index reads of a line.
type ids struct {
	Model   string `json:"model"`
	Key     string `json:"key"`
	TaskID  string `json:"task_id"`
	Seed    int64  `json:"seed"`
	Attempt int    `json:"attempt"`
	figures
}

func index(path string, f *os.File) (*Cassette, error) {
	c := &Cassette{Path: path, f: f, models: map[string]int{}}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	br := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var long []byte // a line longer than br's buffer, gathered
	line := 0
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole (ReadSlice's
			// b is br's buffer, overwritten by the next read), up to
			// MaxLine, so that a file of one endless line — a sparse
			// gigabyte of zeros — costs MaxLine, not its size.
			long = append(long[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= MaxLine {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			if len(long) > MaxLine {
				return nil, &FileError{File: path, Line: line + 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxLine)}
			}
			b = long
		}
		if len(b) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, &FileError{File: path, Line: line + 1, Msg: err.Error()}
		}
		line++
		n := len(b)
		body := bytes.TrimSpace(b)
		if line == 1 {
			if err := c.readHeader(body); err != nil {
				return nil, err
			}
		} else if len(body) > 0 {
			id, ok := leanIDs(body) // aliases body: hashed or cloned below, never kept
			if !ok {
				if err := json.Unmarshal(body, &id); err != nil {
					return nil, &FileError{File: path, Line: line, Msg: "not a JSON object: " + err.Error()}
				}
			}
			if id.Model == "" {
				return nil, &FileError{File: path, Line: line, Field: "model", Msg: "required"}
			}
			if id.TaskID == "" {
				return nil, &FileError{File: path, Line: line, Field: "task_id", Msg: "required"}
			}
			if field, msg := id.figures.check(); field != "" {
				return nil, &FileError{File: path, Line: line, Field: field, Msg: msg}
			}
			if len(c.index) == 1024 && size > 0 {
				// Room for the whole file at the lines' length so far, so
				// that the index is not copied as it grows (each copy
				// briefly holds the old and the new array).
				if want := int(size/(off/int64(line)+1)) * 11 / 10; want > cap(c.index) {
					c.index = slices.Grow(c.index, want-len(c.index))
				}
			}
			c.index = append(c.index, loc{call: hashOf(id.Model, id.Key), task: hashOf(id.TaskID), seed: id.Seed, off: off, n: uint32(n), attempt: int32(id.Attempt)})
			if _, seen := c.models[id.Model]; !seen {
				id.Model = strings.Clone(id.Model)
			}
			c.models[id.Model]++
		}
		off += int64(n)
		if err != nil {
			break
		}
	}
	if line == 0 {
		return nil, &FileError{File: path, Line: 1, Msg: "empty recording (want a header line)"}
	}
	c.index = slices.Clip(c.index)
	slices.SortFunc(c.index, func(a, b loc) int {
		switch {
		case a.call != b.call:
			return cmp(a.call, b.call)
		case a.task != b.task:
			return cmp(a.task, b.task)
		}
		return cmp(a.off, b.off)
	})
	return c, nil
}

// leanFloat reads a JSON number into *v as encoding/json would.
func leanFloat(l *jsonw.Lexer, v *float64) bool {
	n, ok := l.Number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(n, 64)
	*v = f
	return err == nil
}

// leanIDs reads the fields of ids from one line without encoding/json's
// allocations: the strings it returns alias line (valid while line is).
// It reports false for whatever it does not read exactly as encoding/json
// would — a key that needs case folding or unescaping, a repeated key, a
// null, a value of another type, trailing text — and the caller then
// decodes the line with encoding/json.
func leanIDs(line []byte) (id ids, ok bool) {
	l := jsonw.New(unsafe.String(unsafe.SliceData(line), len(line)), jsonw.PlainKeys)
	var seen uint16
	ok = l.Object(func(key string) bool {
		var ok bool
		switch key {
		case "model":
			id.Model, ok = l.String()
			return ok && jsonw.Once(&seen, 1)
		case "key":
			id.Key, ok = l.String()
			return ok && jsonw.Once(&seen, 2)
		case "task_id":
			id.TaskID, ok = l.String()
			return ok && jsonw.Once(&seen, 4)
		case "seed":
			var v int
			v, ok = l.Int()
			id.Seed = int64(v)
			return ok && jsonw.Once(&seen, 8)
		case "attempt":
			id.Attempt, ok = l.Int()
			return ok && jsonw.Once(&seen, 16)
		case "tokens_in":
			id.TokensIn, ok = l.Int()
			return ok && jsonw.Once(&seen, 32)
		case "tokens_out":
			id.TokensOut, ok = l.Int()
			return ok && jsonw.Once(&seen, 64)
		case "cost":
			return leanFloat(&l, &id.Cost) && jsonw.Once(&seen, 128)
		case "ttft_ms":
			return leanFloat(&l, &id.TTFTMs) && jsonw.Once(&seen, 256)
		case "model_ms":
			return leanFloat(&l, &id.ModelMs) && jsonw.Once(&seen, 512)
		}
		for _, f := range [...]string{"model", "key", "task_id", "seed", "attempt", "tokens_in", "tokens_out", "cost", "ttft_ms", "model_ms"} {
			if strings.EqualFold(key, f) {
				return false // encoding/json would read it as f
			}
		}
		return l.Skip(maxDepth)
	})
	return id, ok && l.End()
}

// maxDepth is encoding/json's limit on nesting.
const maxDepth = 10000

func cmp[T int64 | uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (c *Cassette) readHeader(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c.Header); err != nil {
		return &FileError{File: c.Path, Line: 1, Msg: "not a recording header: " + err.Error()}
	}
	if c.Header.Format != Format {
		return &FileError{File: c.Path, Line: 1, Field: "format", Msg: fmt.Sprintf("want %q, got %q", Format, c.Header.Format)}
	}
	return nil
}

// Close closes the file and drops the index, which a recording of
// millions of calls holds tens of megabytes of: a closed recording
// answers no call (ErrRecording). Close it after its last Lookup.
func (c *Cassette) Close() error {
	c.index, c.tasks, c.closed = nil, nil, true
	if c.closer == nil {
		return nil
	}
	return c.closer.Close()
}

// Calls is the number of calls recorded.
func (c *Cassette) Calls() int { return len(c.index) }

// Models are the recorded model names with their number of calls.
func (c *Cassette) Models() map[string]int { return c.models }

// HasTask reports whether the recording holds a call of the task id.
func (c *Cassette) HasTask(id string) bool {
	c.tasksOnce.Do(func() {
		c.tasks = make([]uint64, len(c.index))
		for i, l := range c.index {
			c.tasks[i] = l.task
		}
		slices.Sort(c.tasks)
		c.tasks = slices.Clip(slices.Compact(c.tasks))
	})
	_, ok := slices.BinarySearch(c.tasks, hashOf(id))
	return ok
}

// Lookup finds the recorded answer of the model name to req. Among the
// calls of the same model and Key it prefers, in this order, the same task,
// the same seed, the same attempt (else the latest earlier attempt), and
// the first line; a call of another task with the same Key is the same
// question and is used when the task's own is missing. Without any, an
// imported outcome of the task (Key "") answers. It returns
// ErrNotRecorded when nothing matches.
func (c *Cassette) Lookup(name string, req *model.Request) (*Entry, error) {
	if c.closed {
		return nil, fmt.Errorf("%w: %s is closed", ErrRecording, c.Path)
	}
	task := hashOf(req.TaskID)
	l, ok := c.best(hashOf(name, Key(req)), task, req, true)
	if !ok {
		if l, ok = c.best(hashOf(name, ""), task, req, false); !ok {
			return nil, ErrNotRecorded
		}
	}
	return c.read(l)
}

// best picks the call of hash call that matches req best (see Lookup);
// anyTask lets a call of another task answer when the task has none. The
// task's own calls are found by binary search on (call, task), so an
// imported recording (one call hash for every task) costs a lookup, not
// a scan.
func (c *Cassette) best(call, task uint64, req *model.Request, anyTask bool) (loc, bool) {
	i := c.first(call, task)
	if i < len(c.index) && c.index[i].call == call && c.index[i].task == task {
		return pick(c.index[i:], func(l loc) bool { return l.call == call && l.task == task }, req), true
	}
	if !anyTask {
		return loc{}, false
	}
	j := c.first(call, 0) // task hashes are unsigned: 0 sorts first
	if j >= len(c.index) || c.index[j].call != call {
		return loc{}, false
	}
	return pick(c.index[j:], func(l loc) bool { return l.call == call }, req), true
}

// first is the position of the first call in the index at or after
// (call, task) in its order: a binary search written out, since a replay
// makes two or three of them a call and slices.BinarySearchFunc's
// comparison through a function value cost twice as much.
func (c *Cassette) first(call, task uint64) int {
	lo, hi := 0, len(c.index)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l := &c.index[m]; l.call < call || (l.call == call && l.task < task) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// pick chooses among the leading calls of run that match: the same seed,
// then the same attempt (else the latest earlier one), then the first line.
func pick(run []loc, match func(loc) bool, req *model.Request) loc {
	top, topRank := run[0], -1
	for _, l := range run {
		if !match(l) {
			break
		}
		r := 0
		if l.seed == req.Seed {
			r += 4
		}
		switch a := int(l.attempt); {
		case a == req.Attempt:
			r += 2
		case a < req.Attempt:
			r++
		}
		if r > topRank || (r == topRank && r&3 == 1 && l.attempt > top.attempt) {
			top, topRank = l, r
		}
	}
	return top
}

func (c *Cassette) read(l loc) (*Entry, error) {
	bp, _ := c.bufs.Get().(*[]byte)
	if bp == nil || cap(*bp) < int(l.n) {
		b := make([]byte, l.n)
		bp = &b
	}
	b := (*bp)[:l.n]
	defer c.bufs.Put(bp)
	if _, err := c.f.ReadAt(b, l.off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s: %v", ErrRecording, c.Path, err)
	}
	e, ok := leanEntry(b)
	if !ok {
		e = Entry{}
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("%w: %s at byte %d: %v", ErrRecording, c.Path, l.off, err)
		}
	}
	return &e, nil
}

func sortedNames(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
