package jsonw

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStringTable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		opts     Option
		want     string
		ok       bool
	}{
		{"plain", ` "abc" `, 0, "abc", true},
		{"empty", `""`, 0, "", true},
		{"utf8", `"grüße 日本"`, 0, "grüße 日本", true},
		{"escapes", `"q\"\\\/\b\f\n\r\t"`, 0, "q\"\\/\b\f\n\r\t", true},
		{"unicode escapes", `"\u00e9\u20AC\u0041"`, 0, "é€A", true},
		{"escape then utf8", `"\n日本"`, 0, "\n日本", true},
		{"pair refused", `"\ud83d\ude00"`, 0, "", false},
		{"pair", `"\ud83d\ude00"`, SurrogatePairs, "😀", true},
		{"lone high", `"\ud800"`, SurrogatePairs, "", false},
		{"lone low", `"\udc00\udc00"`, SurrogatePairs, "", false},
		{"broken pair", `"\ud83d\u0041"`, SurrogatePairs, "", false},
		{"high then text", `"\ud83dxxxxxx"`, SurrogatePairs, "", false},
		{"invalid utf8", "\"\xff\"", 0, "", false},
		{"invalid utf8 after escape", "\"\\n\xff\"", 0, "", false},
		{"encoded surrogate", "\"\xed\xa0\x80\"", 0, "", false},
		{"control", "\"a\x01\"", 0, "", false},
		{"control after escape", "\"\\na\x01\"", 0, "", false},
		{"bad escape", `"\x"`, 0, "", false},
		{"short u", `"\u12"`, 0, "", false},
		{"bad hex", `"\u12g4"`, 0, "", false},
		{"unterminated", `"abc`, 0, "", false},
		{"unterminated escape", `"a\`, 0, "", false},
		{"escaped quote at end", `"a\"`, 0, "", false},
		{"not a string", `12`, 0, "", false},
	}
	for _, tc := range cases {
		l := New(tc.in, tc.opts)
		got, ok := l.String()
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: String(%q) = %q, %v; want %q, %v", tc.name, tc.in, got, ok, tc.want, tc.ok)
		}
		if ok && !l.End() {
			t.Errorf("%s: String(%q) left %q", tc.name, tc.in, l.Rest())
		}
	}
}

func TestPlainStringAndKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in           string
		plain, key   bool
		plainV, keyV string
	}{
		{`"abc"`, true, true, "abc", "abc"},
		{`"grüße"`, true, false, "grüße", ""},
		{`"a\u0062"`, false, false, "", ""},
		{`"a\n"`, false, false, "", ""},
		{"\"\xff\"", false, false, "", ""},
		{"\"a\x01\"", false, false, "", ""},
		{`"abc`, false, false, "", ""},
		{`null`, false, false, "", ""},
	}
	for _, tc := range cases {
		l := New(tc.in, 0)
		if v, ok := l.PlainString(); ok != tc.plain || v != tc.plainV {
			t.Errorf("PlainString(%q) = %q, %v; want %q, %v", tc.in, v, ok, tc.plainV, tc.plain)
		}
		l = New(tc.in, 0)
		if v, ok := l.PlainKey(); ok != tc.key || v != tc.keyV {
			t.Errorf("PlainKey(%q) = %q, %v; want %q, %v", tc.in, v, ok, tc.keyV, tc.key)
		}
	}
}

func TestNumberAndInt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in     string
		num    string // "" where Number refuses it
		i      int
		intOK  bool
		remain string
	}{
		{"0", "0", 0, true, ""},
		{"-0", "-0", 0, true, ""},
		{" 42,", "42", 42, true, ","},
		{"-7}", "-7", -7, true, "}"},
		{"12.5", "12.5", 0, false, ""},
		{"1e3", "1e3", 0, false, ""},
		{"1E+3", "1E+3", 0, false, ""},
		{"-0.0e-0", "-0.0e-0", 0, false, ""},
		{"9223372036854775807", "9223372036854775807", 9223372036854775807, true, ""},
		{"9223372036854775808", "9223372036854775808", 0, false, ""},
		{"01", "0", 0, true, "1"},
		{"-", "", 0, false, ""},
		{"1.", "", 0, false, ""},
		{"1e", "", 0, false, ""},
		{"1e+", "", 0, false, ""},
		{".5", "", 0, false, ""},
		{"+1", "", 0, false, ""},
		{"", "", 0, false, ""},
	}
	for _, tc := range cases {
		l := New(tc.in, 0)
		got, ok := l.Number()
		if ok != (tc.num != "") || got != tc.num {
			t.Errorf("Number(%q) = %q, %v; want %q", tc.in, got, ok, tc.num)
		}
		if ok && l.Rest() != tc.remain {
			t.Errorf("Number(%q) left %q; want %q", tc.in, l.Rest(), tc.remain)
		}
		l = New(tc.in, 0)
		if v, ok := l.Int(); ok != tc.intOK || v != tc.i {
			t.Errorf("Int(%q) = %d, %v; want %d, %v", tc.in, v, ok, tc.i, tc.intOK)
		}
	}
}

func TestLiterals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		v, ok  bool
		isNull bool
	}{
		{" true", true, true, false}, {"false", false, true, false}, {"null", false, false, true},
		{"tru", false, false, false}, {"nul", false, false, false}, {"", false, false, false},
	} {
		l := New(tc.in, 0)
		if v, ok := l.Bool(); v != tc.v || ok != tc.ok {
			t.Errorf("Bool(%q) = %v, %v; want %v, %v", tc.in, v, ok, tc.v, tc.ok)
		}
		l = New(tc.in, 0)
		if got := l.Null(); got != tc.isNull {
			t.Errorf("Null(%q) = %v; want %v", tc.in, got, tc.isNull)
		}
	}
}

func TestObjectAndArray(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		opts     Option
		keys     string // keys read, joined by |
		ok       bool
	}{
		{"empty", ` { } `, 0, "", true},
		{"members", `{"a":1, "b" : [1,2] ,"c":{}}`, 0, "a|b|c", true},
		{"escaped key", `{"\u0061":1}`, 0, "a", true},
		{"escaped key refused", `{"\u0061":1}`, PlainKeys, "", false},
		{"non-ASCII key refused", `{"é":1}`, PlainKeys, "", false},
		{"non-ASCII key", `{"é":1}`, 0, "é", true},
		{"trailing comma", `{"a":1,}`, 0, "a", false},
		{"missing colon", `{"a" 1}`, 0, "", false},
		{"missing comma", `{"a":1 "b":2}`, 0, "a", false},
		{"unterminated", `{"a":1`, 0, "a", false},
		{"not an object", `[1]`, 0, "", false},
	}
	for _, tc := range cases {
		l := New(tc.in, tc.opts)
		var keys []string
		ok := l.Object(func(k string) bool {
			keys = append(keys, k)
			return l.Skip(10)
		})
		if got := strings.Join(keys, "|"); ok != tc.ok || got != tc.keys {
			t.Errorf("%s: Object(%q) read %q, %v; want %q, %v", tc.name, tc.in, got, ok, tc.keys, tc.ok)
		}
	}
	for _, tc := range []struct {
		in string
		n  int
		ok bool
	}{
		{`[]`, 0, true}, {` [ 1 , "a" , null ] `, 3, true}, {`[1,]`, 2, false}, {`[1 2]`, 1, false}, {`[`, 1, false}, {`{}`, 0, false},
	} {
		l := New(tc.in, 0)
		n := 0
		ok := l.Array(func() bool { n++; return l.Skip(10) })
		if ok != tc.ok || n != tc.n {
			t.Errorf("Array(%q) read %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
		}
	}
}

func TestSkipDepth(t *testing.T) {
	t.Parallel()
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		in    string
		depth int
		ok    bool
	}{
		{`1`, 0, true},
		{`"s"`, 0, true},
		{`[]`, 0, false},
		{`{}`, 0, false},
		{`[]`, 1, true},
		{`[[]]`, 1, false},
		{`{"a":{"b":[]}}`, 3, true},
		{`{"a":{"b":[]}}`, 2, false},
		{nest(256), 256, true},
		{nest(257), 256, false},
	}
	for _, tc := range cases {
		l := New(tc.in, 0)
		if got := l.Skip(tc.depth) && l.End(); got != tc.ok {
			t.Errorf("Skip(%.20q, %d) = %v; want %v", tc.in, tc.depth, got, tc.ok)
		}
	}
}

// skipCases are documents for Skip and SkipString, valid or not.
var skipCases = []string{
	`{"a":[1,-2.5e3,true,false,null,{"c":"\ud800"}],"b":"x\u00e9\n"}`, ` [ ] `, `"\xff"`, "\"\xff\xfe\"",
	`0`, `-0.0E+1`, `{"a":1,"a":2}`, `{"\u0061":1}`, `[1,]`, `{"a" 1}`, `[01]`, `[-]`, `[1.]`, `tru`, `nulll`,
	`"\x"`, `"\u12"`, "\"a\x01\"", `{"a":1}}`, `[NaN]`, ``, ` `, `"`, `{"a":"b`,
}

// TestSkipMatchesValid: Skip accepts exactly what json.Valid accepts.
func TestSkipMatchesValid(t *testing.T) {
	t.Parallel()
	for _, in := range skipCases {
		checkSkip(t, in)
	}
}

func checkSkip(t *testing.T, in string) {
	t.Helper()
	l := New(in, PlainKeys)
	got := l.Skip(1000) && l.End()
	if want := json.Valid([]byte(in)); got != want {
		t.Fatalf("Skip(%q) = %v; json.Valid = %v", in, got, want)
	}
	l = New(in, 0)
	if l.SkipString() && l.End() {
		var s string
		if err := json.Unmarshal([]byte(in), &s); err != nil {
			t.Fatalf("SkipString accepted %q; encoding/json refuses it: %v", in, err)
		}
	}
}

func FuzzSkip(f *testing.F) {
	for _, s := range skipCases {
		f.Add(s)
	}
	f.Fuzz(checkSkip)
}

// stringCases are JSON strings, valid or not.
var stringCases = []string{
	`"abc"`, `"grüße"`, `"q\"\\\/\b\f\n\r\t"`, `"\u00e9\u20AC"`, `"\ud83d\ude00"`, `"\ud800"`, `"\ud83d\u0041"`,
	`"\udc00\ud800"`, "\"\xff\"", "\"\\n\xff\"", "\"a\x01\"", `"\x"`, `"\u12"`, `"abc`, `"a\"`, `""`, `"\u0000"`,
}

// TestStringMatchesUnmarshal: whatever String, PlainString and PlainKey
// accept decodes to the same string with json.Unmarshal, and String
// refuses only what needs json.Unmarshal's replacing or fails there.
func TestStringMatchesUnmarshal(t *testing.T) {
	t.Parallel()
	for _, in := range stringCases {
		checkStrings(t, in)
	}
}

func checkStrings(t *testing.T, in string) {
	t.Helper()
	var want string
	err := json.Unmarshal([]byte(in), &want)
	for _, opts := range []Option{0, SurrogatePairs} {
		read := map[string]func(*Lexer) (string, bool){
			"String": (*Lexer).String, "PlainString": (*Lexer).PlainString, "PlainKey": (*Lexer).PlainKey,
		}
		for name, fn := range read {
			l := New(in, opts)
			got, ok := fn(&l)
			if !ok || !l.End() {
				continue
			}
			if err != nil {
				t.Fatalf("%s(%q) accepted what encoding/json refuses: %v", name, in, err)
			}
			if got != want {
				t.Fatalf("%s(%q) = %q; want %q", name, in, got, want)
			}
		}
		// String leaves a valid string to json.Unmarshal only where
		// encoding/json replaces something.
		l := New(in, opts)
		if _, ok := l.String(); !ok && err == nil && utf8.ValidString(want) && !strings.ContainsRune(want, utf8.RuneError) {
			if opts&SurrogatePairs != 0 || !strings.Contains(strings.ToLower(in), `\ud`) {
				t.Fatalf("String(%q) with options %d refused it; encoding/json reads it as %q", in, opts, want)
			}
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(checkStrings)
}

// TestNewBytesCopies: strings read from NewBytes's text do not change
// when the bytes are reused.
func TestNewBytesCopies(t *testing.T) {
	t.Parallel()
	b := []byte(`{"k":"plain","e":"esc\n","p":"key"}`)
	l := NewBytes(b, PlainKeys)
	var got []string
	if !l.Object(func(string) bool {
		v, ok := l.String()
		got = append(got, v)
		return ok
	}) {
		t.Fatal("Object refused the document")
	}
	k := NewBytes(b[len(`{"k":"plain","e":"esc\n",`):], 0)
	key, ok := k.PlainKey()
	if !ok {
		t.Fatal("PlainKey refused the key")
	}
	got = append(got, key)
	for i := range b {
		b[i] = 'x'
	}
	if want := []string{"plain", "esc\n", "key", "p"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("after reusing the bytes: got %q; want %q", got, want)
	}
}

func TestOnce(t *testing.T) {
	t.Parallel()
	var seen uint8
	for i, tc := range []struct {
		bit  uint8
		want bool
	}{{1, true}, {2, true}, {1, false}, {4, true}, {2, false}} {
		if got := Once(&seen, tc.bit); got != tc.want {
			t.Errorf("call %d: Once(bit %d) = %v; want %v", i, tc.bit, got, tc.want)
		}
	}
	if seen != 7 {
		t.Errorf("seen = %d; want 7", seen)
	}
}
