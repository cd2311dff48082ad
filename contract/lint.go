package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Problem is one way a contract file leaves the strict structured-output
// subset (see Lint).
type Problem struct {
	// Pointer is the RFC 6901 JSON pointer into the schema document of the
	// schema or keyword at fault: "" for the root, "/properties/a/pattern"
	// for a keyword's value, "/properties/a" for a keyword that is missing.
	Pointer string
	// Line is the 1-based line of the value Pointer designates; 0 when it
	// cannot be found.
	Line int
	// Keyword names what is wrong: the JSON Schema keyword at fault
	// ("additionalProperties", "required", "allOf", ...), or "json" for a
	// file that does not parse, or "schema" for one the validator refuses.
	Keyword string
	// Message says what is wrong and how to stay inside the subset.
	Message string
}

// String renders "pointer: keyword: message", writing "(root)" for the root.
func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "(root)"
	}
	return ptr + ": " + p.Keyword + ": " + p.Message
}

// allowedKeywords is the allow-list Lint applies: the JSON Schema keywords
// that strict structured-output APIs (OpenAI's response_format json_schema
// with strict true, and the OpenAI-compatible servers that follow it) accept,
// and that crab's validator enforces on every answer. A keyword outside it is
// a problem even where one server happens to accept it, because a contract
// must mean the same thing to every backend it is sent to.
//
// minLength and maxLength are in the list although not every server
// enforces them while decoding: they are accepted in the schema, and crab
// checks them locally on every answer, which is the contract's point.
var allowedKeywords = []string{
	// identification and annotations ($schema, $id and $defs at the root only)
	"$schema", "$id", "$defs", "$ref", "$comment", "title", "description",
	// any type
	"type", "enum", "const", "anyOf",
	// objects
	"properties", "required", "additionalProperties",
	// arrays
	"items", "minItems", "maxItems",
	// strings
	"pattern", "format", "minLength", "maxLength",
	// numbers
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
}

// allowedFormats are the string formats Lint accepts for "format".
var allowedFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}

// AllowedKeywords returns the JSON Schema keywords Lint accepts: those
// strict structured-output APIs accept and crab's validator enforces on
// every answer. The slice is a copy the caller may change.
func AllowedKeywords() []string { return slices.Clone(allowedKeywords) }

// AllowedFormats returns the string formats Lint accepts for "format", as
// a copy the caller may change.
func AllowedFormats() []string { return slices.Clone(allowedFormats) }

// Limits of the subset that Lint checks.
const (
	// MaxNesting is the deepest nesting of object schemas, the root being 1.
	MaxNesting = 10
	// MaxProperties is the most object properties in the whole schema.
	MaxProperties = 5000
	// MaxEnumValues is the most values in one enum.
	MaxEnumValues = 1000
)

// whyNot explains the common keywords outside the subset.
var whyNot = map[string]string{
	"allOf":                 "strict mode does not combine schemas; merge the branches into one object schema",
	"oneOf":                 "strict mode does not accept oneOf; use anyOf with branches that cannot both match",
	"not":                   "strict mode cannot express a negation; list the allowed values with enum instead",
	"if":                    "conditional schemas (if/then/else) are not accepted; make every field required and constrain values with enum or anyOf",
	"then":                  "conditional schemas (if/then/else) are not accepted; make every field required and constrain values with enum or anyOf",
	"else":                  "conditional schemas (if/then/else) are not accepted; make every field required and constrain values with enum or anyOf",
	"patternProperties":     "objects must list their properties by name; an answer may carry no property the schema does not name",
	"propertyNames":         "objects must list their properties by name",
	"dependentRequired":     "every property is required in strict mode, so dependencies between them cannot be stated",
	"dependentSchemas":      "every property is required in strict mode, so dependencies between them cannot be stated",
	"dependencies":          "every property is required in strict mode, so dependencies between them cannot be stated",
	"unevaluatedProperties": "use additionalProperties: false",
	"unevaluatedItems":      "give arrays one items schema",
	"prefixItems":           "tuples are not accepted; give arrays one items schema",
	"contains":              "array content rules are not accepted; constrain the items schema instead",
	"minContains":           "array content rules are not accepted; constrain the items schema instead",
	"maxContains":           "array content rules are not accepted; constrain the items schema instead",
	"uniqueItems":           "uniqueness cannot be enforced while decoding",
	"minProperties":         "every property is required in strict mode, so property counts are fixed",
	"maxProperties":         "every property is required in strict mode, so property counts are fixed",
	"definitions":           "draft-07 spelling; use $defs at the root (draft 2020-12)",
	"default":               "defaults are not accepted by every strict server; say it in the description",
	"examples":              "examples are not accepted by every strict server; say it in the description",
	"$anchor":               "reference local definitions as #/$defs/NAME",
	"$dynamicRef":           "reference local definitions as #/$defs/NAME",
	"$dynamicAnchor":        "reference local definitions as #/$defs/NAME",
	"$recursiveRef":         "reference local definitions as #/$defs/NAME",
	"$recursiveAnchor":      "reference local definitions as #/$defs/NAME",
	"$vocabulary":           "contracts use the standard 2020-12 vocabulary",
	"contentEncoding":       "content keywords are not enforced; describe the encoding in the description",
	"contentMediaType":      "content keywords are not enforced; describe the media type in the description",
	"contentSchema":         "content keywords are not enforced",
	"readOnly":              "annotation not accepted by every strict server",
	"writeOnly":             "annotation not accepted by every strict server",
	"deprecated":            "annotation not accepted by every strict server",
}

// Draft2020URL is the $schema value Lint accepts.
const Draft2020URL = "https://json-schema.org/draft/2020-12/schema"

var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// keywordTypes says which instance types a type-specific keyword applies to.
var keywordTypes = map[string][]string{
	"properties": {"object"}, "required": {"object"}, "additionalProperties": {"object"},
	"items": {"array"}, "minItems": {"array"}, "maxItems": {"array"},
	"pattern": {"string"}, "format": {"string"}, "minLength": {"string"}, "maxLength": {"string"},
	"minimum": {"number", "integer"}, "maximum": {"number", "integer"}, "exclusiveMinimum": {"number", "integer"},
	"exclusiveMaximum": {"number", "integer"}, "multipleOf": {"number", "integer"},
}

// Lint reports every way the contract file raw leaves the subset of JSON
// Schema that strict structured-output APIs accept; nil means it stays
// inside. The rules:
//
//   - the root is an object schema ("type": "object"), not a union;
//   - every object schema sets "additionalProperties": false and lists every
//     one of its properties in "required"; an optional value is written as a
//     union with null ("type": ["string", "null"]) and still listed;
//   - only the keywords in AllowedKeywords() appear (no allOf, oneOf, not,
//     if/then/else, patternProperties, ...); $schema, $id and $defs only at
//     the root; $schema, when given, is draft 2020-12; $ref points inside
//     the file ("#/$defs/NAME" or "#");
//   - every schema states its type (unless it is an anyOf or a $ref), every
//     array schema has one items schema, type-specific keywords match the
//     type, format is one of AllowedFormats();
//   - every pattern compiles with Go's regexp package (RE2 syntax: no
//     look-around, no backreferences);
//   - at most MaxNesting levels of objects, MaxProperties properties in all
//     and MaxEnumValues values per enum;
//   - the file loads as a JSON Schema (see Load).
//
// Each problem names the JSON pointer and line at fault and says how to fix
// it. Problems are sorted by line, then pointer. Lint never panics.
func Lint(raw []byte) []Problem {
	doc, err := decodeJSON(strings.NewReader(string(raw)), len(raw))
	if err != nil {
		var se *syntaxError
		errors.As(err, &se)
		return []Problem{{Line: lineAt(raw, se.offset), Keyword: "json", Message: "the file is not JSON: " + se.msg}}
	}
	l := &linter{}
	root, ok := doc.(map[string]any)
	if !ok {
		l.add("", "type", "the root must be an object schema ({\"type\": \"object\", ...}), got a JSON "+jsonKind(doc))
	} else {
		l.root(root)
	}
	if _, err := Load("contract", raw); err != nil {
		var le *LoadError
		// A load failure is mostly a consequence of a problem already
		// listed; a failure of its own (e.g. a dangling local $ref) is
		// listed when nothing else explains it.
		if errors.As(err, &le) && (len(l.problems) == 0 || le.Pointer != "" && !l.reported(le.Pointer)) {
			l.add(le.Pointer, "schema", le.Msg)
		}
	}
	for i := range l.problems {
		l.problems[i].Line = lineOfPointer(raw, l.problems[i].Pointer)
	}
	sort.SliceStable(l.problems, func(i, j int) bool {
		a, b := l.problems[i], l.problems[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Pointer < b.Pointer
	})
	return l.problems
}

type linter struct {
	problems []Problem
	props    int
}

func (l *linter) add(ptr, keyword, msg string) {
	l.problems = append(l.problems, Problem{Pointer: ptr, Keyword: keyword, Message: msg})
}

// reported reports whether a problem at ptr (or inside it) is already listed.
func (l *linter) reported(ptr string) bool {
	for _, p := range l.problems {
		if p.Pointer == ptr || ptr != "" && strings.HasPrefix(p.Pointer, ptr+"/") {
			return true
		}
	}
	return false
}

func (l *linter) root(s map[string]any) {
	if v, ok := s["$schema"]; ok {
		if str, _ := v.(string); strings.TrimSuffix(str, "#") != Draft2020URL {
			l.add("/$schema", "$schema", fmt.Sprintf("contracts are JSON Schema draft 2020-12: want %q, got %s", Draft2020URL, display(v)))
		}
	}
	if v, ok := s["$id"]; ok {
		if _, isStr := v.(string); !isStr {
			l.add("/$id", "$id", "want a string, got "+display(v))
		}
	}
	if v, ok := s["$defs"]; ok {
		defs, isObj := v.(map[string]any)
		if !isObj {
			l.add("/$defs", "$defs", "want an object of named schemas, got "+display(v))
		}
		for _, name := range sortedNames(defs) {
			l.schema("/$defs/"+escapeToken(name), defs[name], 0)
		}
	}
	if _, ok := s["anyOf"]; ok {
		l.add("/anyOf", "anyOf", "the root must be one object schema, not a union: move the alternatives into a property")
	}
	if t, ok := s["type"]; !ok {
		l.add("", "type", `the root must say "type": "object"`)
	} else if str, _ := t.(string); str != "object" {
		l.add("/type", "type", fmt.Sprintf(`the root must be an object ("type": "object"), got %s`, display(t)))
	}
	l.body("", s, 0, true)
}

// schema lints a subschema value at ptr; depth counts enclosing objects.
func (l *linter) schema(ptr string, v any, depth int) {
	s, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			l.add(ptr, "schema", fmt.Sprintf("boolean schema %v is not accepted: write an object schema with a type", v))
		} else {
			l.add(ptr, "schema", "want a schema object, got "+display(v))
		}
		return
	}
	for _, k := range []string{"$schema", "$id", "$defs"} {
		if _, ok := s[k]; ok {
			l.add(ptr+"/"+escapeToken(k), k, k+" is allowed at the root only")
		}
	}
	l.body(ptr, s, depth, false)
}

// body lints the keywords of schema object s at ptr.
func (l *linter) body(ptr string, s map[string]any, depth int, isRoot bool) {
	at := func(k string) string { return ptr + "/" + escapeToken(k) }
	for _, k := range sortedNames(s) {
		if slices.Contains(allowedKeywords, k) {
			continue
		}
		msg := "keyword " + strconv.Quote(k) + " is outside the strict subset"
		if why, ok := whyNot[k]; ok {
			msg += ": " + why
		} else {
			msg += " (allowed: " + strings.Join(allowedKeywords, ", ") + ")"
		}
		kw := k
		if kw == "" {
			kw = `""` // an empty key still needs a name
		}
		l.add(at(k), kw, msg)
	}

	types, typed := l.types(ptr, s)
	_, hasRef := s["$ref"]
	_, hasAnyOf := s["anyOf"]
	if !typed && !hasRef && !hasAnyOf && !isRoot {
		l.add(ptr, "type", `no "type": strict mode needs every schema to state its type (or be an anyOf or a $ref)`)
	}
	if len(types) > 0 {
		for _, k := range sortedNames(s) {
			want, ok := keywordTypes[k]
			if !ok || slices.ContainsFunc(want, func(t string) bool { return slices.Contains(types, t) }) {
				continue
			}
			l.add(at(k), k, fmt.Sprintf("%s applies to %s values, but the schema's type is %s", k, strings.Join(want, " and "), strings.Join(types, " or ")))
		}
	}

	if v, ok := s["$ref"]; ok {
		ref, _ := v.(string)
		if ref != "#" && !strings.HasPrefix(ref, "#/$defs/") {
			l.add(at("$ref"), "$ref", fmt.Sprintf(`references must point inside the contract ("#/$defs/NAME" or "#"), got %s`, display(v)))
		}
	}
	if v, ok := s["anyOf"]; ok && !isRoot {
		alts, isArr := v.([]any)
		if !isArr || len(alts) == 0 {
			l.add(at("anyOf"), "anyOf", "want a non-empty array of schemas, got "+display(v))
		}
		for i, a := range alts {
			l.schema(at("anyOf")+"/"+strconv.Itoa(i), a, depth)
		}
	}
	if v, ok := s["enum"]; ok {
		vals, isArr := v.([]any)
		switch {
		case !isArr || len(vals) == 0:
			l.add(at("enum"), "enum", "want a non-empty array of values, got "+display(v))
		case len(vals) > MaxEnumValues:
			l.add(at("enum"), "enum", fmt.Sprintf("%d values; strict mode accepts at most %d", len(vals), MaxEnumValues))
		}
	}
	if v, ok := s["pattern"]; ok {
		if p, isStr := v.(string); !isStr {
			l.add(at("pattern"), "pattern", "want a regular expression string, got "+display(v))
		} else if _, err := regexp.Compile(p); err != nil {
			l.add(at("pattern"), "pattern", fmt.Sprintf("%q is not an RE2 expression (Go regexp syntax: no look-around, no backreferences): %v", p, reErr(err)))
		}
	}
	if v, ok := s["format"]; ok {
		if f, _ := v.(string); !slices.Contains(allowedFormats, f) {
			l.add(at("format"), "format", fmt.Sprintf("format %s is not accepted (want one of %s)", display(v), strings.Join(allowedFormats, ", ")))
		}
	}
	if slices.Contains(types, "object") {
		l.object(ptr, s, depth+1)
	}
	if slices.Contains(types, "array") {
		items, ok := s["items"]
		switch {
		case !ok:
			l.add(ptr, "items", "an array schema needs one items schema saying what each element is")
		default:
			if _, isArr := items.([]any); isArr {
				l.add(at("items"), "items", "tuples (an array of items schemas) are not accepted; give one items schema")
			} else {
				l.schema(at("items"), items, depth)
			}
		}
	}
}

// types reads the type keyword; typed is false when it is absent.
func (l *linter) types(ptr string, s map[string]any) (types []string, typed bool) {
	v, ok := s["type"]
	if !ok {
		return nil, false
	}
	bad := func() ([]string, bool) {
		l.add(ptr+"/type", "type", fmt.Sprintf("want one of %s or an array of them, got %s", strings.Join(jsonTypes, ", "), display(v)))
		return nil, true // typed, badly: no second problem for a missing type
	}
	switch t := v.(type) {
	case string:
		if !slices.Contains(jsonTypes, t) {
			return bad()
		}
		return []string{t}, true
	case []any:
		if len(t) == 0 {
			return bad()
		}
		for _, e := range t {
			str, _ := e.(string)
			if !slices.Contains(jsonTypes, str) {
				return bad()
			}
			if slices.Contains(types, str) {
				l.add(ptr+"/type", "type", fmt.Sprintf("type %q listed twice", str))
				continue
			}
			types = append(types, str)
		}
		return types, true
	}
	return bad()
}

// object lints the object keywords of s; depth is its nesting level.
func (l *linter) object(ptr string, s map[string]any, depth int) {
	at := func(k string) string { return ptr + "/" + escapeToken(k) }
	if depth == MaxNesting+1 {
		l.add(ptr, "type", fmt.Sprintf("objects nested %d deep; strict mode accepts at most %d levels", depth, MaxNesting))
	}
	switch v, ok := s["additionalProperties"]; {
	case !ok:
		l.add(ptr, "additionalProperties", `every object must set "additionalProperties": false, so an answer cannot carry fields the contract does not name`)
	case v != false:
		l.add(at("additionalProperties"), "additionalProperties", fmt.Sprintf(`must be false, got %s: an answer may carry no field the contract does not name`, display(v)))
	}
	var props map[string]any
	if v, ok := s["properties"]; ok {
		var isObj bool
		if props, isObj = v.(map[string]any); !isObj {
			l.add(at("properties"), "properties", "want an object of named schemas, got "+display(v))
		}
	}
	l.props += len(props)
	if l.props > MaxProperties && l.props-len(props) <= MaxProperties {
		l.add(at("properties"), "properties", fmt.Sprintf("more than %d properties in the whole schema", MaxProperties))
	}
	var required []string
	if v, ok := s["required"]; ok {
		arr, isArr := v.([]any)
		if !isArr {
			l.add(at("required"), "required", "want an array of property names, got "+display(v))
		}
		for i, e := range arr {
			name, isStr := e.(string)
			switch {
			case !isStr:
				l.add(at("required")+"/"+strconv.Itoa(i), "required", "want a property name, got "+display(e))
			case slices.Contains(required, name):
				l.add(at("required")+"/"+strconv.Itoa(i), "required", fmt.Sprintf("%q listed twice", name))
			default:
				required = append(required, name)
				if _, defined := props[name]; !defined {
					l.add(at("required")+"/"+strconv.Itoa(i), "required", fmt.Sprintf("%q is required but not defined in properties", name))
				}
			}
		}
	}
	for _, name := range sortedNames(props) {
		pptr := at("properties") + "/" + escapeToken(name)
		if !slices.Contains(required, name) {
			msg := fmt.Sprintf(`property %q is not listed in required: strict mode needs every property required`, name)
			if admitsNull(props[name]) {
				msg += "; it already admits null, so list it"
			} else {
				msg += `; write an optional value as a union with null (e.g. "type": ["string", "null"]) and list it`
			}
			l.add(pptr, "required", msg)
		}
		l.schema(pptr, props[name], depth)
	}
}

// admitsNull reports whether a property schema lets the value be null.
func admitsNull(v any) bool {
	s, ok := v.(map[string]any)
	if !ok {
		return false
	}
	switch t := s["type"].(type) {
	case string:
		if t == "null" {
			return true
		}
	case []any:
		if slices.Contains(t, any("null")) {
			return true
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		return slices.ContainsFunc(alts, admitsNull)
	}
	return false
}

// reErr drops the "error parsing regexp: " prefix the message repeats.
func reErr(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
