package contract

import (
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/crab-testbed/crab/internal/jsonw"
)

// A fast checker accepts, straight from an answer's text, the answers it
// can prove valid, and leaves every other answer to the schema library:
// an answer it accepts is one the library finds valid, so the violations
// of any answer (and whether there are any) are the library's, as before.
// It covers the keywords strict structured-output contracts use (type,
// enum, const, properties, required, additionalProperties, items,
// min/maxItems, min/maxLength, pattern, format, $ref, anyOf) and reads
// every value a keyword constrains with the lexer parseLean uses, so it
// reads such a value as parseLean does; a schema using any other keyword
// gets no fast checker.
// Validating an answer is on every request's path, and the library's walk
// over a decoded tree costs tens of allocations an answer.

// fastNode is one compiled schema of the fast checker.
type fastNode struct {
	anything bool     // the schema true: any value
	types    fastType // allowed types; 0: any type
	enum     []any    // enum or const values (string, bool or nil); nil: no enum
	hasEnum  bool
	format   *jsonschema.Format
	pattern  jsonschema.Regexp
	minLen   int // -1: none
	maxLen   int // -1: none
	props    []fastProp
	required uint64    // bit i: props[i] is required
	addl     int       // addlAny, addlNone or addlSchema
	addlNode *fastNode // the additionalProperties schema under addlSchema
	items    *fastNode // nil: any items
	minItems int       // -1: none
	maxItems int       // -1: none
	ref      *fastNode // $ref, applied besides the node's own keywords
	anyOf    []*fastNode
}

type fastProp struct {
	name string
	node *fastNode
}

type fastType uint8

const (
	ftNull fastType = 1 << iota
	ftBool
	ftNumber
	ftInteger
	ftString
	ftArray
	ftObject
)

var fastTypeNames = map[string]fastType{
	"null": ftNull, "boolean": ftBool, "number": ftNumber, "integer": ftInteger,
	"string": ftString, "array": ftArray, "object": ftObject,
}

const (
	addlAny = iota
	addlNone
	addlSchema
)

// maxFastProps bounds the properties of one object schema (a bit each).
const maxFastProps = 64

// fastFields are the fields of jsonschema.Schema the fast checker
// handles, or that do not change what is valid (location, annotations,
// anchors that only a dynamic or recursive reference would follow). A
// schema with any other field set gets no fast checker.
var fastFields = map[string]bool{
	"up": true, "resource": true, "dynamicAnchors": true, "allPropsEvaluated": true,
	"allItemsEvaluated": true, "numItemsEvaluated": true,
	"DraftVersion": true, "Location": true, "ID": true, "Anchor": true,
	"RecursiveAnchor": true, "DynamicAnchor": true,
	"Bool": true, "Ref": true, "Types": true, "Enum": true, "Const": true, "AnyOf": true, "Format": true,
	"Required": true, "Properties": true, "AdditionalProperties": true,
	"MinItems": true, "MaxItems": true, "Items2020": true,
	"MinLength": true, "MaxLength": true, "Pattern": true,
	"Title": true, "Description": true, "Default": true, "Comment": true,
	"ReadOnly": true, "WriteOnly": true, "Examples": true, "Deprecated": true,
}

// compileFast builds the fast checker of sch; nil when sch uses a keyword
// it does not cover.
func compileFast(sch *jsonschema.Schema) *fastNode {
	seen := map[*jsonschema.Schema]*fastNode{}
	n, ok := fastCompile(sch, seen)
	if !ok {
		return nil
	}
	return n
}

func fastCompile(s *jsonschema.Schema, seen map[*jsonschema.Schema]*fastNode) (*fastNode, bool) {
	if s == nil {
		return nil, false
	}
	if n, ok := seen[s]; ok {
		return n, true // a recursive $ref: the node is being built
	}
	n := &fastNode{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
	seen[s] = n
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); !fastFields[f.Name] && !v.Field(i).IsZero() {
			return nil, false
		}
	}
	if s.Bool != nil {
		if !*s.Bool {
			return nil, false
		}
		n.anything = true
		return n, true
	}
	if s.Format != nil && s.Format.Name == "regex" {
		return nil, false // validated by the compiler's regexp engine, not Format.Validate
	}
	n.format, n.pattern = s.Format, s.Pattern
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			ft, ok := fastTypeNames[t]
			if !ok {
				return nil, false
			}
			n.types |= ft
		}
		if n.types == 0 {
			return nil, false
		}
	}
	if s.Enum != nil {
		n.hasEnum, n.enum = true, s.Enum.Values
	}
	if s.Const != nil {
		if n.hasEnum {
			return nil, false
		}
		n.hasEnum, n.enum = true, []any{*s.Const}
	}
	for _, e := range n.enum {
		switch e.(type) {
		case string, bool, nil:
		default:
			return nil, false
		}
	}
	if s.MinLength != nil {
		n.minLen = *s.MinLength
	}
	if s.MaxLength != nil {
		n.maxLen = *s.MaxLength
	}
	if s.MinItems != nil {
		n.minItems = *s.MinItems
	}
	if s.MaxItems != nil {
		n.maxItems = *s.MaxItems
	}
	if s.Items2020 != nil {
		items, ok := fastCompile(s.Items2020, seen)
		if !ok {
			return nil, false
		}
		n.items = items
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		if !a {
			n.addl = addlNone
		}
	case *jsonschema.Schema:
		an, ok := fastCompile(a, seen)
		if !ok {
			return nil, false
		}
		n.addl, n.addlNode = addlSchema, an
	default:
		return nil, false
	}
	for name, ps := range s.Properties {
		pn, ok := fastCompile(ps, seen)
		if !ok {
			return nil, false
		}
		n.props = append(n.props, fastProp{name, pn})
	}
	for _, name := range s.Required {
		i := n.prop(name)
		if i < 0 {
			// Required but not a listed property: its value is checked as
			// additionalProperties says.
			var pn *fastNode
			switch n.addl {
			case addlNone:
				return nil, false
			case addlSchema:
				pn = n.addlNode
			default:
				pn = &fastNode{anything: true}
			}
			n.props = append(n.props, fastProp{name, pn})
			i = len(n.props) - 1
		}
		if i >= maxFastProps {
			return nil, false
		}
		n.required |= 1 << i
	}
	if len(n.props) > maxFastProps {
		return nil, false
	}
	if s.Ref != nil {
		r, ok := fastCompile(s.Ref, seen)
		if !ok {
			return nil, false
		}
		n.ref = r
	}
	for _, b := range s.AnyOf {
		bn, ok := fastCompile(b, seen)
		if !ok {
			return nil, false
		}
		n.anyOf = append(n.anyOf, bn)
	}
	return n, true
}

func (n *fastNode) prop(name string) int {
	for i := range n.props {
		if n.props[i].name == name {
			return i
		}
	}
	return -1
}

// accepts reports whether content is certainly valid under n: exactly one
// JSON value that encoding/json parses and that meets every keyword. False
// means nothing: the library decides.
func (n *fastNode) accepts(content string) bool {
	l := jsonw.New(content, 0)
	return n.value(&l, 0) && l.End()
}

// value checks the value at l against n and passes over it.
func (n *fastNode) value(l *jsonw.Lexer, depth int) bool {
	if n.ref == nil && len(n.anyOf) == 0 {
		return n.own(l, depth)
	}
	start := *l
	if !n.own(l, depth) {
		return false
	}
	end := *l
	if n.ref != nil {
		*l = start
		if !n.ref.value(l, depth) {
			return false
		}
	}
	if len(n.anyOf) > 0 {
		matched := false
		for _, b := range n.anyOf {
			*l = start
			if b.value(l, depth) {
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	}
	*l = end
	return true
}

// own checks the value at l against n's own keywords (not $ref, not anyOf).
func (n *fastNode) own(l *jsonw.Lexer, depth int) bool {
	if n.anything {
		return skip(l, depth)
	}
	switch l.Peek() {
	case '{':
		return n.allows(ftObject) && !n.hasEnum && n.format == nil && depth < maxLeanDepth && n.object(l, depth+1)
	case '[':
		return n.allows(ftArray) && !n.hasEnum && n.format == nil && depth < maxLeanDepth && n.array(l, depth+1)
	case '"':
		s, ok := l.String()
		return ok && n.allows(ftString) && n.str(s)
	case 't':
		return l.Literal("true") && n.allows(ftBool) && n.format == nil && n.inEnum(true)
	case 'f':
		return l.Literal("false") && n.allows(ftBool) && n.format == nil && n.inEnum(false)
	case 'n':
		return l.Literal("null") && n.allows(ftNull) && n.format == nil && n.inEnum(nil)
	}
	t, ok := l.Number()
	if !ok || n.hasEnum || n.format != nil {
		return false
	}
	switch {
	case n.types == 0 || n.types&ftNumber != 0:
		return true
	case n.types&ftInteger != 0:
		return !strings.ContainsAny(t, ".eE") // an integer whatever its reading
	}
	return false
}

func (n *fastNode) allows(t fastType) bool { return n.types == 0 || n.types&t != 0 }

func (n *fastNode) inEnum(v any) bool {
	if !n.hasEnum {
		return true
	}
	for _, e := range n.enum {
		if e == v {
			return true
		}
	}
	return false
}

func (n *fastNode) str(s string) bool {
	if n.hasEnum {
		found := false
		for _, e := range n.enum {
			if es, ok := e.(string); ok && es == s {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if n.minLen >= 0 || n.maxLen >= 0 {
		c := utf8.RuneCountInString(s)
		if n.minLen >= 0 && c < n.minLen || n.maxLen >= 0 && c > n.maxLen {
			return false
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return false
	}
	return n.format == nil || n.format.Validate(s) == nil
}

func (n *fastNode) object(l *jsonw.Lexer, depth int) bool {
	var seen uint64
	ok := l.Object(func(k string) bool {
		i := n.prop(k)
		switch {
		case i >= 0:
			seen |= 1 << i
			return n.props[i].node.value(l, depth)
		case n.addl == addlNone:
			return false
		case n.addl == addlSchema:
			return n.addlNode.value(l, depth)
		}
		return skip(l, depth)
	})
	return ok && seen&n.required == n.required
}

func (n *fastNode) array(l *jsonw.Lexer, depth int) bool {
	count := 0
	ok := l.Array(func() bool {
		count++
		if n.items == nil {
			return skip(l, depth)
		}
		return n.items.value(l, depth)
	})
	return ok && (n.minItems < 0 || count >= n.minItems) && (n.maxItems < 0 || count <= n.maxItems)
}

// skip passes over a value no keyword constrains. It checks the JSON
// grammar only, as encoding/json does (a string is not decoded): such a
// value, whatever its strings hold, is valid, and an answer that parseLean
// refuses for it is decoded by encoding/json and validated the same.
// Nesting is bounded as parseLean bounds it.
func skip(l *jsonw.Lexer, depth int) bool { return l.Skip(maxLeanDepth - depth) }
