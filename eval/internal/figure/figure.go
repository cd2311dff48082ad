// Package figure rounds crab's figures for display, in one place for every
// report format and for the sentences of the decision.
//
// Every figure is computed unrounded; these functions round it once, for
// display. A non-zero figure never prints as 0 (it gets significant digits
// instead), and each function is monotone in its argument, so a mean
// printed between its min and max stays between them.
package figure

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Ms prints milliseconds with at most one decimal, or two significant
// digits where one decimal would print a non-zero value as 0.
func Ms(v float64) string { return Fixed(v, 1, 2) }

// MsP is Ms of *v, "-" for nil (a figure that does not exist).
func MsP(v *float64) string {
	if v == nil {
		return "-"
	}
	return Ms(*v)
}

// SmallMs prints milliseconds with three decimals below 1 ms (where a lag
// target lives) and like Ms above.
func SmallMs(v float64) string {
	if v < 1 {
		if s := strconv.FormatFloat(v, 'f', 3, 64); v == 0 || s != "0.000" {
			return s
		}
		return Sig(v, 2)
	}
	return Ms(v)
}

// Fixed prints v with dec decimals, trailing zeros trimmed; a non-zero v
// that would print as 0 gets sig significant digits instead.
func Fixed(v float64, dec, sig int) string {
	s := Trim(strconv.FormatFloat(v, 'f', dec, 64))
	if s == "0" && v != 0 && !math.IsNaN(v) {
		return Sig(v, sig)
	}
	return s
}

// Cost prints a cost with four significant digits, never in exponent form,
// so totals (120) and per-token prices (0.001235) both read plainly.
func Cost(v float64) string { return Sig(v, 4) }

// CostPerPass prints cost per pass with 2 decimals, or 3 significant digits
// below 1; "-" when nothing passed (nil).
func CostPerPass(v *float64) string {
	if v == nil {
		return "-"
	}
	if math.Abs(*v) >= 1 || *v == 0 {
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	return Sig(*v, 3)
}

// CostPerPassPair prints two costs per pass that a sentence compares (see
// Pair); "-" for one where nothing passed.
func CostPerPassPair(a, b *float64) (string, string) {
	if a == nil || b == nil {
		return CostPerPass(a), CostPerPass(b)
	}
	return Pair(*a, *b, func(v float64) string { return CostPerPass(&v) })
}

// Sig prints sig significant digits in fixed notation, trimming trailing
// zeros.
func Sig(v float64, sig int) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return Trim(strconv.FormatFloat(v, 'f', 0, 64))
	}
	dec := sig - 1 - int(math.Floor(math.Log10(math.Abs(v))))
	if dec > 20 {
		return strconv.FormatFloat(v, 'g', sig, 64) // below 1e-20: exponent form rather than 0
	}
	dec = max(0, dec)
	return Trim(strconv.FormatFloat(v, 'f', dec, 64))
}

// PThreshold is the significance level the reports test p-values against.
const PThreshold = 0.05

// P prints a p-value with 4 significant digits, or more where 4 would print
// a value below PThreshold at or above it (0.0499974 is never printed as
// 0.05).
func P(p float64) string {
	for sig := 4; ; sig++ {
		s := strconv.FormatFloat(p, 'g', sig, 64)
		if v, _ := strconv.ParseFloat(s, 64); sig >= 17 || !(p < PThreshold) || v < PThreshold {
			return s
		}
	}
}

// Pct prints a share in [0,1] as a percentage with one decimal (two
// significant digits where that would print a non-zero share as 0%).
func Pct(v float64) string { return Fixed(v*100, 1, 2) + "%" }

// Pair prints two figures that a sentence compares ("p95 X vs Y ms
// (+Z%)") with f, or with as many more significant digits as it takes for
// the printed pair to tell the truth: in the same order as the figures, and
// with the percent change between the printed figures reading as the true
// one. So 1.0051 against 1.0049 prints "1.0051 vs 1.0049 (+0.02%)", never
// "1.01 vs 1 (+0.02%)".
func Pair(a, b float64, f func(float64) string) (string, string) {
	sa, sb := f(a), f(b)
	for sig := 3; sig <= 17 && !pairHonest(a, b, sa, sb); sig++ {
		sa, sb = Sig(a, sig), Sig(b, sig)
	}
	return sa, sb
}

func pairHonest(a, b float64, sa, sb string) bool {
	pa, errA := strconv.ParseFloat(sa, 64)
	pb, errB := strconv.ParseFloat(sb, 64)
	if errA != nil || errB != nil {
		return true // not a number (e.g. "-"): nothing to compare
	}
	return cmpFloat(a, b) == cmpFloat(pa, pb) && RelChange(a, b) == RelChange(pa, pb)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RelChange writes " (-44%)" for v against ref, from the unrounded figures:
// whole percents, or one significant digit when a real change is under half
// a percent (" (+0.02%)"); empty when ref is 0.
func RelChange(v, ref float64) string {
	if ref == 0 {
		return ""
	}
	pct := (v/ref - 1) * 100
	s := fmt.Sprintf("%+.0f", pct)
	if (s == "+0" || s == "-0") && pct != 0 {
		s = Sig(pct, 1)
		if pct > 0 {
			s = "+" + s
		}
	}
	if s == "-0" {
		s = "+0"
	}
	return " (" + s + "%)"
}

// Trim drops trailing fractional zeros and a negative zero.
func Trim(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}

// PctVsLimit writes a change of pct percent with as many decimals as it
// takes for the printed figure to stand on the same side of limit as the
// exact one (a change just beyond +10% prints as +10.4%, never +10%), so
// that a sentence comparing it with the limit agrees with its own figure.
func PctVsLimit(pct, limit float64) string {
	side := func(v float64) int { return cmpFloat(v, limit) }
	for dec := 0; ; dec++ {
		s := strconv.FormatFloat(pct, 'f', dec, 64)
		v, _ := strconv.ParseFloat(s, 64)
		if side(v) == side(pct) || dec >= 12 {
			if !strings.HasPrefix(s, "-") {
				s = "+" + s
			}
			if s == "-0" || s == "+-0" {
				s = "+0"
			}
			return s + "%"
		}
	}
}

// RelChangeVsLimit is RelChange with the digits PctVsLimit needs against
// a limit in percent: " (+10.4%)".
func RelChangeVsLimit(v, ref, limit float64) string {
	if ref == 0 {
		return ""
	}
	return " (" + PctVsLimit((v/ref-1)*100, limit) + ")"
}

// RatioPct writes a ratio as a relative change against a limit in
// percent (see PctVsLimit): 1.032 is +3.2%... with the digits needed.
func RatioPct(r, limit float64) string { return PctVsLimit((r-1)*100, limit) }

// PctOfLimit writes a share in percent with as many decimals as it takes
// to stand on the same side of limit (also a share) as the exact value.
func PctOfLimit(v, limit float64) string {
	s := Pct(v)
	if p, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64); err == nil && cmpFloat(p, limit*100) == cmpFloat(v*100, limit*100) {
		return s
	}
	return strings.TrimPrefix(PctVsLimit(v*100, limit*100), "+")
}

// PointInInterval writes a point estimate with f and its interval's ends
// (nil: unbounded, written "?") with four significant digits, then with
// more significant digits on all three until the printed point lies within
// the printed interval whenever the exact one does: a point is never
// printed outside its own printed interval.
func PointInInterval(p float64, lo, hi *float64, f func(float64) string) (sp, slo, shi string) {
	end := func(v *float64, sig int) string {
		if v == nil {
			return "?"
		}
		return Trim(strconv.FormatFloat(*v, 'g', sig, 64))
	}
	inside := func(sp, slo, shi string) bool {
		v, err := strconv.ParseFloat(sp, 64)
		if err != nil {
			return true
		}
		if l, err := strconv.ParseFloat(slo, 64); err == nil && v < l {
			return false
		}
		if h, err := strconv.ParseFloat(shi, 64); err == nil && v > h {
			return false
		}
		return true
	}
	exact := (lo == nil || p >= *lo) && (hi == nil || p <= *hi)
	sp, slo, shi = f(p), end(lo, 4), end(hi, 4)
	for sig := 4; exact && !inside(sp, slo, shi) && sig <= 17; sig++ {
		sp, slo, shi = Sig(p, sig), end(lo, sig), end(hi, sig)
	}
	return sp, slo, shi
}
