package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"unicode/utf8"
	"unsafe"

	"github.com/crab-testbed/crab/internal/jsonl"
)

// readJSONL reads records.jsonl, one strict JSON object per line.
//
// Lines are decoded in batches by one worker per CPU (JSON decoding is most
// of the time a large report takes) and handed to emit in file order, so
// the first fault reported is the first in the file, as with one reader. A
// batch's lines are copied into one block, which the decoded strings
// alias: a block is reused only once emit has seen every record of its
// batch (emit's record is valid only during the call, as for CSV).
func readJSONL(r io.Reader, name string, emit func(*Record, int) error) error {
	workers := max(1, runtime.GOMAXPROCS(0))
	j := &jsonlReader{
		name:    name,
		free:    make(chan *jsonlBatch, 4*workers+2),
		work:    make(chan *jsonlBatch, 2*workers),
		ordered: make(chan *jsonlBatch, 2*workers),
		stop:    make(chan struct{}),
	}
	defer close(j.stop)
	go j.split(r)
	for range workers {
		go j.decode()
	}
	return j.emitInOrder(emit)
}

// jsonlBatch is a run of lines, decoded by one worker.
type jsonlBatch struct {
	block  []byte
	ends   []int // ends[i] is where line i ends in block
	lines  []int
	recs   []Record
	bad    int   // index of the first line at fault, or -1
	err    error // its error
	syntax bool  // err is a JSON syntax error (a torn line looks like one)
	done   chan struct{}
}

const jsonlBatchLines, jsonlBatchBytes = 512, 1 << 20

// jsonlReader is one readJSONL: split feeds batches to the workers (work)
// and, in file order, to emitInOrder (ordered).
type jsonlReader struct {
	name                  string
	free                  chan *jsonlBatch // emitted batches, for reuse
	work, ordered         chan *jsonlBatch
	stop                  chan struct{}
	scanErr               error // set by split before it closes ordered
	lastLine, lastContent int   // the last line, and the last that is not blank
}

func (j *jsonlReader) newBatch() *jsonlBatch {
	select {
	case b := <-j.free:
		b.block, b.ends, b.lines = b.block[:0], b.ends[:0], b.lines[:0]
		b.bad, b.err, b.syntax, b.done = -1, nil, false, make(chan struct{})
		return b
	default:
		return &jsonlBatch{block: make([]byte, 0, jsonlBatchBytes), bad: -1, done: make(chan struct{})}
	}
}

// split reads r line by line into batches.
func (j *jsonlReader) split(r io.Reader) {
	defer close(j.ordered)
	defer close(j.work)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), jsonl.MaxLine)
	line := 0
	b := j.newBatch()
	send := func() bool {
		select {
		case j.work <- b:
		case <-j.stop:
			return false
		}
		select {
		case j.ordered <- b:
		case <-j.stop:
			return false
		}
		b = j.newBatch()
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
		j.lastContent = line
		if (len(b.lines) == jsonlBatchLines || len(b.block) >= jsonlBatchBytes) && !send() {
			return
		}
	}
	j.scanErr, j.lastLine = sc.Err(), line
	if len(b.lines) > 0 {
		send()
	}
}

// decode is one worker: it decodes and checks the lines of each batch up
// to the first at fault.
func (j *jsonlReader) decode() {
	for b := range j.work {
		if cap(b.recs) < len(b.lines) {
			b.recs = make([]Record, len(b.lines))
		}
		b.recs = b.recs[:len(b.lines)]
		text := unsafe.String(unsafe.SliceData(b.block), len(b.block))
		start := 0
		for i, end := range b.ends {
			if !utf8.Valid(b.block[start:end]) {
				b.bad, b.err = i, notUTF8(j.name, b.lines[i], b.block[start:end])
				// A write cut short inside a character ends in an
				// incomplete one: torn, if it is the last line.
				b.syntax = endsCut(b.block[start:end])
				break
			}
			if err := decodeLine(text[start:end], b.block[start:end:end], &b.recs[i]); err != nil {
				b.bad, b.err = i, JSONLineError(j.name, b.lines[i], err)
				var se *json.SyntaxError
				b.syntax = errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF)
				break
			}
			if err := checkRecord(&b.recs[i], j.name, b.lines[i]); err != nil {
				b.bad, b.err = i, err
				break
			}
			start = end
		}
		close(b.done)
	}
}

// emitInOrder hands the decoded records to emit in file order and stops
// at the first fault.
func (j *jsonlReader) emitInOrder(emit func(*Record, int) error) error {
	n := 0
	for b := range j.ordered {
		<-b.done
		for i := range b.recs {
			if i == b.bad {
				return j.fault(b, i, n)
			}
			if err := emit(&b.recs[i], b.lines[i]); err != nil {
				return err
			}
			n++
		}
		select {
		case j.free <- b:
		default:
		}
	}
	if j.scanErr != nil {
		return &InputError{File: j.name, Line: j.lastLine + 1, Msg: j.scanErr.Error()}
	}
	if n == 0 {
		return &InputError{File: j.name, Msg: "no records"}
	}
	return nil
}

// fault is the error of line i of b, after n records were emitted. A
// syntax error on the last line with content is a torn write: the process
// died mid-record. Every complete line before it counts; the caller is
// told with a *TornError.
func (j *jsonlReader) fault(b *jsonlBatch, i, n int) error {
	torn := b.syntax && i == len(b.recs)-1
	for rest := range j.ordered {
		<-rest.done
		torn = torn && len(rest.lines) == 0
	}
	if torn && b.lines[i] == j.lastContent && n > 0 {
		return &TornError{File: j.name, Line: b.lines[i], Err: b.err}
	}
	return b.err
}

// endsCut reports whether line is valid UTF-8 but for an incomplete
// character at its end, as a write cut short leaves it.
func endsCut(line []byte) bool {
	line = bytes.TrimRight(line, "\r\n")
	for k := 1; k <= utf8.UTFMax-1 && k <= len(line); k++ {
		tail := line[len(line)-k:]
		if utf8.RuneStart(tail[0]) {
			return !utf8.FullRune(tail) && utf8.Valid(line[:len(line)-k])
		}
	}
	return false
}
