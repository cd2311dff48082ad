package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

const triagePath = "../fixtures/triage.schema.json"

// loadTriage loads the shipped triage contract.
func loadTriage(tb testing.TB) *Contract {
	tb.Helper()
	raw, err := os.ReadFile(triagePath)
	if err != nil {
		tb.Fatalf("read %s: %v", triagePath, err)
	}
	c, err := Load("triage.schema.json", raw)
	if err != nil {
		tb.Fatalf("Load(triage.schema.json): %v", err)
	}
	return c
}

func TestTriageSchemaLoads(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(triagePath)
	if err != nil {
		t.Fatal(err)
	}
	c := loadTriage(t)

	wantReq := []string{"category", "reason", "evidence", "risk_flags", "suggested_action", "needs_human_review", "background"}
	if got := c.Required(); !slices.Equal(got, wantReq) {
		t.Errorf("Required() = %v; want %v", got, wantReq)
	}
	sum := sha256.Sum256(raw)
	if got, want := c.Hash(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Hash() = %s; want %s", got, want)
	}
	if got := c.Name(); got != "triage.schema.json" {
		t.Errorf("Name() = %q; want %q", got, "triage.schema.json")
	}
	if got := c.Raw(); string(got) != string(raw) {
		t.Errorf("Raw() differs from the file: got %d bytes; want %d", len(got), len(raw))
	}
	r := c.Required()
	r[0] = "changed"
	if got := c.Required()[0]; got != "category" {
		t.Errorf("Required()[0] after changing a returned copy = %q; want %q", got, "category")
	}
}

// TestTriageSchemaStrictSubset checks the shipped file stays inside the
// subset strict structured-output APIs accept.
func TestTriageSchemaStrictSubset(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(triagePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := doc["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
		t.Errorf("$schema = %v; want %v", got, want)
	}
	for _, k := range []string{"$id", "title", "description"} {
		if s, _ := doc[k].(string); s == "" {
			t.Errorf("root %s missing or empty", k)
		}
	}
	var walk func(ptr string, s map[string]any)
	walk = func(ptr string, s map[string]any) {
		for _, bad := range []string{"allOf", "not", "if", "then", "else", "oneOf", "patternProperties", "$ref"} {
			if _, ok := s[bad]; ok {
				t.Errorf("%s: keyword %q outside the strict subset", ptr, bad)
			}
		}
		if s["type"] == "object" {
			if got := s["additionalProperties"]; got != false {
				t.Errorf("%s: additionalProperties = %v; want false", ptr, got)
			}
			props, _ := s["properties"].(map[string]any)
			var req []string
			for _, r := range s["required"].([]any) {
				req = append(req, r.(string))
			}
			for name, p := range props {
				if !slices.Contains(req, name) {
					t.Errorf("%s: property %q not listed in required", ptr, name)
				}
				ps := p.(map[string]any)
				if d, _ := ps["description"].(string); d == "" {
					t.Errorf("%s/properties/%s: no description", ptr, name)
				}
				walk(ptr+"/properties/"+name, ps)
			}
			if len(req) != len(props) {
				t.Errorf("%s: %d required; want one per property (%d)", ptr, len(req), len(props))
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(ptr+"/items", items)
		}
	}
	if doc["type"] != "object" {
		t.Errorf("root type = %v; want object", doc["type"])
	}
	walk("", doc)

	props := doc["properties"].(map[string]any)
	bg := props["background"].(map[string]any)["type"]
	if got, _ := json.Marshal(bg); string(got) != `["string","null"]` {
		t.Errorf("background type = %s; want [\"string\",\"null\"]", got)
	}
	ev := props["evidence"].(map[string]any)
	if got := ev["minItems"]; got != 1.0 {
		t.Errorf("evidence minItems = %v; want 1", got)
	}
	for _, p := range []map[string]any{props["reason"].(map[string]any), props["suggested_action"].(map[string]any), ev["items"].(map[string]any)} {
		if got := p["minLength"]; got != 1.0 {
			t.Errorf("minLength = %v; want 1 on %v", got, p["description"])
		}
	}
	var cats []string
	for _, v := range props["category"].(map[string]any)["enum"].([]any) {
		cats = append(cats, v.(string))
	}
	if want := []string{"billing", "refund", "technical", "account", "shipping", "security", "other"}; !slices.Equal(cats, want) {
		t.Errorf("category enum = %v; want %v", cats, want)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		raw         string
		wantLine    int
		wantPointer string
		wantMsg     string // substring of Error()
	}{
		{name: "malformed JSON", raw: "{\n  \"type\": \"object\",\n  \"properties\": {,}\n}", wantLine: 3, wantMsg: "malformed JSON"},
		{name: "unexpected end", raw: "{\n  \"type\": \"object\",\n", wantLine: 3, wantMsg: "unexpected end of JSON input"},
		{name: "data after value", raw: "{\"type\": \"object\"}\n{}", wantLine: 2, wantMsg: "data after the JSON value"},
		{name: "empty file", raw: "", wantLine: 1, wantMsg: "malformed JSON"},
		{name: "invalid type at root", raw: `{"type": 5}`, wantLine: 1, wantPointer: "/type", wantMsg: "not a valid JSON Schema"},
		{
			name:        "invalid type nested",
			raw:         "{\n  \"type\": \"object\",\n  \"properties\": {\n    \"a\": {\n      \"type\": 5\n    }\n  }\n}",
			wantLine:    5,
			wantPointer: "/properties/a/type",
			wantMsg:     "anyOf",
		},
		{
			name:        "negative minItems",
			raw:         "{\n  \"properties\": {\n    \"e\": {\"type\": \"array\",\n      \"minItems\": -1}\n  }\n}",
			wantLine:    4,
			wantPointer: "/properties/e/minItems",
			wantMsg:     "minimum",
		},
		{name: "invalid pattern", raw: "{\"properties\": {\n\"a\": {\"pattern\": \"(?<=x)\"}}}", wantLine: 2, wantPointer: "/properties/a/pattern", wantMsg: "regex"},
		{name: "external reference", raw: `{"$ref": "https://example.com/other.json"}`, wantMsg: "self-contained"},
		{name: "dangling local reference", raw: `{"$ref": "#/$defs/missing"}`, wantMsg: "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load("bad.schema.json", []byte(tt.raw))
			if err == nil {
				t.Fatalf("Load = %v, nil; want an error", c)
			}
			if !errors.Is(err, ErrBadContract) {
				t.Errorf("errors.Is(err, ErrBadContract) = false; want true (err %v)", err)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("err %T is not a *LoadError", err)
			}
			if le.File != "bad.schema.json" {
				t.Errorf("File = %q; want %q", le.File, "bad.schema.json")
			}
			if le.Line != tt.wantLine {
				t.Errorf("Line = %d; want %d (err %v)", le.Line, tt.wantLine, err)
			}
			if le.Pointer != tt.wantPointer {
				t.Errorf("Pointer = %q; want %q (err %v)", le.Pointer, tt.wantPointer, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Error() = %q; want it to contain %q", err, tt.wantMsg)
			}
			if !strings.HasPrefix(err.Error(), "bad.schema.json") {
				t.Errorf("Error() = %q; want it to start with the file name", err)
			}
		})
	}
}

func TestLoadCopiesInput(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"type": "object"}`)
	c, err := Load("x.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	h := c.Hash()
	copy(raw, "XXXXXXXX")
	if got := string(c.Raw()); got != `{"type": "object"}` {
		t.Errorf("Raw() after the caller changed its buffer = %q; want the original", got)
	}
	if got := c.Hash(); got != h {
		t.Errorf("Hash() changed from %s to %s", h, got)
	}
}

func TestHashFollowsBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		a, b     string
		wantSame bool
	}{
		{name: "identical", a: `{"type":"object"}`, b: `{"type":"object"}`, wantSame: true},
		{name: "whitespace differs", a: `{"type":"object"}`, b: `{"type": "object"}`, wantSame: false},
		{name: "keyword differs", a: `{"type":"object"}`, b: `{"type":"array"}`, wantSame: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := Load("a", []byte(tt.a))
			if err != nil {
				t.Fatal(err)
			}
			b, err := Load("b", []byte(tt.b))
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Hash() == b.Hash(); got != tt.wantSame {
				t.Errorf("same hash = %v; want %v", got, tt.wantSame)
			}
		})
	}
}

func TestLineOfPointer(t *testing.T) {
	t.Parallel()
	doc := []byte(`{
  "a": 1,
  "b": {
    "c": [
      10,
      {"d~e/f": true}
    ],
    "": null
  },
  "g": []
}`)
	tests := []struct {
		ptr  string
		want int
	}{
		{ptr: "", want: 1},
		{ptr: "/a", want: 2},
		{ptr: "/b", want: 3},
		{ptr: "/b/c", want: 4},
		{ptr: "/b/c/0", want: 5},
		{ptr: "/b/c/1", want: 6},
		{ptr: "/b/c/1/d~0e~1f", want: 6},
		{ptr: "/b/", want: 8},
		{ptr: "/g", want: 10},
		{ptr: "/b/c/2", want: 0},
		{ptr: "/missing", want: 0},
		{ptr: "not-a-pointer", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.ptr, func(t *testing.T) {
			t.Parallel()
			if got := lineOfPointer(doc, tt.ptr); got != tt.want {
				t.Errorf("lineOfPointer(%q) = %d; want %d", tt.ptr, got, tt.want)
			}
		})
	}
}
