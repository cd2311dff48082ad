package grade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/contract"
)

// Normalize turns a value decoded from YAML or built in Go into the JSON
// tree the graders compare (map[string]any, []any, string, json.Number,
// bool, nil), by a JSON round trip.
func Normalize(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// number reads a JSON number in any of the forms a decoded value may hold.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(n.String(), 64)
		return f, err == nil
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// equal is JSON equality: numbers by value whatever their form, objects
// by their members, arrays element by element; fold compares strings
// case-insensitively.
func equal(a, b any, fold bool) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && (x == y || (math.IsNaN(x) && math.IsNaN(y)))
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		if fold {
			return ok && strings.EqualFold(x, y)
		}
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i], fold) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w, fold) {
				return false
			}
		}
		return true
	}
	return false
}

// sameSet reports whether two arrays hold the same elements as many times
// each, in any order.
func sameSet(a, b []any, fold bool) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
outer:
	for _, x := range a {
		for j, y := range b {
			if !used[j] && equal(x, y, fold) {
				used[j] = true
				continue outer
			}
		}
		return false
	}
	return true
}

// partial reports whether every member of want appears in got with a value
// that contains it (objects) or equals it (everything else).
func partial(got, want map[string]any, fold bool) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return false
		}
		if wm, ok := w.(map[string]any); ok {
			gm, ok := g.(map[string]any)
			if !ok || !partial(gm, wm, fold) {
				return false
			}
			continue
		}
		if !equal(g, w, fold) {
			return false
		}
	}
	return true
}

// show renders a value briefly for a reason.
func show(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(clip(x))
	case json.Number:
		s = x.String()
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		s = string(b)
	default:
		s = fmt.Sprint(x)
	}
	return clip(s)
}

// clip quotes a value as the contract's messages do.
func clip(s string) string { return contract.Clip(s) }

// jsonType names the JSON type of a decoded value, as JSON Schema does.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		if f, ok := number(x); ok {
			if f == math.Trunc(f) && !math.IsInf(f, 0) {
				return "integer"
			}
			return "number"
		}
	}
	return fmt.Sprintf("%T", v)
}

// lookup follows a JSON pointer into a decoded value.
func lookup(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	for _, tok := range splitPointer(ptr) {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// splitPointer splits a JSON pointer (RFC 6901) into unescaped tokens.
func splitPointer(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts
}

// escapeToken escapes one JSON pointer token (RFC 6901).
func escapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}
