package contract

import (
	"encoding/json"

	"github.com/crab-testbed/crab/internal/jsonw"
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
	l := jsonw.New(s, 0)
	v, ok := leanValue(&l, 0)
	return v, ok && l.End()
}

// leanValue parses the value at l, inside depth objects and arrays.
func leanValue(l *jsonw.Lexer, depth int) (any, bool) {
	switch l.Peek() {
	case '{':
		if depth >= maxLeanDepth {
			return nil, false
		}
		m := make(map[string]any)
		ok := l.Object(func(k string) bool {
			v, ok := leanValue(l, depth+1)
			m[k] = v
			return ok
		})
		return m, ok
	case '[':
		if depth >= maxLeanDepth {
			return nil, false
		}
		a := make([]any, 0)
		ok := l.Array(func() bool {
			v, ok := leanValue(l, depth+1)
			a = append(a, v)
			return ok
		})
		return a, ok
	case '"':
		return l.String()
	case 't':
		return true, l.Literal("true")
	case 'f':
		return false, l.Literal("false")
	case 'n':
		return nil, l.Literal("null")
	}
	t, ok := l.Number()
	return json.Number(t), ok
}
