package openaiwire

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/splitmix"
)

// exactDecimal is the exact decimal expansion of v in e-notation.
func exactDecimal(v float64) string {
	s := new(big.Float).SetFloat64(v).Text('e', 1100)
	m, e, _ := strings.Cut(s, "e")
	return strings.TrimRight(m, "0") + "e" + e
}

// TestParseFloat32MatchesStrconv checks the fast path against
// strconv.ParseFloat(t, 32) on random float32s at several precisions, on
// the exact midpoints between neighbouring float32s, on decimals just off
// those midpoints that round to them as float64 (where rounding twice
// would go wrong), and on the edges of float32's range.
func TestParseFloat32MatchesStrconv(t *testing.T) {
	cases := []string{"0", "-0", "1", "-1", "0.2", "1e-45", "1.401298464324817e-45", "7e-46",
		"7.006492321624085e-46", "1e-46", "-1e-46", "1e-400", "-1e-400", "3.4028235e38", "3.4028236e38",
		"3.40282356779733661637539395458142568448e38", "3.4028235677973366e38", "1e39", "-1e39", "1e400",
		"123456789012", "16777217", "16777217.000000001", "0.1", "1.17549435e-38"}
	g := splitmix.New(24)
	for range 20000 {
		f := math.Float32frombits(uint32(g.Uint64()))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		next := math.Nextafter32(f, float32(math.Inf(1)))
		mid := (float64(f) + float64(next)) / 2
		exact := exactDecimal(mid)
		m, e, _ := strings.Cut(exact, "e")
		cases = append(cases,
			strconv.FormatFloat(float64(f), 'g', -1, 32),
			strconv.FormatFloat(float64(f), 'g', 1+g.Mod(17), 64),
			strconv.FormatFloat(mid, 'g', -1, 64),
			exact,
			m+"000000000000000000001e"+e,
		)
		if m[len(m)-1] == '5' {
			cases = append(cases, m[:len(m)-1]+"4999999999999999999999e"+e)
		}
	}
	for _, s := range cases {
		want, werr := strconv.ParseFloat(s, 32)
		got, ok := parseFloat32(s)
		if ok != (werr == nil) || (ok && math.Float32bits(got) != math.Float32bits(float32(want))) {
			t.Fatalf("parseFloat32(%q) = %v, %v; strconv: %v, %v", s, got, ok, float32(want), werr)
		}
	}
}

func BenchmarkParseFloat32(b *testing.B) {
	for range b.N {
		if _, ok := parseFloat32("1.401298464324817e-45"); !ok {
			b.Fatal("not parsed")
		}
	}
}
