// Package jsonw holds the JSON primitives of crab's lean codecs: a lexer
// for the hand-written decoders of its hot paths (chat requests, chat
// answers, contract answers, the judge's fields) and the appenders of its
// hand-written encoders, all matching encoding/json.
//
// Each lean decoder reads the shapes it knows and falls back to
// encoding/json for anything else, so the lexer never guesses: every
// method reports false where its input is malformed or where reading it as
// encoding/json does needs more than the lexer does (invalid UTF-8, a
// surrogate escape the caller did not opt into, a key that needs
// encoding/json's matching). The caller then gives the whole document to
// encoding/json.
package jsonw

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Option selects how a Lexer reads strings and keys.
type Option uint8

const (
	// SurrogatePairs makes String decode a \u escape pair that forms a
	// valid UTF-16 surrogate pair, as encoding/json does. Without it, any
	// surrogate escape is refused. A lone or broken surrogate is always
	// refused (encoding/json replaces it with U+FFFD).
	SurrogatePairs Option = 1 << iota
	// PlainKeys makes Object refuse a key with an escape or a byte outside
	// ASCII: a caller that matches keys against a struct's fields needs
	// encoding/json's own matching (escapes, Unicode case folding) there.
	// Without it, keys are read as String reads strings.
	PlainKeys
)

// Lexer reads JSON text. Every reading method first skips white space.
type Lexer struct {
	s     string
	i     int
	opts  Option
	alias bool // s aliases a caller's bytes: strings handed out are copies
}

// New returns a Lexer at the start of s. Strings without escapes are
// returned as substrings of s, without copying.
func New(s string, opts Option) Lexer {
	return Lexer{s: s, opts: opts}
}

// NewBytes returns a Lexer at the start of b, which must not change while
// the Lexer reads it. The strings String and PlainString return are
// copies, never aliasing b; so are the keys Object passes to its member
// function, but for the PlainKeys option, whose keys alias b and are valid
// only during that call, and the text Number returns, which aliases b.
// The text itself is not copied.
func NewBytes(b []byte, opts Option) Lexer {
	return Lexer{s: unsafe.String(unsafe.SliceData(b), len(b)), opts: opts, alias: true}
}

// text returns the plain string s[start:end] as handed out: a copy where
// the text aliases a caller's bytes.
func (l *Lexer) text(start, end int) string {
	if l.alias {
		return strings.Clone(l.s[start:end])
	}
	return l.s[start:end]
}

// Pos is the offset of the next byte to read.
func (l *Lexer) Pos() int { return l.i }

// Rest is the text from the next byte on.
func (l *Lexer) Rest() string { return l.s[l.i:] }

// Advance moves n bytes on, which the caller has checked itself (at most
// len(l.Rest())).
func (l *Lexer) Advance(n int) { l.i += n }

// WS skips white space.
func (l *Lexer) WS() {
	for l.i < len(l.s) {
		switch l.s[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

// End reports whether only white space is left.
func (l *Lexer) End() bool {
	l.WS()
	return l.i == len(l.s)
}

// Peek skips white space and returns the next byte without reading it, or
// 0 at the end of the text.
func (l *Lexer) Peek() byte {
	l.WS()
	if l.i < len(l.s) {
		return l.s[l.i]
	}
	return 0
}

// Eat skips white space and then reads c, if c comes next.
func (l *Lexer) Eat(c byte) bool {
	l.WS()
	if l.i < len(l.s) && l.s[l.i] == c {
		l.i++
		return true
	}
	return false
}

// Literal reads lit (true, false or null), if it comes next. What follows
// it is the caller's to check, as for every value.
func (l *Lexer) Literal(lit string) bool {
	l.WS()
	if strings.HasPrefix(l.s[l.i:], lit) {
		l.i += len(lit)
		return true
	}
	return false
}

// Null reads a null, if one comes next.
func (l *Lexer) Null() bool { return l.Literal("null") }

// Bool reads true or false.
func (l *Lexer) Bool() (v, ok bool) {
	switch {
	case l.Literal("true"):
		return true, true
	case l.Literal("false"):
		return false, true
	}
	return false, false
}

// Object reads an object, calling member after each key's colon to read
// that key's value. Keys are read as String reads strings, or as PlainKey
// does with the PlainKeys option. It reports false when member does or the
// object is malformed.
func (l *Lexer) Object(member func(key string) bool) bool {
	if !l.Eat('{') {
		return false
	}
	if l.Eat('}') {
		return true
	}
	for {
		var k string
		var ok bool
		if l.opts&PlainKeys != 0 {
			k, ok = l.plainKey()
		} else {
			k, ok = l.String()
		}
		if !ok || !l.Eat(':') || !member(k) {
			return false
		}
		if more, ok := l.next('}'); !more {
			return ok
		}
	}
}

// Array reads an array, calling elem to read each element. It reports
// false when elem does or the array is malformed.
func (l *Lexer) Array(elem func() bool) bool {
	if !l.Eat('[') {
		return false
	}
	if l.Eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if more, ok := l.next(']'); !more {
			return ok
		}
	}
}

// next reads what follows a member or element: a comma (more) or the
// closing byte (done, ok).
func (l *Lexer) next(close byte) (more, ok bool) {
	l.WS()
	if l.i >= len(l.s) {
		return false, false
	}
	c := l.s[l.i]
	l.i++
	switch c {
	case ',':
		return true, true
	case close:
		return false, true
	}
	return false, false
}

// String reads a string and decodes its escapes. It refuses control
// characters, invalid UTF-8 and surrogate escapes (but for valid pairs
// with the SurrogatePairs option), where encoding/json fails or replaces.
func (l *Lexer) String() (string, bool) { return l.str(true) }

// PlainString reads a string without escapes: it refuses one with an
// escape, as well as whatever String refuses.
func (l *Lexer) PlainString() (string, bool) { return l.str(false) }

// str reads a string, decoding escapes or refusing them.
func (l *Lexer) str(escapes bool) (string, bool) {
	if !l.Eat('"') {
		return "", false
	}
	start := l.i
	ascii := true
	for i := start; i < len(l.s); i++ {
		switch c := l.s[i]; {
		case c == '"':
			if !ascii && !utf8.ValidString(l.s[start:i]) {
				return "", false
			}
			l.i = i + 1
			return l.text(start, i), true
		case c == '\\':
			if !escapes {
				return "", false
			}
			return l.unescape(start, i)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// Once adds bit to *seen and reports whether it was not there yet: the
// lean decoders refuse a repeated key, which encoding/json merges.
func Once[T ~uint8 | ~uint16 | ~uint32 | ~int](seen *T, bit T) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// PlainKey reads a string of printable ASCII without escapes, as an
// object key whose meaning needs no case folding or unescaping.
func (l *Lexer) PlainKey() (string, bool) {
	l.WS()
	start := l.i
	if _, ok := l.plainKey(); !ok {
		return "", false
	}
	return l.text(start+1, l.i-1), true // inside the quotes
}

// plainKey is PlainKey without the copy: the key aliases the text.
func (l *Lexer) plainKey() (string, bool) {
	if !l.Eat('"') {
		return "", false
	}
	start := l.i
	for i := start; i < len(l.s); i++ {
		switch c := l.s[i]; {
		case c == '"':
			l.i = i + 1
			return l.s[start:i], true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return "", false
		}
	}
	return "", false
}

// unescape reads the rest of a string whose text starts at start and has
// its first backslash at esc. The decoded string is never longer than its
// escaped form, so one allocation of that size holds it.
func (l *Lexer) unescape(start, esc int) (string, bool) {
	end := esc
	for end < len(l.s) && l.s[end] != '"' {
		if l.s[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(l.s) {
		return "", false
	}
	var out strings.Builder
	out.Grow(end - start)
	out.WriteString(l.s[start:esc])
	for i := esc; i < end; {
		if l.s[i] != '\\' {
			run := i
			for i < end && l.s[i] != '\\' {
				if l.s[i] < 0x20 {
					return "", false
				}
				i++
			}
			out.WriteString(l.s[run:i])
			continue
		}
		if i+1 >= end {
			return "", false
		}
		switch e := l.s[i+1]; e {
		case '"', '\\', '/':
			out.WriteByte(e)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r, ok := hex4(l.s[i+2 : end])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if l.opts&SurrogatePairs == 0 || i+6 > end || l.s[i] != '\\' || l.s[i+1] != 'u' {
					return "", false
				}
				r2, ok := hex4(l.s[i+2 : end])
				if !ok {
					return "", false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			out.WriteRune(r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	v := out.String()
	if !utf8.ValidString(v) {
		return "", false
	}
	l.i = end + 1
	return v, true
}

// hex4 reads the four hex digits of a \u escape at the start of s.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Number reads a number in JSON's grammar and returns its text (a
// substring of the Lexer's text, even for NewBytes).
func (l *Lexer) Number() (string, bool) {
	l.WS()
	s, i := l.s, l.i
	start := i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		i = digits(s, i)
	default:
		return "", false
	}
	if i < len(s) && s[i] == '.' {
		d := i + 1
		if i = digits(s, d); i == d {
			return "", false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		if i = digits(s, d); i == d {
			return "", false
		}
	}
	l.i = i
	return s[start:i], true
}

// digits returns the offset of the first non-digit at or after i.
func digits(s string, i int) int {
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// Int reads an integer that fits an int; it refuses a fraction or an
// exponent, as encoding/json does for an integer field.
func (l *Lexer) Int() (int, bool) {
	t, ok := l.Number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || int64(int(v)) != v {
		return 0, false
	}
	return int(v), true
}

// SkipString checks and passes over a string without decoding it: any
// bytes from 0x20 up (encoding/json replaces invalid UTF-8 rather than
// failing) and well-formed escapes.
func (l *Lexer) SkipString() bool {
	if !l.Eat('"') {
		return false
	}
	for i := l.i; i < len(l.s); i++ {
		switch c := l.s[i]; {
		case c == '"':
			l.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(l.s) {
				return false
			}
			switch l.s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if _, ok := hex4(l.s[i+2:]); !ok {
					return false
				}
				i += 5
			default:
				return false
			}
		}
	}
	return false
}

// Skip checks and passes over any value as encoding/json's scanner accepts
// it, with at most depth levels of objects and arrays (the value itself
// counts as one). Keys are checked as SkipString checks strings, whatever
// the Lexer's options.
func (l *Lexer) Skip(depth int) bool {
	switch l.Peek() {
	case '{':
		if depth <= 0 {
			return false
		}
		l.i++
		if l.Eat('}') {
			return true
		}
		for {
			if !l.SkipString() || !l.Eat(':') || !l.Skip(depth-1) {
				return false
			}
			if more, ok := l.next('}'); !more {
				return ok
			}
		}
	case '[':
		if depth <= 0 {
			return false
		}
		return l.Array(func() bool { return l.Skip(depth - 1) })
	case '"':
		return l.SkipString()
	case 't':
		return l.Literal("true")
	case 'f':
		return l.Literal("false")
	case 'n':
		return l.Literal("null")
	}
	_, ok := l.Number()
	return ok
}
