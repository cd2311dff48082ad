package contract

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestLintShippedContract(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(triagePath)
	if err != nil {
		t.Fatal(err)
	}
	if got := Lint(raw); len(got) != 0 {
		t.Errorf("Lint(triage.schema.json) = %v; want no problems", got)
	}
}

// lintFound is a problem's pointer and keyword, what the table compares.
type lintFound struct{ Pointer, Keyword string }

// obj wraps properties into an otherwise strict root object.
func obj(props, required string) string {
	return `{"type": "object", "properties": {` + props + `}, "required": [` + required + `], "additionalProperties": false}`
}

func TestLint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		want []lintFound
	}{
		{name: "minimal strict object", raw: obj(`"a": {"type": "string"}`, `"a"`)},
		{name: "optional as union with null", raw: obj(`"a": {"type": ["string", "null"]}`, `"a"`)},
		{name: "anyOf with null branch", raw: obj(`"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}`, `"a"`)},
		{name: "local $ref into $defs", raw: `{"type": "object", "$defs": {"s": {"type": "string", "minLength": 1}},
			"properties": {"a": {"$ref": "#/$defs/s"}}, "required": ["a"], "additionalProperties": false}`},
		{name: "nested strict object", raw: obj(`"a": {"type": "object", "properties": {"b": {"type": "integer", "minimum": 0}}, "required": ["b"], "additionalProperties": false}`, `"a"`)},
		{name: "RE2 pattern and format", raw: obj(`"a": {"type": "string", "pattern": "^[a-z_]+$"}, "b": {"type": "string", "format": "date-time"}`, `"a", "b"`)},

		{name: "not JSON", raw: `{"type": "object",`, want: []lintFound{{"", "json"}}},
		{name: "root is an array", raw: `[]`, want: []lintFound{{"", "type"}}},
		{name: "root not an object type", raw: `{"type": "array", "items": {"type": "string"}}`, want: []lintFound{{"/type", "type"}}},
		{name: "root without type", raw: `{"properties": {}, "additionalProperties": false}`, want: []lintFound{{"", "type"}}},
		{name: "root union", raw: `{"type": "object", "anyOf": [{"type": "object"}], "additionalProperties": false}`, want: []lintFound{{"/anyOf", "anyOf"}}},
		{name: "additionalProperties missing", raw: `{"type": "object", "properties": {}}`, want: []lintFound{{"", "additionalProperties"}}},
		{name: "additionalProperties true", raw: `{"type": "object", "additionalProperties": true}`, want: []lintFound{{"/additionalProperties", "additionalProperties"}}},
		{name: "additionalProperties schema", raw: `{"type": "object", "additionalProperties": {"type": "string"}}`, want: []lintFound{{"/additionalProperties", "additionalProperties"}}},
		{name: "optional property", raw: obj(`"a": {"type": "string"}, "b": {"type": "string"}`, `"a"`), want: []lintFound{{"/properties/b", "required"}}},
		{name: "required names an undefined property", raw: obj(`"a": {"type": "string"}`, `"a", "zz"`), want: []lintFound{{"/required/1", "required"}}},
		{name: "required listed twice", raw: obj(`"a": {"type": "string"}`, `"a", "a"`), want: []lintFound{{"/required/1", "required"}}},
		{name: "nested object not strict", raw: obj(`"a": {"type": "object", "properties": {"b": {"type": "string"}}}`, `"a"`),
			want: []lintFound{{"/properties/a", "additionalProperties"}, {"/properties/a/properties/b", "required"}}},
		{name: "allOf", raw: obj(`"a": {"type": "string", "allOf": [{"minLength": 1}]}`, `"a"`), want: []lintFound{{"/properties/a/allOf", "allOf"}}},
		{name: "oneOf", raw: obj(`"a": {"type": "string", "oneOf": [{"minLength": 1}]}`, `"a"`), want: []lintFound{{"/properties/a/oneOf", "oneOf"}}},
		{name: "not", raw: obj(`"a": {"type": "string", "not": {"const": "x"}}`, `"a"`), want: []lintFound{{"/properties/a/not", "not"}}},
		{name: "if then else", raw: obj(`"a": {"type": "string", "if": {"const": "x"}, "then": {"minLength": 2}, "else": {"minLength": 1}}`, `"a"`),
			want: []lintFound{{"/properties/a/else", "else"}, {"/properties/a/if", "if"}, {"/properties/a/then", "then"}}},
		{name: "unknown keyword", raw: obj(`"a": {"type": "string", "x-color": "red"}`, `"a"`), want: []lintFound{{"/properties/a/x-color", "x-color"}}},
		{name: "look-around pattern", raw: obj(`"a": {"type": "string", "pattern": "(?=x)"}`, `"a"`), want: []lintFound{{"/properties/a/pattern", "pattern"}}},
		{name: "backreference pattern", raw: obj(`"a": {"type": "string", "pattern": "(a)\\1"}`, `"a"`), want: []lintFound{{"/properties/a/pattern", "pattern"}}},
		{name: "pattern not a string", raw: obj(`"a": {"type": "string", "pattern": 5}`, `"a"`), want: []lintFound{{"/properties/a/pattern", "pattern"}}},
		{name: "unknown format", raw: obj(`"a": {"type": "string", "format": "uri"}`, `"a"`), want: []lintFound{{"/properties/a/format", "format"}}},
		{name: "no type", raw: obj(`"a": {"enum": ["x"]}`, `"a"`), want: []lintFound{{"/properties/a", "type"}}},
		{name: "bad type name", raw: obj(`"a": {"type": "text"}`, `"a"`), want: []lintFound{{"/properties/a/type", "type"}}},
		{name: "keyword for another type", raw: obj(`"a": {"type": "string", "minItems": 1}`, `"a"`), want: []lintFound{{"/properties/a/minItems", "minItems"}}},
		{name: "array without items", raw: obj(`"a": {"type": "array"}`, `"a"`), want: []lintFound{{"/properties/a", "items"}}},
		{name: "tuple items", raw: obj(`"a": {"type": "array", "items": [{"type": "string"}]}`, `"a"`), want: []lintFound{{"/properties/a/items", "items"}}},
		{name: "boolean subschema", raw: obj(`"a": true`, `"a"`), want: []lintFound{{"/properties/a", "schema"}}},
		{name: "empty enum", raw: obj(`"a": {"type": "string", "enum": []}`, `"a"`), want: []lintFound{{"/properties/a/enum", "enum"}}},
		{name: "external ref", raw: obj(`"a": {"$ref": "other.json#/x"}`, `"a"`), want: []lintFound{{"/properties/a/$ref", "$ref"}}},
		{name: "dangling local ref", raw: obj(`"a": {"$ref": "#/$defs/missing"}`, `"a"`), want: []lintFound{{"", "schema"}}},
		{name: "$defs below the root", raw: obj(`"a": {"type": "string", "$defs": {}}`, `"a"`), want: []lintFound{{"/properties/a/$defs", "$defs"}}},
		{name: "draft-07", raw: `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": false}`, want: []lintFound{{"/$schema", "$schema"}}},
		{name: "definitions", raw: `{"type": "object", "definitions": {}, "additionalProperties": false}`, want: []lintFound{{"/definitions", "definitions"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ps := Lint([]byte(tt.raw))
			got := make([]lintFound, len(ps))
			for i, p := range ps {
				got[i] = lintFound{p.Pointer, p.Keyword}
				if p.Message == "" {
					t.Errorf("problem %+v has no message", p)
				}
			}
			slices.SortFunc(got, func(a, b lintFound) int { return strings.Compare(a.Pointer+" "+a.Keyword, b.Pointer+" "+b.Keyword) })
			if !slices.Equal(got, tt.want) {
				t.Errorf("Lint = %v; want %v", ps, tt.want)
			}
		})
	}
}

func TestLintLimits(t *testing.T) {
	t.Parallel()
	deep := `{"type": "string"}`
	for range MaxNesting {
		deep = `{"type": "object", "properties": {"a": ` + deep + `}, "required": ["a"], "additionalProperties": false}`
	}
	if got := Lint([]byte(deep)); len(got) != 0 {
		t.Errorf("%d levels of objects: %v; want no problems", MaxNesting, got)
	}
	deeper := `{"type": "object", "properties": {"a": ` + deep + `}, "required": ["a"], "additionalProperties": false}`
	got := Lint([]byte(deeper))
	if len(got) != 1 || got[0].Keyword != "type" || !strings.Contains(got[0].Message, "nested") {
		t.Errorf("%d levels of objects: %v; want one nesting problem", MaxNesting+1, got)
	}

	vals := make([]string, MaxEnumValues+1)
	for i := range vals {
		vals[i] = `"v` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `"`
	}
	raw := obj(`"a": {"type": "string", "enum": [`+strings.Join(vals, ",")+`]}`, `"a"`)
	if got := Lint([]byte(raw)); len(got) != 1 || got[0].Pointer != "/properties/a/enum" {
		t.Errorf("%d enum values: %v; want one problem at /properties/a/enum", len(vals), got)
	}
}

// TestLintLinesAndMessages checks that problems carry the line of the value
// at fault and explain the fix.
func TestLintLinesAndMessages(t *testing.T) {
	t.Parallel()
	raw := `{
  "type": "object",
  "properties": {
    "category": {"type": "string", "enum": ["a", "b"]},
    "note": {
      "type": "string",
      "pattern": "(?<!x)y"
    }
  },
  "required": ["category"],
  "additionalProperties": false
}`
	want := []string{
		`5 /properties/note: required: property "note" is not listed in required: strict mode needs every property required; write an optional value as a union with null (e.g. "type": ["string", "null"]) and list it`,
		"7 /properties/note/pattern: pattern: \"(?<!x)y\" is not an RE2 expression (Go regexp syntax: no look-around, no backreferences): invalid named capture: `(?<!x)y`",
	}
	var got []string
	for _, p := range Lint([]byte(raw)) {
		got = append(got, strconv.Itoa(p.Line)+" "+p.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// FuzzLint feeds arbitrary bytes to Lint: it must never panic, and every
// problem must carry a keyword, a message and a pointer.
func FuzzLint(f *testing.F) {
	raw, err := os.ReadFile(triagePath)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(raw), "", "{}", "[]", "null", `{"type": ["object", 5]}`, obj(`"a": {"type": "array", "items": [true]}`, `"a"`),
		`{"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"], "additionalProperties": false}`, strings.Repeat(`{"a":`, 500)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, p := range Lint(raw) {
			if p.Keyword == "" || p.Message == "" {
				t.Errorf("problem without keyword or message: %+v", p)
			}
			if p.Pointer != "" && !strings.HasPrefix(p.Pointer, "/") {
				t.Errorf("pointer %q is not a JSON pointer", p.Pointer)
			}
		}
	})
}
