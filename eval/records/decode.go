package records

import (
	"strconv"
	"time"

	"github.com/crab-testbed/crab/internal/inputerr"
	"github.com/crab-testbed/crab/internal/jsonw"
)

// decodeLine decodes one records.jsonl line into rec, exactly as the strict
// decoder (inputerr.DecodeStrict) does: the same record, or the same error.
// line and raw are the same bytes; strings of rec may alias line, which
// must therefore never change afterwards.
//
// Lines of the shape crab writes (known keys, each once, plain values of
// the field's type) are read by a lean scanner (Record.scan, generated
// from the struct into codec_gen.go), several times faster than
// the reflective decoder and without its allocations. Anything else — an
// unknown, repeated or differently cased key, a null, a value of another
// type, a number out of range, a surrogate escape that does not pair,
// invalid UTF-8, malformed JSON — goes to the strict decoder, so the
// result and any error are exactly its own.
func decodeLine(line string, raw []byte, rec *Record) error {
	*rec = Record{}
	if rec.scan(line, raw) {
		return nil
	}
	*rec = Record{}
	return inputerr.DecodeStrict(raw, rec)
}

// recordLexer reads a line; raw is the same bytes as its text.
type recordLexer struct {
	jsonw.Lexer
	raw []byte
}

func newRecordLexer(line string, raw []byte) recordLexer {
	return recordLexer{jsonw.New(line, jsonw.PlainKeys|jsonw.SurrogatePairs), raw}
}

// mark records that field f was read, false when it was read before (a
// repeated key is encoding/json's to merge).
func (l *recordLexer) mark(seen []uint64, f int) bool {
	w, bit := f/64, uint64(1)<<(f%64)
	if seen[w]&bit != 0 {
		return false
	}
	seen[w] |= bit
	return true
}

func (l *recordLexer) str(dst *string) bool {
	v, ok := l.String()
	*dst = v
	return ok
}

func (l *recordLexer) bool(dst *bool) bool {
	v, ok := l.Bool()
	*dst = v
	return ok
}

func (l *recordLexer) int(dst *int) bool {
	v, ok := l.Int()
	*dst = v
	return ok
}

// float reads a number as encoding/json does into a float64; one out of
// range is refused (encoding/json fails on it).
func (l *recordLexer) float(dst *float64) bool {
	t, ok := l.Number()
	if !ok {
		return false
	}
	v, err := strconv.ParseFloat(t, 64)
	*dst = v
	return err == nil
}

// time reads a string through time.Time's own UnmarshalJSON, given the
// raw string (escapes included) as encoding/json gives it.
func (l *recordLexer) time(dst *time.Time) bool {
	l.WS()
	start := l.Pos()
	if !l.SkipString() {
		return false
	}
	return dst.UnmarshalJSON(l.raw[start:l.Pos()]) == nil
}

// strings reads an array of strings; an empty one is an empty slice, as
// encoding/json makes it.
func (l *recordLexer) strings(dst *[]string) bool {
	vs := []string{}
	ok := l.Array(func() bool {
		v, ok := l.String()
		vs = append(vs, v)
		return ok
	})
	*dst = vs
	return ok
}
