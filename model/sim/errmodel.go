package sim

import (
	"math"
	"strings"

	"github.com/crab-testbed/crab/internal/textfeat"
	"github.com/crab-testbed/crab/model"
)

// ErrorModel is how likely a simulated model is to misread a request: a
// logistic function of features anyone can observe in the request —
// its length, how many distinct things it asks, negations, numbers and
// identifiers, the script it is written in and its language. Nothing in it
// knows a domain or a vocabulary, so it behaves the same on a workload or
// a language crab never saw.
//
//	P(misread) = 1 / (1 + exp(−(Bias + Length·log2(1+runes/120)
//	             + Asks·min(asks−1, 4) + Negation·min(negations, 3)
//	             + Numbers·min(numbers+identifiers, 8)/2
//	             + Script·(share of letters outside the Latin script)
//	             + Language·[language not among HomeLangs])))
//
// A model that misreads a request answers each field it has an expected
// value for wrongly with probability MisreadFields (at least one field).
type ErrorModel struct {
	Bias     float64 `yaml:"bias" json:"bias"`
	Length   float64 `yaml:"length" json:"length"`
	Asks     float64 `yaml:"asks" json:"asks"`
	Negation float64 `yaml:"negation" json:"negation"`
	Numbers  float64 `yaml:"numbers" json:"numbers"`
	Script   float64 `yaml:"script" json:"script"`
	Language float64 `yaml:"language" json:"language"`
	// HomeLangs are the primary language subtags the model reads best;
	// a request in another language adds Language. Empty means "en".
	HomeLangs []string `yaml:"home_langs" json:"home_langs"`
	// MisreadFields is the probability that a misread request gets a
	// given expected field wrong; 0 means 0.6.
	MisreadFields float64 `yaml:"misread_fields" json:"misread_fields"`
}

// SmallErrors is the small model's error model: right on most short,
// plain requests in its home language, and wrong on most long ones that
// ask several things, negate, quote identifiers or are written in another
// language or script.
func SmallErrors() ErrorModel {
	return ErrorModel{Bias: -3.4, Length: 0.9, Asks: 0.8, Negation: 0.9, Numbers: 0.45, Script: 1.4, Language: 1.2, HomeLangs: []string{"en"}, MisreadFields: 0.6}
}

// LargeErrors is the large model's: the same features, a fraction of the
// weight.
func LargeErrors() ErrorModel {
	return ErrorModel{Bias: -4.3, Length: 0.35, Asks: 0.35, Negation: 0.4, Numbers: 0.15, Script: 0.3, Language: 0.25, HomeLangs: []string{"en"}, MisreadFields: 0.6}
}

func (e ErrorModel) isZero() bool {
	return e.Bias == 0 && e.Length == 0 && e.Asks == 0 && e.Negation == 0 && e.Numbers == 0 && e.Script == 0 && e.Language == 0
}

// Logit is the log-odds of a misread for a request with features f in
// language lang (a BCP 47 tag; "" when unknown).
func (e *ErrorModel) Logit(f textfeat.Features, lang string) float64 {
	lenTerm := math.Log2(1 + float64(f.Runes)/120)
	asks := float64(min(max(f.Asks-1, 0), 4))
	neg := float64(min(f.Negations, 3))
	nums := float64(min(f.Numbers+f.IDs, 8)) / 2
	x := e.Bias + e.Length*lenTerm + e.Asks*asks + e.Negation*neg + e.Numbers*nums + e.Script*f.NonLatin
	if !e.home(lang, f) {
		x += e.Language
	}
	return x
}

// Prob is the probability of a misread.
func (e *ErrorModel) Prob(f textfeat.Features, lang string) float64 {
	return 1 / (1 + math.Exp(-e.Logit(f, lang)))
}

// home reports whether the request is in one of the home languages: by
// its language tag, or, without one, by being written mostly in the Latin
// script when a home language is.
func (e *ErrorModel) home(lang string, f textfeat.Features) bool {
	homes := e.HomeLangs
	if len(homes) == 0 {
		homes = []string{"en"}
	}
	primary := model.Scope{Lang: lang}.PrimaryLang()
	if primary == "" {
		return f.NonLatin < 0.5
	}
	for _, h := range homes {
		if strings.EqualFold(h, primary) {
			return true
		}
	}
	return false
}

// confidence is what the model states about an answer: one minus its own
// misread probability, blurred by up to ±0.05 (a hash of the text, so the
// same request always gets the same confidence), rounded to two decimals
// and kept in [0.01, 0.99].
func confidence(p float64, h uint64) float64 {
	noise := (float64(h%1001)/1000 - 0.5) * 0.1
	c := math.Round((1-p+noise)*100) / 100
	return min(max(c, 0.01), 0.99)
}
