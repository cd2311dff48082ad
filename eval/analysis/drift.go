package analysis

import (
	"fmt"
	"math"
	"slices"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
)

// Cluster is a window of a run in which errors and timeouts were far more
// frequent than over the whole run: an outage or a drift of the backend,
// not a property of an arm. Times are milliseconds from the run's first
// intended send time.
type Cluster struct {
	StartMs  float64  `json:"start_ms"`
	EndMs    float64  `json:"end_ms"`
	Failures int      `json:"failures"` // errors and timeouts in the window
	Requests int      `json:"requests"` // requests sent in the window
	Expected float64  `json:"expected"` // failures expected at the run's failure rate
	P        float64  `json:"p"`        // Bonferroni-corrected binomial tail probability
	Arms     []string `json:"arms"`     // arms with failures in the window
}

// Clustering thresholds: the run is cut into clusterBins windows; a window
// is flagged when its failures are this improbable at the run's failure
// rate (one-sided binomial tail, times the number of windows) and at least
// clusterMinFailures.
const (
	clusterBins        = 20
	clusterAlpha       = 1e-3
	clusterMinFailures = 5
)

// failureClusters finds windows of clustered errors and timeouts among the
// timed records of every arm. Adjacent flagged windows merge into one.
func failureClusters(t *records.Symbols, byArm map[string][]*records.Rec, arms []string) []Cluster {
	var lo, hi int64
	total, failed := 0, 0
	for _, name := range arms {
		for _, r := range byArm[name] {
			if !t.Attrs(r).Timed {
				continue
			}
			if total == 0 || r.At < lo {
				lo = r.At
			}
			hi = max(hi, r.At)
			total++
			if isFailure(t.Str(t.Attrs(r).Outcome)) {
				failed++
			}
		}
	}
	if failed < clusterMinFailures || hi <= lo {
		return nil
	}
	width := float64(hi-lo) / clusterBins
	type bin struct {
		n, f int
		arms map[string]bool
	}
	bins := make([]bin, clusterBins)
	for _, name := range arms {
		for _, r := range byArm[name] {
			if !t.Attrs(r).Timed {
				continue
			}
			i := min(int(float64(r.At-lo)/width), clusterBins-1)
			bins[i].n++
			if isFailure(t.Str(t.Attrs(r).Outcome)) {
				bins[i].f++
				if bins[i].arms == nil {
					bins[i].arms = map[string]bool{}
				}
				bins[i].arms[name] = true
			}
		}
	}
	rate := float64(failed) / float64(total)
	var out []Cluster
	open := false
	for i, b := range bins {
		p := math.Min(1, binomialUpperTail(b.n, b.f, rate)*clusterBins)
		if b.f < clusterMinFailures || p >= clusterAlpha {
			open = false
			continue
		}
		if !open {
			out = append(out, Cluster{StartMs: float64(i) * width / 1e6, P: p})
			open = true
		}
		c := &out[len(out)-1]
		c.EndMs = float64(i+1) * width / 1e6
		c.Failures += b.f
		c.Requests += b.n
		c.Expected += rate * float64(b.n)
		c.P = math.Max(c.P, p)
		for a := range b.arms {
			if !slices.Contains(c.Arms, a) {
				c.Arms = append(c.Arms, a)
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].Arms)
	}
	return out
}

func isFailure(outcome string) bool {
	return outcome == records.OutcomeError || outcome == records.OutcomeTimeout
}

// binomialUpperTail is P(X >= k) for X ~ Binomial(n, p).
func binomialUpperTail(n, k int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	if k > n || p <= 0 {
		return 0
	}
	if p >= 1 {
		return 1
	}
	lnN, _ := math.Lgamma(float64(n + 1))
	sum := 0.0
	for j := k; j <= n; j++ {
		a, _ := math.Lgamma(float64(j + 1))
		b, _ := math.Lgamma(float64(n - j + 1))
		term := math.Exp(lnN - a - b + float64(j)*math.Log(p) + float64(n-j)*math.Log1p(-p))
		sum += term
		if term < sum*1e-17 {
			break // the terms only shrink from here: the tail has converged
		}
	}
	return math.Min(1, sum)
}

// String describes the window for a warning.
func (c Cluster) String() string {
	return fmt.Sprintf("%d errors and timeouts among %d requests between %s s and %s s of the run (%s expected at the run's failure rate, p = %s)",
		c.Failures, c.Requests, figure.Sig(c.StartMs/1000, 3), figure.Sig(c.EndMs/1000, 3), figure.Sig(c.Expected, 2), figure.P(c.P))
}

// errorRateAlpha is how improbable a difference in error rate between a
// candidate and the baseline must be, under equal rates, to be called
// beyond chance.
const errorRateAlpha = 1e-3

// errorRateGap compares the share of errors and timeouts of a candidate
// with the baseline's by the exact conditional test: given the failures of
// both, the candidate's are Binomial(total, its share of the requests)
// under equal rates. It returns a description and the two-sided p-value
// when the difference is beyond chance, else "".
func errorRateGap(base, a *ArmSummary) string {
	fb, fa := base.Outcomes[records.OutcomeError]+base.Outcomes[records.OutcomeTimeout], a.Outcomes[records.OutcomeError]+a.Outcomes[records.OutcomeTimeout]
	nb, na := base.N-base.Cancelled, a.N-a.Cancelled
	total := fa + fb
	if total < clusterMinFailures || na == 0 || nb == 0 {
		return ""
	}
	share := float64(na) / float64(na+nb)
	upper := binomialUpperTail(total, fa, share)
	lower := 1 - binomialUpperTail(total, fa+1, share)
	p := math.Min(1, 2*math.Min(upper, lower))
	if p >= errorRateAlpha {
		return ""
	}
	return fmt.Sprintf("%s's errors and timeouts (%d of %d) differ from %s's (%d of %d) beyond chance (p = %s)",
		a.Name, fa, na, base.Name, fb, nb, figure.P(p))
}
