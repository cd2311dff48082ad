package router

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/crab-testbed/crab/model"
)

// Contribution is one feature's share of a learned score's logit: what it
// is (a dense feature's name, or "word", "bigram", "trigram" or "lang"
// with the text it read) and the weight times value it added.
type Contribution struct {
	Feature string
	Logit   float64
}

// String writes the contribution as `"refund" +0.84` or `log_runes −0.31`.
func (c Contribution) String() string {
	return fmt.Sprintf("%s %+.2f", c.Feature, c.Logit)
}

// Explain returns the k features that moved the score of req most (by
// absolute contribution to the logit), strongest first: the scorer's own
// weights for this text, so that a misrouted request is explained by
// what the scorer actually read.
func (s *LearnedScorer) Explain(req *model.Request, k int) []Contribution {
	var dense [8]float64
	DenseOf(req, dense[:])
	out := []Contribution{}
	for i, v := range dense {
		if c := s.m.Dense[i] * (v - s.m.Mean[i]) / s.m.Scale[i]; c != 0 {
			out = append(out, Contribution{DenseFeatures[i], c})
		}
	}
	type hit struct {
		fam, start, end int
		w               float64
	}
	var hits []hit
	words, tris := hashedSpans(req, func(h uint64, fam, start, end int) {
		if w := s.hashed[h&s.mask]; w != 0 {
			hits = append(hits, hit{fam, start, end, w})
		}
	})
	sum := map[string]float64{}
	var order []string
	for _, x := range hits {
		name := hashedName(req, x.fam, x.start, x.end)
		if _, seen := sum[name]; !seen {
			order = append(order, name)
		}
		sum[name] += x.w * FamilyValue(x.fam, words, tris)
	}
	for _, name := range order {
		out = append(out, Contribution{name, sum[name]})
	}
	sort.SliceStable(out, func(i, j int) bool { return math.Abs(out[i].Logit) > math.Abs(out[j].Logit) })
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// ExplainText is Explain written as one line: the features, strongest
// first, each with its contribution to the logit.
func (s *LearnedScorer) ExplainText(req *model.Request, k int) string {
	cs := s.Explain(req, k)
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", ")
}

// hashedName names a hashed feature by the text it read.
func hashedName(req *model.Request, fam, start, end int) string {
	if fam == FamLang {
		return "lang=" + req.Scope.PrimaryLang()
	}
	t := strings.ToLower(strings.Join(strings.Fields(req.Text[start:end]), " "))
	switch fam {
	case FamBigram:
		return fmt.Sprintf("%q", t)
	case FamTrigram:
		return fmt.Sprintf("tri%q", t)
	}
	return fmt.Sprintf("%q", t)
}
