package audit

import (
	"math"
	"slices"
)

// KSResult is a two-sample Kolmogorov–Smirnov test of whether two samples
// come from one distribution.
type KSResult struct {
	N, M int // sample sizes
	// D is the statistic: the largest distance between the two empirical
	// distribution functions, in [0, 1].
	D float64 `json:"d"`
	// P is the two-sided p-value: the probability, if both samples come
	// from one continuous distribution, of a D at least this large.
	P float64 `json:"p"`
	// Exact tells how P was computed: exactly (by counting lattice paths)
	// when N·M <= KSExactLimit, otherwise from Kolmogorov's limiting
	// distribution with Stephens' small-sample correction.
	Exact bool `json:"exact"`
}

// KSExactLimit is the largest N·M for which KS2 computes the exact p-value
// (an O(N·M) dynamic programme).
const KSExactLimit = 1 << 20

// KS2 runs the two-sided two-sample Kolmogorov–Smirnov test on a and b
// (neither is modified; NaNs must not occur). With an empty sample it
// returns D = 0, P = 1.
//
// The exact p-value is P(D >= d) for two samples from one continuous
// distribution: the share of the C(N+M, N) equally likely orderings of the
// pooled sample whose empirical functions come as far apart as observed,
// counted on the N×M lattice (Hodges 1957). Ties between the samples (only
// possible here through timer resolution) make the test conservative.
func KS2(a, b []float64) KSResult {
	n, m := len(a), len(b)
	res := KSResult{N: n, M: m, P: 1, Exact: true}
	if n == 0 || m == 0 {
		return res
	}
	x := slices.Clone(a)
	y := slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	// D in integer units of 1/(n·m): |i·m − j·n| after i values of x and
	// j of y, taken only after every copy of a value has been passed.
	var dmax int64
	i, j := 0, 0
	for i < n || j < m {
		var v float64
		switch {
		case j >= m || i < n && x[i] <= y[j]:
			v = x[i]
		default:
			v = y[j]
		}
		for i < n && x[i] == v {
			i++
		}
		for j < m && y[j] == v {
			j++
		}
		d := int64(i)*int64(m) - int64(j)*int64(n)
		if d < 0 {
			d = -d
		}
		dmax = max(dmax, d)
	}
	nm := int64(n) * int64(m)
	res.D = float64(dmax) / float64(nm)
	if nm <= KSExactLimit {
		res.P = ksExactP(n, m, dmax)
	} else {
		res.Exact = false
		ne := float64(n) * float64(m) / float64(n+m)
		sq := math.Sqrt(ne)
		res.P = kolmogorovQ((sq + 0.12 + 0.11/sq) * res.D)
	}
	return res
}

// ksExactP is P(max |i·m − j·n| >= dmax) over uniformly random monotone
// lattice paths from (0,0) to (n,m). w[j] holds, for the current i, the
// share of the C(i+j, i) paths to (i,j) that stayed strictly inside the
// band |i·m − j·n| < dmax; stepping from (i−1,j) or (i,j−1) weighs each by
// its share of the paths into (i,j) (i/(i+j) and j/(i+j)), which keeps
// every number in [0,1] where raw path counts would overflow. The p-value
// is summed over the points where paths first leave the band (inside paths
// into the point times all paths from it to the end, over all paths), a
// sum of positive terms, so p-values far below 1e-16 keep their precision
// instead of vanishing in 1 − (share inside).
func ksExactP(n, m int, dmax int64) float64 {
	if dmax == 0 {
		return 1
	}
	inside := func(i, j int) bool {
		d := int64(i)*int64(m) - int64(j)*int64(n)
		if d < 0 {
			d = -d
		}
		return d < dmax
	}
	lnTotal := lnChoose(n+m, n)
	var p float64
	// exit adds the paths that first leave the band at (i,j), given the
	// inside shares of its predecessors (0 when outside or absent).
	exit := func(i, j int, fromLeft, fromBelow float64) {
		var cnt float64 // inside paths into (i,j), scaled by exp(-lnTotal) below
		if fromLeft > 0 {
			cnt += fromLeft * math.Exp(lnChoose(i-1+j, i-1)+lnChoose(n-i+m-j, n-i)-lnTotal)
		}
		if fromBelow > 0 {
			cnt += fromBelow * math.Exp(lnChoose(i+j-1, i)+lnChoose(n-i+m-j, n-i)-lnTotal)
		}
		p += cnt
	}
	w := make([]float64, m+1)
	w[0] = 1
	for j := 1; j <= m; j++ {
		if inside(0, j) {
			w[j] = w[j-1]
		} else {
			exit(0, j, 0, w[j-1])
			w[j] = 0
		}
	}
	for i := 1; i <= n; i++ {
		if !inside(i, 0) {
			exit(i, 0, w[0], 0)
			w[0] = 0
		}
		for j := 1; j <= m; j++ {
			if !inside(i, j) {
				exit(i, j, w[j], w[j-1])
				w[j] = 0
				continue
			}
			fi, fj := float64(i), float64(j)
			w[j] = w[j]*fi/(fi+fj) + w[j-1]*fj/(fi+fj)
		}
	}
	return min(max(p, 0), 1)
}

// lnChoose is ln C(a, b).
func lnChoose(a, b int) float64 {
	la, _ := math.Lgamma(float64(a + 1))
	lb, _ := math.Lgamma(float64(b + 1))
	lc, _ := math.Lgamma(float64(a - b + 1))
	return la - lb - lc
}

// kolmogorovQ is the complementary Kolmogorov distribution
// Q(λ) = 2 Σ_{k≥1} (−1)^(k−1) exp(−2k²λ²).
func kolmogorovQ(lambda float64) float64 {
	if lambda < 0.2 {
		return 1
	}
	var sum float64
	sign := 1.0
	for k := 1; k <= 100; k++ {
		term := sign * math.Exp(-2*float64(k*k)*lambda*lambda)
		sum += term
		if math.Abs(term) < 1e-12*math.Abs(sum) {
			break
		}
		sign = -sign
	}
	return min(max(2*sum, 0), 1)
}
