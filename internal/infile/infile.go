// Package infile reads the files crab imports from other tools and from
// people (benchmark results, proxy logs, spreadsheet exports), the same way
// for every importer: regular files only (a FIFO or a device could block or
// never end), at most a bounded size, lines at most as long as crab's own
// readers take, a UTF-8 byte order mark dropped, and text that is not
// valid UTF-8 refused with the file, line and field named, never replaced
// silently.
package infile

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/crab-testbed/crab/internal/inputerr"
	"github.com/crab-testbed/crab/internal/jsonl"
)

// MaxSize is the largest file Read takes by default: an import is read
// whole before anything is written, so its size bounds crab's memory.
const MaxSize = 1 << 30

// MaxLine is the longest line of a line-oriented import (JSONL, CSV): the
// longest line crab's own JSONL readers take, so that nothing imported is
// refused later by crab itself.
const MaxLine = jsonl.MaxLine

// Stdin is the name messages give standard input.
const Stdin = "<stdin>"

// Options bound what Read and Clean take.
type Options struct {
	// MaxSize bounds the file (0: MaxSize).
	MaxSize int64
	// MaxLine bounds each line: a line (without its newline) must be
	// shorter (0: no bound, for a JSON document a tool writes on one line).
	MaxLine int
}

// Error is a file crab refuses: it names the file, and where it can the
// line and the field.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string { return inputerr.Format(e.File, e.Line, e.Field, e.Msg) }

// Read reads the file at path whole ("-" reads stdin, named Stdin) and
// cleans it (see Clean). It returns the name messages should use.
func Read(path string, stdin io.Reader, o Options) (data []byte, name string, err error) {
	maxSize := o.MaxSize
	if maxSize <= 0 {
		maxSize = MaxSize
	}
	var r io.Reader
	name = path
	if path == "-" {
		name = Stdin
		if stdin == nil {
			return nil, name, &Error{File: name, Msg: "no standard input to read"}
		}
		r = stdin
	} else {
		f, err := jsonl.OpenRegular(path)
		switch {
		case errors.Is(err, jsonl.ErrNotRegular):
			return nil, name, &Error{File: name, Msg: err.Error() + ": crab imports regular files only, which cannot block or never end"}
		case err != nil:
			return nil, name, &Error{File: name, Msg: "cannot read: " + err.Error()}
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Size() > maxSize {
			return nil, name, tooLarge(name, maxSize)
		}
		r = f
	}
	data, err = io.ReadAll(io.LimitReader(r, maxSize+1))
	if err != nil {
		return nil, name, &Error{File: name, Msg: "read error: " + pathErr(err)}
	}
	if int64(len(data)) > maxSize {
		return nil, name, tooLarge(name, maxSize)
	}
	data, err = Clean(data, name, o)
	return data, name, err
}

func tooLarge(name string, maxSize int64) error {
	return &Error{File: name, Msg: fmt.Sprintf("larger than %d MiB, the most crab imports from one file: split it", maxSize>>20)}
}

// Clean drops a UTF-8 byte order mark and checks that data is UTF-8 and
// that no line is longer than o.MaxLine; a fault is an *Error naming the
// line and, in JSON or CSV, the field. data is returned without the mark.
func Clean(data []byte, name string, o Options) ([]byte, error) {
	data = jsonl.TrimBOM(data)
	if o.MaxLine > 0 {
		line, start := 1, 0
		for start <= len(data) {
			end := bytes.IndexByte(data[start:], '\n')
			if end < 0 {
				end = len(data) - start
			}
			if end >= o.MaxLine {
				return nil, &Error{File: name, Line: line, Msg: fmt.Sprintf("a line of %d bytes: crab reads lines shorter than %d MiB", end, o.MaxLine>>20)}
			}
			start += end + 1
			line++
		}
	}
	off := len(data)
	if !utf8.Valid(data) {
		off = invalidAt(data)
	}
	if first := bytes.TrimLeft(data, " \t\r\n"); len(first) > 0 && (first[0] == '{' || first[0] == '[') {
		// JSON can spell text that is not UTF-8 as an escape: a lone UTF-16
		// surrogate (\ud800), which decoders replace without a word.
		if at := loneSurrogate(data[:off]); at >= 0 {
			line := 1 + bytes.Count(data[:at], []byte("\n"))
			return nil, &Error{File: name, Line: line, Field: FieldAt(data, at), Msg: fmt.Sprintf("a lone UTF-16 surrogate %s at offset %d: not text (invalid UTF-8 in the program that wrote it); crab does not replace it", data[at:at+6], at)}
		}
	}
	if off == len(data) {
		return data, nil
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return nil, &Error{File: name, Line: line, Field: FieldAt(data, off), Msg: fmt.Sprintf("not valid UTF-8 (byte 0x%02x at offset %d): crab keeps text as it is and does not guess an encoding; save the file as UTF-8", data[off], off)}
}

// loneSurrogate is the offset of the first \uD800–\uDFFF escape in a
// JSON string that is not half of a pair, or -1.
func loneSurrogate(data []byte) int {
	if !bytes.Contains(data, []byte(`\u`)) {
		return -1
	}
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(data):
			if data[i+1] != 'u' {
				i++ // the escaped character
				continue
			}
			r, ok := hex4(data, i+2)
			if !ok {
				continue
			}
			switch {
			case r >= 0xd800 && r < 0xdc00:
				if lo, ok := hex4(data, i+8); ok && i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' && lo >= 0xdc00 && lo < 0xe000 {
					i += 11
					continue
				}
				return i
			case r >= 0xdc00 && r < 0xe000:
				return i
			}
			i += 5
		}
	}
	return -1
}

// hex4 reads four hex digits at data[at:].
func hex4(data []byte, at int) (rune, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(data[at:at+4]), 16, 32)
	return rune(v), err == nil
}

// invalidAt is the offset of the first byte that is not valid UTF-8.
func invalidAt(data []byte) int {
	for off := 0; off < len(data); {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			return off
		}
		off += n
	}
	return len(data)
}

// FieldAt names the field holding byte off of data: a JSON path in a JSON
// document or a JSON line ("errors[3]", "metadata.status"), a column name
// in CSV with a header; "" when it cannot tell.
func FieldAt(data []byte, off int) string {
	lineStart := bytes.LastIndexByte(data[:off], '\n') + 1
	first := bytes.TrimLeft(data, " \t\r\n")
	if len(first) == 0 {
		return ""
	}
	switch first[0] {
	case '[':
		return jsonPathAt(data, off)
	case '{':
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data) - off
		}
		line := data[lineStart : off+end]
		if p := jsonPathAt(line, off-lineStart); p != "" {
			return p
		}
		return jsonPathAt(data, off)
	}
	return csvColumnAt(data, off)
}

// jsonPathAt follows the tokens of a JSON value up to byte off and names
// where it is. The decoder replaces invalid UTF-8 as it reads, so the walk
// itself does not fail on the byte it looks for.
func jsonPathAt(data []byte, off int) string {
	type frame struct {
		array     bool
		index     int
		key       string
		expectKey bool
	}
	var stack []frame
	path := func() string {
		var b bytes.Buffer
		for _, f := range stack {
			switch {
			case f.array:
				b.WriteString("[" + strconv.Itoa(max(f.index, 0)) + "]")
			case f.key != "":
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			}
		}
		return b.String()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return path()
		}
		past := int(dec.InputOffset()) > off
		top := len(stack) - 1
		if s, ok := tok.(string); ok && top >= 0 && !stack[top].array && stack[top].expectKey {
			stack[top].key, stack[top].expectKey = s, false
			if past {
				return path()
			}
			continue
		}
		d, isDelim := tok.(json.Delim)
		if isDelim && (d == '}' || d == ']') {
			stack = stack[:top]
			if t := len(stack) - 1; t >= 0 && !stack[t].array {
				stack[t].expectKey = true
			}
			if past {
				return path()
			}
			continue
		}
		if top >= 0 && stack[top].array {
			stack[top].index++
		}
		if past {
			return path()
		}
		switch {
		case isDelim && d == '{':
			stack = append(stack, frame{expectKey: true})
		case isDelim && d == '[':
			stack = append(stack, frame{array: true, index: -1})
		case top >= 0 && !stack[top].array:
			stack[top].expectKey = true
		}
	}
}

// csvColumnAt names the CSV column (by its header) holding byte off.
func csvColumnAt(data []byte, off int) string {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	header, err := cr.Read()
	if err != nil {
		return ""
	}
	lineStart := bytes.LastIndexByte(data[:off], '\n') + 1
	wantLine, wantCol := 1+bytes.Count(data[:off], []byte("\n")), off-lineStart+1
	before := func(l, c int) bool { return l < wantLine || (l == wantLine && c <= wantCol) }
	best := -1
	for rec := header; ; {
		if l, c := cr.FieldPos(0); !before(l, c) {
			break
		}
		for i := range rec {
			if before(cr.FieldPos(i)) {
				best = i
			}
		}
		if rec, err = cr.Read(); err != nil {
			break
		}
	}
	switch {
	case best < 0:
		return ""
	case best < len(header):
		return header[best]
	}
	return "column " + strconv.Itoa(best+1)
}

func pathErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
