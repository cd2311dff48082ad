package router_test

import (
	"math"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
)

// A learned scorer's explanation is its own arithmetic: all contributions
// and the bias sum to the score's logit, they are ordered strongest first,
// and each names the text it read.
func TestLearnedExplain(t *testing.T) {
	t.Parallel()
	s, err := router.NewLearnedScorer(learnedModel())
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []*model.Request{
		{Text: "Bonjour, ma commande 55120 n'est pas arrivée. Pouvez-vous vérifier ?", Scope: model.Scope{Lang: "fr"}},
		{Text: "注文番号 A-77821 の荷物がまだ届いていません。", Scope: model.Scope{Lang: "ja"}},
		{Text: "What is 12 + 30? Show your working.", Scope: model.Scope{Lang: "en"}},
	} {
		all := s.Explain(req, 1<<20)
		sum := s.Model().Bias
		for i, c := range all {
			sum += c.Logit
			if i > 0 && math.Abs(c.Logit) > math.Abs(all[i-1].Logit) {
				t.Errorf("%q: %v before %v; want strongest first", req.Text, all[i-1], c)
			}
			if name, ok := strings.CutPrefix(c.Feature, "tri"); ok && !strings.HasPrefix(name, `"`) {
				t.Errorf("%q: feature %q; want a quoted trigram", req.Text, c.Feature)
			}
		}
		p := s.Score(req).Value
		if logit := math.Log(p / (1 - p)); math.Abs(logit-sum) > 1e-6 {
			t.Errorf("%q: contributions sum to %v; want the score's logit %v", req.Text, sum, logit)
		}
		if top := s.Explain(req, 3); len(top) != 3 || top[0] != all[0] {
			t.Errorf("%q: top 3 %v; want the first 3 of %v", req.Text, top, all[:3])
		}
	}
	// A weight on one word's bucket is reported under that word.
	m := learnedModel()
	m.Hashed = map[string]float64{}
	m.Dense = make([]float64, len(router.DenseFeatures))
	req := &model.Request{Text: "Please refund me", Scope: model.Scope{Lang: "en"}}
	var bucket uint64
	router.Hashed(&model.Request{Text: "refund", Scope: model.Scope{Lang: "en"}}, func(h uint64, fam int) {
		if fam == router.FamWord {
			bucket = h & (1<<14 - 1)
		}
	})
	m.Hashed[itoa(int(bucket))] = 3
	ws, err := router.NewLearnedScorer(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := ws.Explain(req, 1); len(got) != 1 || got[0].Feature != `"refund"` || got[0].Logit <= 0 {
		t.Errorf("explain %v; want \"refund\" with a positive contribution", got)
	}
}
