package inputerr

import "testing"

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
