package semantic

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/tunefixture"
)

func scenarioTexts(t testing.TB) []string { return tunefixture.ScenarioTexts(t) }

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
