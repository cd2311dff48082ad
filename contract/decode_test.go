package contract

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseLeanMatchesDecoder: on every input the lean parser accepts, its
// tree is encoding/json's (UseNumber); inputs it declines are the ones
// decodeJSON must word an error for or that need encoding/json's own
// handling, and the plain answers of the contract are never declined.
func TestParseLeanMatchesDecoder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		lean bool // the lean parser must take it
	}{
		{"answer", `{"category":"billing","reason":"r","evidence":["a","b"],"risk_flags":[],"suggested_action":"s","needs_human_review":false,"background":null}`, true},
		{"whitespace", " \t\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } }\r\n", true},
		{"escapes", `{"a":"q\"b\\s\/n\nt\tr\rb\bf\fu\u00e9\u20ac"}`, true},
		{"utf8", `{"grüße":"日本語 ✓"}`, true},
		{"numbers", `[0,-0,1,-1,12.5,1e3,1E+3,1e-3,-0.0e0,123456789012345678901234567890,1e999]`, true},
		{"literals", `[true,false,null]`, true},
		{"repeated key keeps last", `{"a":1,"a":"two"}`, true},
		{"empty containers", `[[],{},[{}]]`, true},
		{"scalar", `"x"`, true},
		{"nested", strings.Repeat("[", 100) + strings.Repeat("]", 100), true},
		{"too deep", strings.Repeat("[", maxLeanDepth+1) + strings.Repeat("]", maxLeanDepth+1), false},
		{"surrogate pair", `{"a":"\ud83d\ude00"}`, false},
		{"lone surrogate", `{"a":"\ud800"}`, false},
		{"invalid utf8", "{\"a\":\"\xff\"}", false},
		{"control char", "{\"a\":\"\x01\"}", false},
		{"bad escape", `{"a":"\x"}`, false},
		{"leading zero", `[01]`, false},
		{"bare minus", `[-]`, false},
		{"dot without digits", `[1.]`, false},
		{"exponent without digits", `[1e]`, false},
		{"trailing comma", `[1,]`, false},
		{"trailing data", `{} {}`, false},
		{"truncated", `{"a":"b`, false},
		{"missing colon", `{"a" 1}`, false},
		{"single quotes", `{'a':1}`, false},
		{"empty", ``, false},
		{"NaN", `[NaN]`, false},
		{"truncated literal", `[tru]`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseLean(tc.in)
			if ok != tc.lean {
				t.Fatalf("parseLean ok = %v; want %v", ok, tc.lean)
			}
			checkLean(t, tc.in, got, ok)
		})
	}
}

// checkLean fails when the lean parser accepted in with a tree other than
// encoding/json's, or accepted what encoding/json refuses.
func checkLean(t *testing.T, in string, got any, ok bool) {
	t.Helper()
	if !ok {
		return
	}
	want, err := decodeJSON(strings.NewReader(in), len(in))
	if err != nil {
		t.Fatalf("parseLean accepted %q; encoding/json refuses it: %v", in, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseLean(%q): got %#v; want %#v", in, got, want)
	}
}

// FuzzParseLean: whatever the lean parser accepts, encoding/json decodes
// to the same tree.
func FuzzParseLean(f *testing.F) {
	for _, s := range []string{
		`{"category":"billing","evidence":["x"],"needs_human_review":true,"n":-1.5e3}`,
		`[1,"a\u00e9\n",null,{"k":{}}]`, `{"a":1,"a":2}`, `"\ud83d\ude00"`, "\xff", ` 0 `, `[]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, ok := parseLean(in)
		checkLean(t, in, got, ok)
	})
}
