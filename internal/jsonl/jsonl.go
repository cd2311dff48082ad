// Package jsonl is crab's one line reader for JSONL files (tasks, records,
// scenarios, outcome tables, traces): it numbers lines as an editor does,
// skips a UTF-8 byte order mark, blank lines and, when asked, '#' comment
// lines, and allows long lines.
package jsonl

import (
	"bufio"
	"bytes"
	"io"
)

// MaxLine bounds the lines read (16 MiB): a line and its newline must fit
// in it, or reading fails. Writers of files crab reads back check Fits.
const MaxLine = 16 << 20

// Fits reports whether line (without its newline) is one a Scanner reads:
// every crab writer of a JSONL file another crab command reads checks it,
// so crab never writes a line its own readers refuse.
func Fits(line []byte) bool { return len(line) < MaxLine }

var bom = []byte("\xef\xbb\xbf")

// TrimBOM drops a UTF-8 byte order mark (as spreadsheet exports write) from
// the start of b; every crab reader of a user's text file calls it or
// reads through a Scanner, which does.
func TrimBOM(b []byte) []byte { return bytes.TrimPrefix(b, bom) }

// Scanner reads the non-blank lines of a stream, trimmed of white space.
type Scanner struct {
	sc       *bufio.Scanner
	line     int
	comments bool
	cur      []byte
}

// NewScanner returns a Scanner over r. With comments, lines whose first
// non-blank byte is '#' are skipped too.
func NewScanner(r io.Reader, comments bool) *Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), MaxLine)
	return &Scanner{sc: sc, comments: comments}
}

// Scan advances to the next line with content; false at the end or on a
// read error (see Err).
func (s *Scanner) Scan() bool {
	for s.sc.Scan() {
		s.line++
		raw := s.sc.Bytes()
		if s.line == 1 {
			raw = bytes.TrimPrefix(raw, bom)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || (s.comments && raw[0] == '#') {
			continue
		}
		s.cur = raw
		return true
	}
	return false
}

// Bytes is the current line, trimmed; valid until the next Scan.
func (s *Scanner) Bytes() []byte { return s.cur }

// Line is the 1-based number of the current line.
func (s *Scanner) Line() int { return s.line }

// Err is the read error that ended scanning, if any. A line over MaxLine is
// bufio.ErrTooLong; it stands on line Line()+1.
func (s *Scanner) Err() error { return s.sc.Err() }
