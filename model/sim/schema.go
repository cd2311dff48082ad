package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync/atomic"
)

// ErrContract is returned for a contract the simulated models cannot
// answer: one that is not a JSON Schema object they can read.
var ErrContract = errors.New("sim: cannot answer this contract")

// JSON types a schema may allow, as bits.
const (
	tObject uint8 = 1 << iota
	tArray
	tString
	tNumber
	tInteger
	tBool
	tNull
	tAll = tObject | tArray | tString | tNumber | tInteger | tBool | tNull
)

// schema is one compiled (sub)schema of a contract, with what the answer
// generator needs: allowed types, enum or const, properties in document
// order, items and the size and range constraints.
type schema struct {
	types    uint8
	enum     []json.RawMessage // compact JSON of each allowed value
	enumVals []any             // the same values decoded (json.Number for numbers)
	hasConst bool
	props    []prop
	required []string // the required props' names, in document order
	items    *schema
	anyOf    []*schema
	ref      string  // unresolved $ref while compiling
	target   *schema // resolved $ref

	minItems, maxItems int // maxItems -1: none
	minLen, maxLen     int // maxLen -1: none
	pattern            *syntax.Regexp
	patternRE          *regexp.Regexp
	format             string
	min, max           float64 // -Inf/+Inf: none
	exclMin, exclMax   bool
	multipleOf         float64
}

type prop struct {
	name     string
	token    string // "/" and the escaped name: the prop's step in a JSON pointer
	s        *schema
	required bool
}

// resolve follows $ref.
func (s *schema) resolve() *schema {
	for i := 0; s.target != nil && i < 64; i++ {
		s = s.target
	}
	return s
}

// compiled is a contract and its compiled root, remembered per model.
type compiled struct {
	raw  []byte
	root *schema
	err  error
}

// contractCache remembers the last contract compiled. Its zero value is
// ready and it is safe for concurrent use; every call of an experiment
// repeats one contract, so it is compiled once.
type contractCache struct {
	last atomic.Pointer[compiled]
}

func (c *contractCache) get(raw []byte) (*schema, error) {
	if last := c.last.Load(); last != nil && bytes.Equal(last.raw, raw) {
		return last.root, last.err
	}
	root, err := CompileContract(raw)
	c.last.Store(&compiled{raw: bytes.Clone(raw), root: root, err: err})
	return root, err
}

// CheckContract reports whether the simulated models can answer contract
// raw: nil, or an error wrapping ErrContract that says why. Every contract
// that passes `crab check --lint` can be answered.
func CheckContract(raw []byte) error {
	_, err := CompileContract(raw)
	return err
}

// CompileContract compiles a contract for the answer generator.
func CompileContract(raw []byte) (*schema, error) {
	v, err := parseOrdered(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrContract, err)
	}
	root, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("%w: the root is not a JSON object", ErrContract)
	}
	c := &compiler{defs: map[string]*schema{}}
	if d, ok := root.get("$defs").(*object); ok {
		for _, kv := range d.kvs {
			c.defs["#/$defs/"+escapePointer(kv.k)] = &schema{}
		}
		for _, kv := range d.kvs {
			s, err := c.compile(kv.v, "/$defs/"+escapePointer(kv.k))
			if err != nil {
				return nil, err
			}
			d := c.defs["#/$defs/"+escapePointer(kv.k)]
			*d = *s
			if s.ref != "" {
				c.refs = append(c.refs, d)
			}
		}
	}
	rs, err := c.compile(root, "")
	if err != nil {
		return nil, err
	}
	c.defs["#"] = rs
	for _, s := range c.refs {
		t, ok := c.defs[s.ref]
		if !ok {
			return nil, fmt.Errorf("%w: $ref %q: only #/$defs/NAME and # are followed", ErrContract, s.ref)
		}
		s.target = t
	}
	if rs.types&tObject == 0 && len(rs.props) == 0 {
		return nil, fmt.Errorf("%w: the root schema is not an object schema", ErrContract)
	}
	return rs, nil
}

type compiler struct {
	defs map[string]*schema
	refs []*schema
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (c *compiler) compile(v any, at string) (*schema, error) {
	bad := func(format string, args ...any) error {
		ptr := at
		if ptr == "" {
			ptr = "(root)"
		}
		return fmt.Errorf("%w: %s: %s", ErrContract, ptr, fmt.Sprintf(format, args...))
	}
	s := &schema{types: tAll, maxItems: -1, maxLen: -1, min: math.Inf(-1), max: math.Inf(1)}
	o, ok := v.(*object)
	if !ok {
		if x, isBool := v.(bool); isBool {
			if !x {
				return nil, bad("schema false allows no answer")
			}
			return s, nil
		}
		return nil, bad("a schema must be an object")
	}
	if r, ok := o.get("$ref").(string); ok {
		s.ref = r
		c.refs = append(c.refs, s)
		return s, nil
	}
	typed, err := compileType(s, o, bad)
	if err != nil {
		return nil, err
	}
	if err := c.compileValues(s, o, at, typed, bad); err != nil {
		return nil, err
	}
	if err := c.compileChildren(s, o, at, typed); err != nil {
		return nil, err
	}
	if err := compileBounds(s, o, bad); err != nil {
		return nil, err
	}
	return s, nil
}

// badFunc makes a contract error at the schema being compiled.
type badFunc func(format string, args ...any) error

// compileType reads type into s; typed says whether the schema names one.
func compileType(s *schema, o *object, bad badFunc) (typed bool, err error) {
	switch t := o.get("type").(type) {
	case string:
		s.types, typed = typeBit(t), true
	case []any:
		s.types, typed = 0, true
		for _, e := range t {
			if name, ok := e.(string); ok {
				s.types |= typeBit(name)
			}
		}
	}
	if typed && s.types == 0 {
		return false, bad("type names no JSON type")
	}
	if s.types&tNumber != 0 {
		s.types |= tInteger
	}
	return typed, nil
}

// compileValues reads enum, const and anyOf into s.
func (c *compiler) compileValues(s *schema, o *object, at string, typed bool, bad badFunc) error {
	if e, ok := o.get("enum").([]any); ok {
		if len(e) == 0 {
			return bad("enum is empty")
		}
		for _, val := range e {
			s.enum = append(s.enum, compactJSON(val))
			s.enumVals = append(s.enumVals, plain(val))
		}
	}
	if cv, ok := o.getOK("const"); ok {
		s.hasConst = true
		s.enum = []json.RawMessage{compactJSON(cv)}
		s.enumVals = []any{plain(cv)}
	}
	if a, ok := o.get("anyOf").([]any); ok {
		for i, b := range a {
			bs, err := c.compile(b, fmt.Sprintf("%s/anyOf/%d", at, i))
			if err != nil {
				return err
			}
			s.anyOf = append(s.anyOf, bs)
		}
		if !typed {
			s.types = 0
		}
	}
	return nil
}

// compileChildren reads required, properties and items into s.
func (c *compiler) compileChildren(s *schema, o *object, at string, typed bool) error {
	req := map[string]bool{}
	if r, ok := o.get("required").([]any); ok {
		for _, n := range r {
			if name, ok := n.(string); ok {
				req[name] = true
			}
		}
	}
	if p, ok := o.get("properties").(*object); ok {
		if !typed {
			s.types = tObject
		}
		for _, kv := range p.kvs {
			ps, err := c.compile(kv.v, at+"/properties/"+escapePointer(kv.k))
			if err != nil {
				return err
			}
			s.props = append(s.props, prop{name: kv.k, token: "/" + escapePointer(kv.k), s: ps, required: req[kv.k]})
			if req[kv.k] {
				s.required = append(s.required, kv.k)
			}
		}
	}
	if it, ok := o.getOK("items"); ok {
		is, err := c.compile(it, at+"/items")
		if err != nil {
			return err
		}
		s.items = is
	}
	return nil
}

// compileBounds reads the length, count and number bounds, pattern and
// format into s.
func compileBounds(s *schema, o *object, bad badFunc) error {
	num := func(key string) (float64, bool) {
		if n, ok := o.get(key).(json.Number); ok {
			f, err := n.Float64()
			return f, err == nil
		}
		return 0, false
	}
	intOf := func(key string, def int) int {
		if f, ok := num(key); ok && f >= 0 {
			return int(min(f, 1<<20))
		}
		return def
	}
	s.minItems, s.maxItems = intOf("minItems", 0), intOf("maxItems", -1)
	s.minLen, s.maxLen = intOf("minLength", 0), intOf("maxLength", -1)
	if s.maxItems >= 0 && s.maxItems < s.minItems || s.maxLen >= 0 && s.maxLen < s.minLen {
		return bad("a maximum below its minimum allows no answer")
	}
	if f, ok := num("minimum"); ok {
		s.min = f
	}
	if f, ok := num("maximum"); ok {
		s.max = f
	}
	if f, ok := num("exclusiveMinimum"); ok && f >= s.min {
		s.min, s.exclMin = f, true
	}
	if f, ok := num("exclusiveMaximum"); ok && f <= s.max {
		s.max, s.exclMax = f, true
	}
	if f, ok := num("multipleOf"); ok && f > 0 {
		s.multipleOf = f
	}
	if p, ok := o.get("pattern").(string); ok {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			return bad("pattern %q: %v", p, err)
		}
		s.pattern = re.Simplify()
		s.patternRE, _ = regexp.Compile(p)
	}
	if f, ok := o.get("format").(string); ok {
		s.format = f
	}
	return nil
}

func typeBit(name string) uint8 {
	switch name {
	case "object":
		return tObject
	case "array":
		return tArray
	case "string":
		return tString
	case "number":
		return tNumber
	case "integer":
		return tInteger
	case "boolean":
		return tBool
	case "null":
		return tNull
	}
	return 0
}

// object is a JSON object with its keys in document order: the answer
// writes properties in the order the contract lists them.
type object struct{ kvs []kv }

type kv struct {
	k string
	v any
}

func (o *object) getOK(k string) (any, bool) {
	for i := len(o.kvs) - 1; i >= 0; i-- {
		if o.kvs[i].k == k {
			return o.kvs[i].v, true
		}
	}
	return nil, false
}

func (o *object) get(k string) any { v, _ := o.getOK(k); return v }

// parseOrdered decodes one JSON value keeping object key order: objects
// become *object, arrays []any, numbers json.Number.
func parseOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := orderedValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

func orderedValue(dec *json.Decoder, depth int) (any, error) {
	if depth > 256 {
		return nil, errors.New("nested too deeply")
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := t.(type) {
	case json.Delim:
		switch d {
		case '{':
			o := &object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := orderedValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.kvs = append(o.kvs, kv{kt.(string), v})
			}
			_, err := dec.Token()
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := orderedValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", d)
	}
	return t, nil
}

// plain turns an ordered value into what encoding/json with UseNumber
// decodes (map[string]any for objects).
func plain(v any) any {
	switch x := v.(type) {
	case *object:
		m := make(map[string]any, len(x.kvs))
		for _, e := range x.kvs {
			m[e.k] = plain(e.v)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// compactJSON writes an ordered value as compact JSON.
func compactJSON(v any) json.RawMessage {
	var b strings.Builder
	writeOrdered(&b, v)
	return json.RawMessage(b.String())
}

func writeOrdered(b *strings.Builder, v any) {
	switch x := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, e := range x.kvs {
			if i > 0 {
				b.WriteByte(',')
			}
			writeQuoted(b, e.k)
			b.WriteByte(':')
			writeOrdered(b, e.v)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeOrdered(b, e)
		}
		b.WriteByte(']')
	default:
		writeJSONValue(b, v)
	}
}
