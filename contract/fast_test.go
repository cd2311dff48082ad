package contract

import (
	"os"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/splitmix"
)

// fastSchemas are contracts within the fast checker's keywords, each with
// a valid answer to mutate.
var fastSchemas = []struct {
	name, schema, valid string
}{
	{"refs and anyOf", `{"$defs": {"item": {"type": "object", "properties": {"k": {"type": "string", "pattern": "^[a-z]+$"}, "n": {"type": "integer"}}, "required": ["k"], "additionalProperties": {"type": ["number", "null"]}}},
	  "type": "object",
	  "properties": {
	    "items": {"type": "array", "items": {"$ref": "#/$defs/item"}, "minItems": 1, "maxItems": 3},
	    "mode": {"const": "on"},
	    "flag": {"enum": [true, null, "x"]},
	    "either": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "array", "items": {"type": "boolean"}}]},
	    "any": true
	  },
	  "required": ["items", "mode", "extra"]}`,
		`{"items": [{"k": "ab", "n": 2, "z": 1.5}], "mode": "on", "flag": null, "either": "abc", "any": {"q": [1, "é"]}, "extra": 0}`},
	{"recursive", `{"$defs": {"node": {"type": "object", "properties": {"v": {"type": "number"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"], "additionalProperties": false}},
	  "$ref": "#/$defs/node"}`,
		`{"v": 1, "kids": [{"v": 2.5e1}, {"v": -0, "kids": []}]}`},
	{"nested strict", `{"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": ["string", "null"], "minLength": 2}}, "required": ["b"], "additionalProperties": false}}, "required": ["a"], "additionalProperties": false}`,
		`{"a": {"b": "xy"}}`},
}

// mutate returns s with a few random edits that keep it close to JSON.
func mutate(g *splitmix.Rand, s string) string {
	bits := []string{`"`, `{`, `}`, `[`, `]`, `,`, `:`, `1`, `.5`, `e3`, `null`, `true`, `false`, `"k"`, `"on"`, `"x"`, `""`,
		`\u00e9`, `\ud800`, "\xff", " ", `"ab"`, `-`, `0`, `"extra":1,`, `{"v":1}`, `"b":"é",`, `\"`, "é"}
	for range 1 + g.Mod(3) {
		i := g.Mod(len(s) + 1)
		switch g.Mod(3) {
		case 0:
			j := min(len(s), i+1+g.Mod(6))
			s = s[:i] + s[j:]
		case 1:
			s = s[:i] + bits[g.Mod(len(bits))] + s[i:]
		default:
			j := min(len(s), i+1+g.Mod(12))
			s = s[:i] + s[i:j] + s[i:]
		}
	}
	return s
}

// TestFastCheckerNeverAcceptsInvalid mutates valid answers of several
// contracts thousands of times: every answer the fast checker accepts must
// be one the schema library finds valid, and it must accept valid answers
// (else the fast path would never be taken).
func TestFastCheckerNeverAcceptsInvalid(t *testing.T) {
	t.Parallel()
	triage, err := os.ReadFile(triagePath)
	if err != nil {
		t.Fatal(err)
	}
	cases := append(fastSchemas[:len(fastSchemas):len(fastSchemas)], struct{ name, schema, valid string }{"triage", string(triage), answer(t, nil)})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(tc.name, []byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if c.fast == nil {
				t.Fatalf("no fast checker for %s", tc.name)
			}
			if !c.fast.accepts(tc.valid) || len(c.slow(tc.valid)) > 0 {
				t.Fatalf("valid answer %s: fast %v, library %v", tc.valid, c.fast.accepts(tc.valid), c.slow(tc.valid))
			}
			g := splitmix.New(7)
			accepted, valid := 0, 0
			for range 20000 {
				s := mutate(g, tc.valid)
				if g.Mod(4) == 0 {
					s = mutate(g, s)
				}
				fast, lib := c.fast.accepts(s), len(c.slow(s)) == 0
				if fast && !lib {
					t.Fatalf("fast checker accepts %q; the library finds %v", s, c.slow(s))
				}
				if fast {
					accepted++
				}
				if lib {
					valid++
				}
			}
			if accepted == 0 || accepted*4 < valid {
				t.Errorf("fast checker accepted %d of the %d valid mutants; want most", accepted, valid)
			}
		})
	}
}

// slow validates content with the library alone, as validate does
// without a fast checker.
func (c *Contract) slow(content string) []Violation {
	fast := c.fast
	defer func() { c.fast = fast }()
	c.fast = nil
	return c.validate(content, "")
}

// TestFastCheckerDeclines: schemas with keywords the fast checker does not
// cover get none, so the library decides every answer.
func TestFastCheckerDeclines(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{
		`{"type": "object", "properties": {"n": {"type": "number", "minimum": 1}}}`,
		`{"type": "object", "patternProperties": {"^x": {"type": "string"}}}`,
		`{"type": "array", "uniqueItems": true}`,
		`{"enum": [1, 2]}`,
		`{"oneOf": [{"type": "string"}, {"type": "null"}]}`,
		`{"type": "object", "required": ["a"], "additionalProperties": false}`,
		`false`,
	} {
		c, err := Load("s", []byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		if c.fast != nil {
			t.Errorf("%s: got a fast checker; want none", strings.Join(strings.Fields(schema), " "))
		}
	}
}
