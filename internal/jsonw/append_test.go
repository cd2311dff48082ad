package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// encodeNoHTML encodes v as an Encoder without HTML escaping does.
func encodeNoHTML(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// appendStrings are strings that exercise every escape.
var appendStrings = []string{
	"", "plain", `{"category":"billing","evidence":["a \"b\""]}`, "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "\u2028\u2029", "\xff\xfe broken \xc3", "é中😀", `back\slash`, "\u00e9\U0001F600",
	"\xed\xa0\x80 encoded surrogate", "a\u2027b\u202ac",
}

func TestAppendStringTable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in         string
		html, bare string
	}{
		{"", `""`, `""`},
		{"a<b>&c", `"a\u003cb\u003e\u0026c"`, `"a<b>&c"`},
		{"q\"\\/", `"q\"\\/"`, `"q\"\\/"`},
		{"\b\f\n\r\t\x00\x1f", `"\b\f\n\r\t\u0000\u001f"`, `"\b\f\n\r\t\u0000\u001f"`},
		{"\u2028\u2029", `"\u2028\u2029"`, `"\u2028\u2029"`},
		{"x\xffy", `"x\ufffdy"`, `"x\ufffdy"`},
		{"é😀", `"é😀"`, `"é😀"`},
	}
	for _, tc := range cases {
		if got := string(AppendString(nil, tc.in, true)); got != tc.html {
			t.Errorf("AppendString(%q, html): got %s; want %s", tc.in, got, tc.html)
		}
		if got := string(AppendString([]byte("x"), tc.in, false)); got != "x"+tc.bare {
			t.Errorf("AppendString(%q): got %s; want x%s", tc.in, got, tc.bare)
		}
	}
}

// TestAppendStringMatchesEncodingJSON: AppendString writes what
// json.Marshal (html) and an Encoder without HTML escaping write.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range appendStrings {
		checkString(t, s)
	}
}

func checkString(t *testing.T, s string) {
	t.Helper()
	html, _ := json.Marshal(s)
	if got := string(AppendString(nil, s, true)); got != string(html) {
		t.Fatalf("%q with HTML escaping: got %s; want %s", s, got, html)
	}
	if got, want := string(AppendString(nil, s, false)), encodeNoHTML(t, s); got != want {
		t.Fatalf("%q: got %s; want %s", s, got, want)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range appendStrings {
		f.Add(s)
	}
	f.Fuzz(checkString)
}

// floats are values around every boundary of encoding/json's float format.
var floats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, 0.5, 1.5, 100, 1e20, 1e21, -1e21, 9.999999e20, 1e-6, 9.99e-7, 1e-7, -1e-7,
	1.2345678901234567e-9, 3.4028235e38, 1e300, 5e-324, math.MaxFloat64, 0.069, 0.002049, 123456789012345680000,
}

func TestAppendFloatMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, f := range floats {
		checkFloat(t, f)
	}
}

func checkFloat(t *testing.T, f float64) {
	t.Helper()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return
	}
	want, _ := json.Marshal(f)
	if got := string(AppendFloat(nil, f, 64)); got != string(want) {
		t.Fatalf("AppendFloat(%v, 64): got %s; want %s", f, got, want)
	}
	f32 := float32(f)
	if math.IsInf(float64(f32), 0) {
		return
	}
	want, _ = json.Marshal(f32)
	if got := string(AppendFloat(nil, float64(f32), 32)); got != string(want) {
		t.Fatalf("AppendFloat(%v, 32): got %s; want %s", f32, got, want)
	}
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range floats {
		f.Add(v)
	}
	f.Fuzz(checkFloat)
}
