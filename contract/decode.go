package contract

import (
	"encoding/json"
	"unicode/utf8"
)

// maxLeanDepth bounds the nesting the lean parser follows; deeper answers
// go to encoding/json, which has its own limit and error.
const maxLeanDepth = 512

// parseLean parses s as exactly one JSON value (surrounding whitespace
// allowed) into the tree encoding/json's Decoder with UseNumber builds:
// map[string]any (a repeated key keeps its last value), []any (never nil),
// string, json.Number, bool and nil. It reports false, leaving the answer
// to decodeJSON, for anything it does not handle exactly as encoding/json
// does: malformed JSON (whose error message decodeJSON words), a \u
// surrogate escape, invalid UTF-8, or nesting deeper than maxLeanDepth.
// Answers are validated on every request, and this is several times
// cheaper than the reflective decoder.
func parseLean(s string) (any, bool) {
	p := leanParser{s: s}
	p.ws()
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.ws()
	return v, p.i == len(p.s)
}

type leanParser struct {
	s string
	i int
}

func (p *leanParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value parses the value at p.i (no leading whitespace).
func (p *leanParser) value(depth int) (any, bool) {
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, ok := p.str()
		return s, ok
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, false
}

func (p *leanParser) literal(lit string) bool {
	if len(p.s)-p.i >= len(lit) && p.s[p.i:p.i+len(lit)] == lit {
		p.i += len(lit)
		return true
	}
	return false
}

func (p *leanParser) object(depth int) (any, bool) {
	if depth > maxLeanDepth {
		return nil, false
	}
	p.i++ // {
	m := make(map[string]any)
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.ws()
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v
		p.ws()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.ws()
		case '}':
			p.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (p *leanParser) array(depth int) (any, bool) {
	if depth > maxLeanDepth {
		return nil, false
	}
	p.i++ // [
	a := make([]any, 0)
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		p.ws()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.ws()
		case ']':
			p.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// str parses a string.
func (p *leanParser) str() (string, bool) {
	start := p.i + 1
	ascii := true
	for i := start; i < len(p.s); i++ {
		c := p.s[i]
		switch {
		case c == '"':
			raw := p.s[start:i]
			if !ascii && !utf8.ValidString(raw) {
				return "", false
			}
			p.i = i + 1
			return raw, true
		case c == '\\':
			return p.unescape(start, i)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// unescape parses the rest of a string that has an escape at esc.
func (p *leanParser) unescape(start, esc int) (string, bool) {
	out := make([]byte, 0, esc-start+16)
	out = append(out, p.s[start:esc]...)
	i := esc
	for i < len(p.s) {
		c := p.s[i]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			p.i = i + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(p.s) {
			return "", false
		}
		switch e := p.s[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(p.s, i+2)
			if !ok || (r >= 0xD800 && r < 0xE000) {
				return "", false // surrogate pairs are encoding/json's
			}
			out = utf8.AppendRune(out, r)
			i += 6
			continue
		default:
			return "", false
		}
		i += 2
	}
	return "", false
}

// hex4 reads four hex digits at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number parses a JSON number into a json.Number holding its literal.
func (p *leanParser) number() (any, bool) {
	s, start := p.s, p.i
	i := start
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return nil, false
		}
	}
	p.i = i
	return json.Number(s[start:i]), true
}
