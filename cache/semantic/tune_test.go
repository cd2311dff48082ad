package semantic

import (
	"context"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/model/embed"
)

// scenarioTexts are the built-in scenario texts.
func scenarioTexts(t testing.TB) []string {
	t.Helper()
	raw, err := os.ReadFile("../../fixtures/scenarios.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if i := strings.Index(l, `"text":"`); i >= 0 {
			rest := l[i+8:]
			out = append(out, rest[:strings.Index(rest, `"`)])
		}
	}
	return out
}

func TestGeneratePairs(t *testing.T) {
	t.Parallel()
	texts := scenarioTexts(t)
	pairs, err := GeneratePairs(texts, 700, 3, "ref")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := GeneratePairs(texts, 700, 3, "ref")
	if !reflect.DeepEqual(pairs, again) {
		t.Fatal("one seed, two draws")
	}
	kinds := map[string]int{}
	for _, p := range pairs {
		kinds[p.Kind]++
		if p.A == p.B {
			t.Fatalf("%s pair with equal texts: %q", p.Kind, p.A)
		}
		if want := slicesContains(ParaphraseKinds, p.Kind); p.Same != want {
			t.Fatalf("%s pair labelled same = %v", p.Kind, p.Same)
		}
	}
	for _, k := range append(append([]string{}, ParaphraseKinds...), HardNegativeKinds...) {
		if kinds[k] < 25 {
			t.Errorf("%d %s pairs of 700; want every kind drawn", kinds[k], k)
		}
	}
	if _, err := GeneratePairs([]string{"hi"}, 5, 1, ""); err == nil {
		t.Error("texts without a long word accepted")
	}
}

func slicesContains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Tune on one split, report on another: with the guard features the
// chosen threshold serves most paraphrases and no hard negative of the
// calibration split; the plain embedder cannot separate negations and
// numbers, so the same rule leaves it few hits.
func TestTune(t *testing.T) {
	t.Parallel()
	texts := scenarioTexts(t)
	calibPairs, _ := GeneratePairs(texts, 600, 1, "cal")
	holdPairs, _ := GeneratePairs(texts, 600, 2, "hold")
	for _, tc := range []struct {
		guards  bool
		minHits float64
	}{{true, 0.7}, {false, 0}} {
		h, _ := embed.NewHashed(embed.HashedConfig{Guards: tc.guards})
		calib, err := Score(context.Background(), h, calibPairs)
		if err != nil {
			t.Fatal(err)
		}
		hold, _ := Score(context.Background(), h, holdPairs)
		res, err := Tune(calib, hold, TuneOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Calibration.FalseHits != 0 {
			t.Errorf("guards %v: %d calibration false hits; want 0", tc.guards, res.Calibration.FalseHits)
		}
		if res.Holdout.HitRate < tc.minHits || res.Holdout.Paraphrases == 0 || res.Holdout.HardNegatives == 0 {
			t.Errorf("guards %v: holdout %+v; want hit rate >= %v", tc.guards, res.Holdout, tc.minHits)
		}
		t.Logf("guards %v: threshold %.4f, holdout %+v", tc.guards, res.Threshold, res.Holdout)
	}
	if _, err := Tune(nil, nil, TuneOptions{}); err == nil {
		t.Error("empty calibration accepted")
	}
	if o := Evaluate([]Scored{{Same: true, Similarity: 0.95}, {Similarity: 0.97}, {Similarity: 0.5}}, 0.9); o.Hits != 1 || o.FalseHits != 1 || o.HardNegatives != 2 {
		t.Errorf("Evaluate = %+v", o)
	}
}

func TestVary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, text string
		ok         bool
	}{
		{PairReword, "How do I export all invoices of 2024?", true},
		{PairTypo, "How do I export all invoices of 2024?", true},
		{PairGreeting, "How do I export all invoices of 2024?", true},
		{PairNegation, "How do I export all invoices of 2024?", true},
		{PairNumber, "How do I export all invoices of 2024?", true},
		{PairIdentifier, "Please resend invoice INV-2024-0318.", true},
		{PairIdentifier, "How do I export all invoices of 2024?", false},
		{PairProduct, "How do I export all invoices of 2024?", true},
		{PairProduct, "Das Paket hängt beim Zoll fest.", false},
	} {
		got, ok := Vary(tc.text, tc.kind, 3)
		again, _ := Vary(tc.text, tc.kind, 3)
		if ok != tc.ok || ok && (got == tc.text || got == "") || got != again {
			t.Errorf("Vary(%q, %s) = %q, %v (again %q); want a changed text: %v, the same on every call", tc.text, tc.kind, got, ok, again, tc.ok)
		}
	}
	if got, _ := Vary("Please resend invoice INV-2024-0318.", PairIdentifier, 3); !strings.HasPrefix(got, "Please resend invoice INV-2024-03") || len(got) != len("Please resend invoice INV-2024-0318.") {
		t.Errorf("identifier variant %q; want the last number of the identifier changed, its width kept", got)
	}
}

// When no threshold keeps the calibration false hits within the limit,
// Tune says so and returns no threshold.
func TestTuneNoThreshold(t *testing.T) {
	t.Parallel()
	calib := []Scored{{Same: true, Similarity: 0.9}, {Same: false, Similarity: 1}, {Same: false, Similarity: 0.7}}
	_, err := Tune(calib, calib, TuneOptions{})
	var none *NoThresholdError
	if !errors.As(err, &none) || !errors.Is(err, ErrNoThreshold) || none.AtMax.FalseHits != 1 || none.Allowed != 0 {
		t.Fatalf("err %v; want a NoThresholdError with 1 false hit at 1 of 0 allowed", err)
	}
	ok := []Scored{{Same: true, Similarity: 0.9}, {Same: false, Similarity: 0.7}}
	res, err := Tune(ok, ok, TuneOptions{})
	if err != nil || res.Calibration.FalseHits != 0 || res.Threshold > 0.9 {
		t.Fatalf("res %+v, err %v; want a threshold serving the paraphrase", res, err)
	}
	if none := Evaluate(ok, 0.95); none.Served != 0 || none.FalseHitPerHitUpper95 != nil {
		t.Errorf("outcome %+v; want nothing served and no per-hit bound", none)
	}
	o := Evaluate([]Scored{{Same: true, Similarity: 1}, {Same: false, Similarity: 1}, {Same: false, Similarity: 0.1}}, 0.9)
	if o.Served != 2 || o.FalseHitPerHit == nil || *o.FalseHitPerHit != 0.5 || *o.FalseHitPerHitUpper95 <= 0.5 {
		t.Errorf("outcome %+v; want 2 served, half false, a bound above a half", o)
	}
}

// A swap keeps every word and changes the order: another text.
func TestVarySwap(t *testing.T) {
	t.Parallel()
	text := "The tenant sued the landlord about the deposit"
	b, ok := Vary(text, PairSwap, 3)
	if !ok || b == text || len(b) != len(text) {
		t.Fatalf("swap %q, %v; want another text of the same words", b, ok)
	}
	words := func(s string) []string { w := strings.Fields(s); slices.Sort(w); return w }
	if !slices.Equal(words(b), words(text)) {
		t.Errorf("swap %q; want the words of %q", b, text)
	}
	if _, ok := Vary("a b c", PairSwap, 3); ok {
		t.Error("a text without two long words swapped")
	}
}
