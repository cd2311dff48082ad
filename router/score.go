// Package router sends each request to a small or a large model according to
// a difficulty score computed from the request alone.
//
// A Scorer turns a request into a Score in [0,1]; the threshold middleware
// (New) sends a request whose score is at or above Config.Threshold to
// Config.Large and every other request to Config.Small, and records the
// decision in the response's trace. The built-in FeatureScorer reads only
// what a production router sees — the ticket text and the request's
// language — and never a task's difficulty or expected labels, which are not
// even on model.Request. Plug in another Scorer (or a ScorerFunc) to compare
// routing policies on the same workload.
//
// NewCascade is the other routing policy: the small model answers first and
// the request is escalated to the large model when that answer fails or its
// confidence (model.Response.Confidence) is below a threshold; both calls
// count.
//
// Choosing either policy's threshold from an outcome table is offline
// analysis and lives in package github.com/crab-testbed/crab/tune, outside
// the request path.
package router

import (
	"math"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/model"
)

// Scorer rates how hard a request is for the small model: 0 is surely easy,
// 1 surely hard. Implementations must be deterministic, safe for concurrent
// use and must not change req. The middleware clamps values outside [0,1]
// and treats NaN as 1 (send to the large model when unsure).
type Scorer interface {
	Score(req *model.Request) Score
}

// ScorerFunc adapts a function to Scorer, e.g. to try a scoring rule in a
// test or an experiment without declaring a type.
type ScorerFunc func(req *model.Request) Score

// Score calls f.
func (f ScorerFunc) Score(req *model.Request) Score { return f(req) }

var _ Scorer = ScorerFunc(nil)

// Score is a difficulty score and the features it was computed from.
// A Scorer other than FeatureScorer may leave Features zero.
type Score struct {
	Value    float64  // difficulty in [0,1]; compared with Config.Threshold
	Features Features // what the built-in scorer saw; zero for other scorers
	// Fallback is set when the scorer could not score the request (a
	// failed call to a scoring service) and Value is its fallback score.
	Fallback bool
}

// String formats the score for reports, e.g.
// "0.78 len=412 cues=2(billing,refund) neg lang=zh tool late".
func (s Score) String() string {
	v := s.Value
	if math.IsNaN(v) {
		return "NaN " + s.Features.String()
	}
	out := strconv.FormatFloat(v, 'f', 2, 64)
	if f := s.Features.String(); f != "" {
		out += " " + f
	}
	return out
}

// Families is a set of issue families (ticket categories) a text names.
// The number of distinct families is the "several issues" signal.
type Families uint8

// The issue families the built-in scorer recognises, in en, de, es and zh.
const (
	FamilyBilling Families = 1 << iota
	FamilyRefund
	FamilyTechnical
	FamilyAccount
	FamilyShipping
	FamilySecurity
)

var familyNames = [...]string{"billing", "refund", "technical", "account", "shipping", "security"}

// Count is the number of distinct families in the set.
func (f Families) Count() int {
	n := 0
	for b := f; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// String lists the families, comma separated, in declaration order.
func (f Families) String() string {
	var b strings.Builder
	for i, name := range familyNames {
		if f&(1<<i) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name)
	}
	return b.String()
}

// Features are the observable properties of a request that the built-in
// scorer weighs. They are kept with the score so a report can show why a
// request was routed the way it was (e.g. which features the misrouted
// requests had).
type Features struct {
	Runes    int      // length of the ticket text in runes
	Tokens   int      // rough token count: runs of letters/digits, plus one per Han character
	Families Families // issue families named anywhere in the text
	Cues     int      // Families.Count(): distinct issues raised
	FirstCue int      // rune offset where the first issue keyword starts; -1 when there is none
	Negation bool     // an issue keyword is negated within one clause ("this is not a billing question", "与账单无关")
	Lang     string   // primary language subtag: from Scope.Lang, else detected from the text; "" when unknown
	Han      bool     // the text contains Han characters
	// NonEnglish is true when Lang is set and is not "en", or when the text
	// contains Han characters whatever Lang says.
	NonEnglish bool
	Tool       bool // the answer needs a lookup: an order/invoice/ticket number or words such as "status", "track", "look up"
	Late       bool // the first issue keyword starts at or after FeatureConfig.LateAfter runes, or there is none in a text longer than that
	LateRisk   bool // a risk cue (chargeback or legal threat, someone else's data, takeover) starts at or after FeatureConfig.LateAfter runes
}

// String formats the features compactly for reports, e.g.
// "len=412 cues=2(billing,refund) neg lang=zh tool late". Flags that are
// off are left out. The zero Features (a scorer that reports none) format
// as "".
func (f Features) String() string {
	if f == (Features{}) {
		return ""
	}
	var b strings.Builder
	b.Grow(64)
	b.WriteString("len=")
	b.WriteString(strconv.Itoa(f.Runes))
	b.WriteString(" cues=")
	b.WriteString(strconv.Itoa(f.Cues))
	if f.Families != 0 {
		b.WriteByte('(')
		b.WriteString(f.Families.String())
		b.WriteByte(')')
	}
	if f.Negation {
		b.WriteString(" neg")
	}
	if f.NonEnglish {
		b.WriteString(" lang=")
		if f.Lang != "" {
			b.WriteString(f.Lang)
		} else {
			b.WriteByte('?')
		}
		if f.Han && f.Lang != "zh" {
			b.WriteString(" han")
		}
	}
	if f.Tool {
		b.WriteString(" tool")
	}
	if f.Late {
		b.WriteString(" late")
	}
	if f.LateRisk {
		b.WriteString(" late_risk")
	}
	return b.String()
}
