package sim

import (
	"encoding/json"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file holds the text and JSON writing helpers of the generator.

// jsonEqual compares two JSON texts as values.
func jsonEqual(a, b []byte) bool {
	if string(a) == string(b) {
		return true
	}
	if plainJSONString(a) && plainJSONString(b) {
		return false // both decode to their own bytes, which differ
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// plainJSONString reports whether b is a JSON string without escapes, in
// valid UTF-8: one that decodes to the bytes between its quotes.
func plainJSONString(b []byte) bool {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return false
	}
	for _, c := range b[1 : len(b)-1] {
		if c == '"' || c == '\\' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(b)
}

// writeJSONValue writes a decoded JSON value (what encoding/json or the
// ordered parser produce) compactly; object keys are sorted.
func writeJSONValue(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writeQuoted(b, x)
	case json.Number:
		b.WriteString(x.String())
	case float64:
		b.WriteString(formatNumber(x, false))
	case int:
		b.WriteString(strconv.Itoa(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONValue(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeQuoted(b, k)
			b.WriteByte(':')
			writeJSONValue(b, x[k])
		}
		b.WriteByte('}')
	case *object:
		writeOrdered(b, x)
	default:
		raw, err := json.Marshal(x)
		if err != nil {
			b.WriteString("null")
			return
		}
		b.Write(raw)
	}
}

// formatExample is a valid example of a string format.
func formatExample(format string, h uint64) (string, bool) {
	switch format {
	case "date-time":
		return "2024-05-" + strconv.Itoa(10+int(h%18)) + "T12:00:00Z", true
	case "date":
		return "2024-05-" + strconv.Itoa(10+int(h%18)), true
	case "time":
		return "12:00:00Z", true
	case "duration":
		return "P" + strconv.Itoa(1+int(h%9)) + "D", true
	case "email":
		return "agent@example.com", true
	case "hostname":
		return "example.com", true
	case "ipv4":
		return "192.0.2." + strconv.Itoa(1+int(h%250)), true
	case "ipv6":
		return "2001:db8::" + strconv.FormatUint(1+h%0xfff, 16), true
	case "uuid":
		const hex = "0123456789abcdef"
		var b [36]byte
		x := h
		for i := range b {
			switch i {
			case 8, 13, 18, 23:
				b[i] = '-'
				continue
			case 14:
				b[i] = '4'
				continue
			}
			b[i] = hex[x&0xF]
			x = x>>4 | x<<60
		}
		return string(b[:]), true
	}
	return "", false
}

// genRegexp writes a shortest string the parsed pattern matches: the
// first alternative, the fewest repetitions, the first character of a
// class that is printable.
func genRegexp(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo < '!' {
				lo = '!'
			}
			if lo <= hi && lo != utf8.RuneError {
				b.WriteRune(lo)
				return
			}
		}
		if len(re.Rune) > 0 {
			b.WriteRune(re.Rune[0])
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
	case syntax.OpCapture:
		genRegexp(b, re.Sub[0])
	case syntax.OpPlus:
		genRegexp(b, re.Sub[0])
	case syntax.OpRepeat:
		for range re.Min {
			genRegexp(b, re.Sub[0])
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			genRegexp(b, s)
		}
	case syntax.OpAlternate:
		genRegexp(b, re.Sub[0])
	}
}

// sentences splits text at sentence terminators of any script and at line
// breaks, trimmed; empty pieces are dropped.
func sentences(text string) []span {
	out := make([]span, 0, 8)
	start := 0
	add := func(end int) {
		s := trimSpan(text, span{start, end})
		if s.end > s.start {
			out = append(out, s)
		}
	}
	for i, r := range text {
		switch r {
		case '\n':
			add(i)
			start = i + 1
		case '.', '!', '?':
			if i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n' {
				add(i + 1)
				start = i + 1
			}
		case '。', '！', '？', '؟', '।':
			end := i + utf8.RuneLen(r)
			add(end)
			start = end
		}
	}
	add(len(text))
	return out
}

func trimSpan(text string, s span) span {
	for s.start < s.end && isSpace(text[s.start]) {
		s.start++
	}
	for s.end > s.start && isSpace(text[s.end-1]) {
		s.end--
	}
	return s
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// cutRunes returns s cut to at most n runes.
func cutRunes(s string, n int) string {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
	}
	return s[:i]
}

// fitLength pads s (repeating it) to at least lo runes and cuts it to at
// most hi (hi < 0: no bound).
func fitLength(s string, lo, hi int) string {
	if n := utf8.RuneCountInString(s); n < lo {
		base := s
		if base == "" {
			base = "-"
		}
		var b strings.Builder
		b.WriteString(s)
		for utf8.RuneCountInString(b.String()) < lo {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(base)
		}
		s = b.String()
	}
	if hi >= 0 {
		s = cutRunes(s, hi)
	}
	return s
}

func writeQuoted(w *strings.Builder, s string) {
	w.WriteByte('"')
	writeEscaped(w, s)
	w.WriteByte('"')
}

// writeEscaped writes s as the inside of a JSON string: quotes, backslashes
// and control characters escaped, invalid UTF-8 replaced by U+FFFD, other
// text as it is.
func writeEscaped(w *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' && b < utf8.RuneSelf {
			i++
			continue
		}
		if b >= utf8.RuneSelf {
			r, sz := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || sz != 1 {
				i += sz
				continue
			}
			w.WriteString(s[start:i])
			w.WriteString(`\ufffd`)
			i++
			start = i
			continue
		}
		w.WriteString(s[start:i])
		switch b {
		case '"', '\\':
			w.WriteByte('\\')
			w.WriteByte(b)
		case '\n':
			w.WriteString(`\n`)
		case '\r':
			w.WriteString(`\r`)
		case '\t':
			w.WriteString(`\t`)
		default:
			w.WriteString(`\u00`)
			w.WriteByte(hex[b>>4])
			w.WriteByte(hex[b&0xF])
		}
		i++
		start = i
	}
	w.WriteString(s[start:])
}
