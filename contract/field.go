package contract

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrNoField is wrapped by the error Field returns for a JSON pointer the
// contract does not describe.
var ErrNoField = errors.New("contract: no such field")

// Field is the part of a contract that describes one field of an answer:
// the sub-schema at a JSON pointer such as "/details/priority". Tasks'
// expected values are checked against it, and an import coerces text to
// its types.
type Field struct {
	Pointer string
	schemas []*jsonschema.Schema // every schema the value must meet (the field's own, its $ref and allOf targets)
	c       *Contract
}

// Field finds the field at ptr ("" is the whole answer). An object
// member must be named in properties, or admitted by an additionalProperties
// schema; an array element by index must be admitted by items or
// prefixItems. $ref, allOf, and anyOf/oneOf alternatives (such as a union
// with null) are followed. The error wraps ErrNoField and names the first
// token the contract does not have.
func (c *Contract) Field(ptr string) (*Field, error) {
	toks := splitPointer(ptr)
	if toks == nil {
		return nil, fmt.Errorf("%w: %q is not a JSON pointer (want \"\" or /name/...)", ErrNoField, ptr)
	}
	cur := []*jsonschema.Schema{c.schema}
	at := ""
	for _, tok := range toks {
		at += "/" + escapeToken(tok)
		var next []*jsonschema.Schema
		for _, s := range expand(cur) {
			next = append(next, child(s, tok)...)
		}
		if len(next) == 0 {
			return nil, fmt.Errorf("%w: the contract has no field %s", ErrNoField, at)
		}
		cur = next
	}
	return &Field{Pointer: ptr, schemas: cur, c: c}, nil
}

// expand lists s and every schema it reaches through $ref, allOf, anyOf and
// oneOf, a few levels deep: the places a member or item may be declared.
func expand(ss []*jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	var walk func(s *jsonschema.Schema, depth int)
	walk = func(s *jsonschema.Schema, depth int) {
		if s == nil || depth > 8 || slices.Contains(out, s) {
			return
		}
		out = append(out, s)
		walk(s.Ref, depth+1)
		for _, group := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
			for _, a := range group {
				walk(a, depth+1)
			}
		}
	}
	for _, s := range ss {
		walk(s, 0)
	}
	return out
}

// child is the schema of member or element tok of values s describes.
func child(s *jsonschema.Schema, tok string) []*jsonschema.Schema {
	if p, ok := s.Properties[tok]; ok {
		return []*jsonschema.Schema{p}
	}
	if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok && s.Properties != nil {
		return []*jsonschema.Schema{ap}
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || strconv.Itoa(i) != tok {
		return nil
	}
	if i < len(s.PrefixItems) {
		return []*jsonschema.Schema{s.PrefixItems[i]}
	}
	if s.Items2020 != nil {
		return []*jsonschema.Schema{s.Items2020}
	}
	if it, ok := s.Items.(*jsonschema.Schema); ok {
		return []*jsonschema.Schema{it}
	}
	return nil
}

// Check validates v — a decoded JSON value, numbers as json.Number or
// float64 — against the field's schema and returns every violation, with
// pointers inside the value ("" for the value itself); nil means v is a
// value the contract admits at this field.
func (f *Field) Check(v any) []Violation {
	for _, s := range f.schemas {
		err := s.Validate(v)
		if err == nil {
			continue
		}
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return []Violation{{Rule: "schema", Message: err.Error()}}
		}
		if vs := flatten(verr, f.c.printer); len(vs) > 0 {
			return vs
		}
		return []Violation{{Rule: "schema", Message: verr.Error()}}
	}
	return nil
}

// Types lists the JSON types the field admits ("string", "integer",
// "number", "boolean", "array", "object", "null"), following $ref and
// alternatives; empty when the contract does not restrict the type.
func (f *Field) Types() []string {
	var out []string
	for _, s := range expand(f.schemas) {
		if s.Types == nil {
			continue
		}
		for _, t := range s.Types.ToStrings() {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// Admits reports whether the field admits JSON type t (see Types); a field
// without a type restriction admits every type.
func (f *Field) Admits(t string) bool {
	ts := f.Types()
	return len(ts) == 0 || slices.Contains(ts, t) || (t == "integer" && slices.Contains(ts, "number"))
}

// IsObject reports whether the field is an object whose members the
// contract names, so a partial expected value can address them one by one.
func (f *Field) IsObject() bool {
	for _, s := range expand(f.schemas) {
		if len(s.Properties) > 0 {
			return true
		}
	}
	return false
}

// Items is the field describing one element of an array field, or nil when
// the field is not an array with an items schema.
func (f *Field) Items() *Field {
	var out []*jsonschema.Schema
	for _, s := range expand(f.schemas) {
		if s.Items2020 != nil {
			out = append(out, s.Items2020)
		} else if it, ok := s.Items.(*jsonschema.Schema); ok {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return &Field{Pointer: f.Pointer + "/0", schemas: out, c: f.c}
}

// DecodeAnswer parses an answer as exactly one JSON value into the tree
// encoding/json builds with UseNumber (objects as map[string]any, numbers
// as json.Number) — the same decoding Validate uses, so graders read an
// answer as the contract saw it.
func DecodeAnswer(content string) (any, error) { return decodeAnswer(content) }
