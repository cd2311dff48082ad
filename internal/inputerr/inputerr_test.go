package inputerr

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestFormat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file  string
		line  int
		field string
		want  string
	}{
		{"a.jsonl", 3, "mode", `a.jsonl:3: field "mode": bad`},
		{"a.jsonl", 0, "", "a.jsonl: bad"},
		{"a.yaml", 2, "", "a.yaml:2: bad"},
	}
	for _, tc := range cases {
		if got := Format(tc.file, tc.line, tc.field, "bad"); got != tc.want {
			t.Errorf("got %q; want %q", got, tc.want)
		}
	}
}

func TestDecodeStrictAndJSONField(t *testing.T) {
	t.Parallel()
	var v struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	cases := []struct {
		in, field, msg string
	}{
		{`{"n":1,"x":2}`, "x", "unknown field"},
		{`{"n":"one"}`, "n", "want int, got JSON string"},
		{`{"n":1} {"n":2}`, "", "invalid JSON: trailing data after the JSON value"},
		{`{"n":`, "", "invalid JSON: unexpected EOF"},
	}
	for _, tc := range cases {
		err := DecodeStrict([]byte(tc.in), &v)
		if err == nil {
			t.Fatalf("%s: got nil error", tc.in)
		}
		if f, m := JSONField(err); f != tc.field || m != tc.msg {
			t.Errorf("%s: got (%q, %q); want (%q, %q)", tc.in, f, m, tc.field, tc.msg)
		}
	}
	if err := DecodeStrict([]byte(`{"n":1,"s":"x"}`), &v); err != nil || v.N != 1 || v.S != "x" {
		t.Errorf("valid input: got %v, %+v", err, v)
	}
}

func TestLookup(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("a:\n  b: 1\n  c: {d: x}\nlist: [1]\n"), &root); err != nil {
		t.Fatal(err)
	}
	doc := root.Content[0]
	for _, tc := range []struct {
		path []string
		line int // 0: not found
	}{{[]string{"a", "b"}, 2}, {[]string{"a", "c", "d"}, 3}, {[]string{"a", "x"}, 0}, {[]string{"list", "0"}, 0}, {nil, 1}} {
		got := 0
		if n := Lookup(doc, tc.path...); n != nil {
			got = n.Line
		}
		if got != tc.line {
			t.Errorf("Lookup(%v) at line %d; want %d (0: not found)", tc.path, got, tc.line)
		}
	}
}
