package sim

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/crab-testbed/crab/internal/splitmix"
	"github.com/crab-testbed/crab/model"
)

// Output modes as small integers.
const (
	modeFull = iota
	modeShort
	modeOverShort
)

// Lengths of the free text the answers write, in runes.
const (
	// maxQuote bounds a quotation of the request in a full answer.
	maxQuote = 200
	// shortRunes is a short answer's free text: the opening words of the
	// quotation, or the contract's minLength when that is longer.
	shortRunes = 32
	// maxDepth bounds the nesting the generator follows through recursive
	// $refs; deeper values are written as small as the schema allows.
	maxDepth = 12
)

// gen writes one answer to a contract. The answer is built from the
// contract (its types, enums, required fields, lengths, items and ranges),
// the request text (free text quotes its sentences) and scope (a full
// answer's free text names the scope it was built for), and the expected
// values of the oracle: each is written as expected, or, for a pointer in
// wrong, as another value the contract allows.
type gen struct {
	b     strings.Builder
	text  string
	sents []span
	sig   string // full-mode signature: the scope the answer was built for
	mode  int
	seed  uint64 // hash of the text and scope: natural choices
	exp   map[string]any
	wrong map[string]bool
	g     *splitmix.Rand // draws for wrong values
	drop  map[string]bool
	// faults still to apply to the first field they fit
	offEnum, emptyList bool
}

// span is a byte range of the text.
type span struct{ start, end int }

func newGen(text string, scope *model.Scope, mode int) *gen {
	w := &gen{text: text, mode: mode, sents: sentences(text)}
	w.seed = xxhash.Sum64String(text) ^ xxhash.Sum64String(scope.Tenant+"\x00"+scope.Lang)
	if mode == modeFull {
		w.sig = " [" + scope.Tenant + " · " + scope.Permission + " · " + scope.Lang + " · " + scope.DocVersion + "]"
	}
	return w
}

// hash mixes the answer's seed with a pointer: the natural choice of one
// field, the same on every call for the same request.
func (w *gen) hash(ptr string) uint64 {
	var d xxhash.Digest
	d.Reset()
	hashU64(&d, w.seed)
	d.WriteString(ptr)
	return d.Sum64()
}

// root writes the answer object.
func (w *gen) root(s *schema) string {
	w.b.Grow(256 + len(w.text)/2)
	w.value(s, "", 0)
	return w.b.String()
}

func (w *gen) value(s *schema, ptr string, depth int) {
	s = s.resolve()
	if w.offEnum && len(s.enum) > 1 {
		w.offEnum = false
		w.writeOffEnum(s)
		return
	}
	if v, ok := w.exp[ptr]; ok {
		if w.wrong[ptr] {
			w.writeWrong(s, v, ptr, depth)
			return
		}
		writeJSONValue(&w.b, v)
		return
	}
	w.natural(s, ptr, depth)
}

// natural writes the value the model gives a field it has no expectation
// for: an enum value chosen from the request, free text quoting it, the
// smallest valid value in the short modes.
func (w *gen) natural(s *schema, ptr string, depth int) {
	if len(s.enum) > 0 {
		w.b.Write(s.enum[w.hash(ptr)%uint64(len(s.enum))])
		return
	}
	if s.types&tNull != 0 && (w.mode != modeFull || depth > maxDepth || s.types == tNull) {
		w.b.WriteString("null")
		return
	}
	if len(s.anyOf) > 0 && s.types == 0 {
		var pick *schema
		for _, b := range s.anyOf {
			r := b.resolve()
			if r.types == tNull && len(r.enum) == 0 {
				if w.mode != modeFull || depth > maxDepth {
					w.b.WriteString("null")
					return
				}
				continue
			}
			if pick == nil {
				pick = b
			}
		}
		if pick == nil {
			w.b.WriteString("null")
			return
		}
		w.value(pick, ptr, depth+1)
		return
	}
	switch {
	case s.types&tObject != 0:
		w.object(s, ptr, depth)
	case s.types&tArray != 0:
		w.array(s, ptr, depth)
	case s.types&tString != 0:
		w.str(s, ptr)
	case s.types&tInteger != 0:
		w.number(s, ptr, s.types&tNumber == 0)
	case s.types&tBool != 0:
		w.b.WriteString(strconv.FormatBool(w.hash(ptr)&1 == 1))
	default:
		w.b.WriteString("null")
	}
}

func (w *gen) object(s *schema, ptr string, depth int) {
	w.b.WriteByte('{')
	first := true
	for _, p := range s.props {
		if !p.required && w.mode != modeFull || depth == 0 && w.drop[p.name] {
			continue
		}
		if !first {
			w.b.WriteByte(',')
		}
		first = false
		writeQuoted(&w.b, p.name)
		w.b.WriteByte(':')
		w.value(p.s, ptr+p.token, depth+1)
	}
	w.b.WriteByte('}')
}

func (w *gen) array(s *schema, ptr string, depth int) {
	// A list has as many items as the contract requires, in every mode:
	// shortening shortens what the items say, never which items there are.
	n := s.minItems
	if s.maxItems >= 0 && n > s.maxItems {
		n = s.maxItems
	}
	if w.emptyList && s.minItems > 0 {
		w.emptyList = false
		n = 0
	}
	w.b.WriteByte('[')
	for i := range n {
		if i > 0 {
			w.b.WriteByte(',')
		}
		if s.items == nil {
			w.b.WriteString("null")
			continue
		}
		w.value(s.items, ptr+"/"+strconv.Itoa(i), depth+1)
	}
	w.b.WriteByte(']')
}

// str writes a string: an example of its format, a match of its pattern,
// or free text quoting the request.
func (w *gen) str(s *schema, ptr string) {
	writeQuoted(&w.b, w.strValue(s, ptr))
}

func (w *gen) strValue(s *schema, ptr string) string {
	if s.format != "" {
		if v, ok := formatExample(s.format, w.hash(ptr)); ok {
			return v
		}
	}
	if s.pattern != nil {
		var b strings.Builder
		genRegexp(&b, s.pattern)
		v := b.String()
		if s.patternRE == nil || s.patternRE.MatchString(v) {
			return v
		}
	}
	q := w.quote(ptr)
	if w.mode == modeFull {
		q = w.quoteOn(ptr) + w.sig
	} else {
		q = strings.TrimRight(cutRunes(q, shortRunes), " ")
	}
	return fitLength(q, s.minLen, s.maxLen)
}

// quote is the sentence of the request a free-text field quotes, chosen
// by its pointer so that a full and a short answer quote the same one.
func (w *gen) quote(ptr string) string {
	if len(w.sents) == 0 {
		return "-"
	}
	sp := w.sents[w.hash(ptr)%uint64(len(w.sents))]
	return cutRunes(w.text[sp.start:sp.end], maxQuote)
}

// quoteOn is a full answer's quotation: the sentence quote chooses and the
// one after it, when there is one.
func (w *gen) quoteOn(ptr string) string {
	if len(w.sents) == 0 {
		return "-"
	}
	i := int(w.hash(ptr) % uint64(len(w.sents)))
	sp := w.sents[i]
	if i+1 < len(w.sents) {
		sp.end = w.sents[i+1].end
	}
	return cutRunes(w.text[sp.start:sp.end], maxQuote)
}

func (w *gen) number(s *schema, ptr string, integer bool) {
	h := w.hash(ptr)
	lo, hi := s.min, s.max
	var v float64
	switch {
	case !math.IsInf(lo, 0) && !math.IsInf(hi, 0):
		v = lo + float64(h%1001)/1000*(hi-lo)
	case !math.IsInf(lo, 0):
		v = lo + float64(h%10)
	case !math.IsInf(hi, 0):
		v = hi - float64(h%10)
	default:
		v = float64(h % 10)
	}
	w.b.WriteString(formatNumber(fitNumber(s, v, integer), integer))
}

// fitNumber moves v into the schema's range, onto its multipleOf grid and,
// for integers, onto an integer.
func fitNumber(s *schema, v float64, integer bool) float64 {
	step := 1.0
	if s.multipleOf > 0 {
		step = s.multipleOf
	}
	snap := integer || s.multipleOf > 0
	if snap {
		v = math.Round(v/step) * step
	}
	below := func(x float64) bool { return x < s.min || s.exclMin && x == s.min }
	above := func(x float64) bool { return x > s.max || s.exclMax && x == s.max }
	for i := 0; i < 4 && below(v); i++ {
		if snap {
			v = math.Floor(s.min/step)*step + step
		} else {
			v = s.min + min(1, (s.max-s.min)/2)
		}
	}
	for i := 0; i < 4 && above(v); i++ {
		if snap {
			v = math.Ceil(s.max/step)*step - step
		} else {
			v = s.max - min(1, (s.max-s.min)/2)
		}
	}
	return v
}

func formatNumber(v float64, integer bool) string {
	if integer || v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// writeOffEnum writes a string outside the schema's enum (the wrong-enum
// fault).
func (w *gen) writeOffEnum(s *schema) {
	for _, c := range [...]string{"unknown", "other_value", "n/a", "none_of_these"} {
		raw, _ := json.Marshal(c)
		if !enumHas(s, raw) {
			w.b.Write(raw)
			return
		}
	}
	w.b.WriteString(`"unknown-1"`)
}

func enumHas(s *schema, raw []byte) bool {
	for _, e := range s.enum {
		if string(e) == string(raw) {
			return true
		}
	}
	return false
}

// writeWrong writes a value the contract allows in place of the expected
// v: another enum value, the other boolean, a neighbouring number, other
// free text, a list with one item more or less. When the contract allows
// no other value (a const, a one-value enum) v is written.
func (w *gen) writeWrong(s *schema, v any, ptr string, depth int) {
	want, _ := json.Marshal(v)
	if len(s.enum) > 0 {
		var others []json.RawMessage
		for _, e := range s.enum {
			if !jsonEqual(e, want) {
				others = append(others, e)
			}
		}
		if len(others) == 0 || s.hasConst {
			w.b.Write(want)
			return
		}
		w.b.Write(others[int(w.g.Float64()*float64(len(others)))])
		return
	}
	switch x := v.(type) {
	case bool:
		w.b.WriteString(strconv.FormatBool(!x))
		return
	case float64, json.Number, int:
		f := toFloat(x)
		integer := s.types&tNumber == 0 && s.types&tInteger != 0
		step := 1.0
		if s.multipleOf > 0 {
			step = s.multipleOf
		}
		alt := f + step
		if alt > s.max || s.exclMax && alt == s.max {
			alt = f - step
		}
		if alt < s.min || s.exclMin && alt == s.min {
			w.b.Write(want)
			return
		}
		w.b.WriteString(formatNumber(alt, integer))
		return
	case string:
		alt := w.strValue(s, ptr+"/~wrong")
		if alt == x {
			w.b.Write(want)
			return
		}
		writeQuoted(&w.b, alt)
		return
	case []any:
		switch {
		case len(x) > s.minItems:
			writeJSONValue(&w.b, x[:len(x)-1])
		case s.maxItems < 0 || len(x) < s.maxItems:
			w.b.Write(want[:len(want)-1])
			if len(x) > 0 {
				w.b.WriteByte(',')
			}
			if s.items == nil {
				w.b.WriteString("null")
			} else {
				w.natural(s.items.resolve(), ptr+"/~wrong", depth+1)
			}
			w.b.WriteByte(']')
		default:
			w.b.Write(want)
		}
		return
	case nil:
		saved := w.mode
		w.mode = modeFull
		w.natural(nonNull(s), ptr, depth)
		w.mode = saved
		return
	}
	w.b.Write(want)
}

// nonNull is s without null among its types, for writing a non-null value
// where null was expected.
func nonNull(s *schema) *schema {
	if s.types&^tNull == 0 && len(s.anyOf) == 0 {
		return s
	}
	c := *s
	c.types &^= tNull
	return &c
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return 0
}
