package router_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
)

func learnedModel() router.LearnedModel {
	n := len(router.DenseFeatures)
	m := router.LearnedModel{Format: router.ScorerFormat, Kind: router.KindLogistic, Buckets: 1 << 14,
		Mean: make([]float64, n), Scale: make([]float64, n), Dense: make([]float64, n), Hashed: map[string]float64{}}
	for i := range n {
		m.Scale[i], m.Dense[i] = 1, 0.1*float64(i%3)
	}
	for i := 0; i < 1<<14; i += 7 {
		m.Hashed[itoa(i)] = float64(i%5-2) / 10
	}
	return m
}

func itoa(i int) string {
	var b [8]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// A learned scorer is deterministic, in (0,1), and tells texts apart.
func TestLearnedScorer(t *testing.T) {
	t.Parallel()
	s, err := router.NewLearnedScorer(learnedModel())
	if err != nil {
		t.Fatal(err)
	}
	a := &model.Request{Text: "Bonjour, ma commande 55120 n'est pas arrivée. Pouvez-vous vérifier ?", Scope: model.Scope{Lang: "fr"}}
	b := &model.Request{Text: "注文番号 A-77821 の荷物がまだ届いていません。", Scope: model.Scope{Lang: "ja"}}
	sa, sb := s.Score(a).Value, s.Score(b).Value
	if sa <= 0 || sa >= 1 || sb <= 0 || sb >= 1 || sa == sb {
		t.Errorf("scores %v, %v; want two different values in (0,1)", sa, sb)
	}
	if again := s.Score(a).Value; again != sa {
		t.Errorf("score %v then %v; want the same", sa, again)
	}
}

// A corrupt scorer file names its file, line and field.
func TestParseScorerFileErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, raw, want string }{
		{"not json", "{\n\"format\": ", "f.json:2"},
		{"wrong type", "{\n\"format\": 3\n}", `f.json:2: field "format"`},
		{"unknown field", `{"formatt": "x"}`, `field "formatt": unknown field`},
		{"bad buckets", "{\n\"format\": \"crab.scorer/v1\",\n\"kind\": \"logistic\",\n\"buckets\": 3\n}", `f.json:4: field "buckets"`},
		{"wrong kind", `{"format": "crab.scorer/v1", "kind": "tree"}`, `field "kind"`},
		{"bad fitted", "{\n\"format\": \"crab.scorer/v1\",\n\"kind\": \"logistic\",\n\"buckets\": 4,\n\"dense\": [0,0,0,0,0,0,0,0],\n" +
			"\"dense_mean\": [0,0,0,0,0,0,0,0],\n\"dense_scale\": [1,1,1,1,1,1,1,1],\n\"fitted\": {\"format\": \"x\"}\n}", `f.json:8: field "fitted.format"`},
	} {
		_, err := router.ParseScorerFile("f.json", []byte(tc.raw))
		if !errors.Is(err, router.ErrScorerFile) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v; want an ErrScorerFile containing %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkLearnedScorer: the cost of scoring one request with a learned
// scorer, short and long tickets.
func BenchmarkLearnedScorer(b *testing.B) {
	s, err := router.NewLearnedScorer(learnedModel())
	if err != nil {
		b.Fatal(err)
	}
	long := strings.Repeat("Hi there, I manage the purchasing team at a mid-sized firm and since Tuesday I cannot log in with the new password. ", 5)
	for _, tc := range []struct{ name, text string }{
		{"short", "Where is order 55120? The tracking page has not moved for six days."},
		{"long", long},
		{"ja", "注文番号 A-77821 の荷物がまだ届いていません。追跡ページは十日間更新されていません。返金できますか？"},
	} {
		req := &model.Request{Text: tc.text, Scope: model.Scope{Lang: "en"}}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Score(req)
			}
		})
	}
}
