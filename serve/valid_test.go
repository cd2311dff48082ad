package serve

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The patterns the hand-written validators implement.
var (
	langRE       = regexp.MustCompile(`^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})*$`)
	docVersionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)
	requestIDRE  = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
)

var validators = []struct {
	name string
	fn   func(string) bool
	re   *regexp.Regexp
}{
	{"lang", validLang, langRE},
	{"doc_version", validDocVersion, docVersionRE},
	{"request_id", validRequestID, requestIDRE},
}

func TestValidators(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name, s string
		want    [3]bool // lang, doc_version, request_id
	}{
		{"empty", "", [3]bool{false, false, false}},
		{"bare language", "en", [3]bool{true, true, true}},
		{"three letters", "deu", [3]bool{true, true, true}},
		{"one letter", "e", [3]bool{false, true, true}},
		{"four letters", "engl", [3]bool{false, true, true}},
		{"region", "pt-BR", [3]bool{true, true, true}},
		{"underscore region", "en_us", [3]bool{true, true, true}},
		{"two subtags", "zh-Hant-TW", [3]bool{true, true, true}},
		{"short subtag", "en-x", [3]bool{false, true, true}},
		{"long subtag", "en-abcdefghi", [3]bool{false, true, true}},
		{"eight subtag", "en-abcdefgh", [3]bool{true, true, true}},
		{"trailing dash", "en-", [3]bool{false, true, true}},
		{"double dash", "en--us", [3]bool{false, true, true}},
		{"digit first", "1en", [3]bool{false, true, true}},
		{"version", "v1.2:rc-3_b", [3]bool{false, true, true}},
		{"dot first", ".v1", [3]bool{false, false, true}},
		{"space", "en us", [3]bool{false, false, false}},
		{"non-ASCII", "é", [3]bool{false, false, false}},
		{"64 bytes", long(64), [3]bool{false, true, true}},
		{"65 bytes", long(65), [3]bool{false, false, true}},
		{"128 bytes", long(128), [3]bool{false, false, true}},
		{"129 bytes", long(129), [3]bool{false, false, false}},
		{"crab id", "crab-6751a3b2-17", [3]bool{false, true, true}},
	}
	for _, tc := range tests {
		for i, v := range validators {
			if got := v.fn(tc.s); got != tc.want[i] {
				t.Errorf("%s: valid %s(%q) = %v; want %v", tc.name, v.name, tc.s, got, tc.want[i])
			}
			if got, re := v.fn(tc.s), v.re.MatchString(tc.s); got != re {
				t.Errorf("%s: valid %s(%q) = %v; the pattern says %v", tc.name, v.name, tc.s, got, re)
			}
		}
	}
}

// TestValidatorsMatchPatterns compares the validators with their patterns
// on many random strings over an alphabet that reaches every branch.
func TestValidatorsMatchPatterns(t *testing.T) {
	t.Parallel()
	const alphabet = "aZq09-_.:/ é"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		n := rng.IntN(14)
		if rng.IntN(50) == 0 {
			n = 60 + rng.IntN(75)
		}
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		s := b.String()
		for _, v := range validators {
			if got, want := v.fn(s), v.re.MatchString(s); got != want {
				t.Fatalf("valid %s(%q) = %v; the pattern says %v", v.name, s, got, want)
			}
		}
	}
}
