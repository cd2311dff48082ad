package embed

import (
	"context"
	"math"
	"testing"
)

func TestHashed(t *testing.T) {
	t.Parallel()
	h, err := NewHashed(HashedConfig{Dim: 64, Guards: true})
	if err != nil {
		t.Fatal(err)
	}
	vs, _ := h.Embed(context.Background(), []string{"Where is order 42?", "Where is order 42?", "", "!!!"})
	var n float64
	for _, x := range vs[0] {
		n += float64(x) * float64(x)
	}
	if len(vs[0]) != 64 || math.Abs(n-1) > 1e-5 {
		t.Fatalf("dim %d, norm² %v; want 64, 1", len(vs[0]), n)
	}
	for i := range vs[0] {
		if vs[0][i] != vs[1][i] {
			t.Fatalf("not deterministic at %d", i)
		}
	}
	for _, v := range vs[2:] { // nothing to embed: the zero vector, never NaN
		for _, x := range v {
			if x != 0 {
				t.Fatalf("empty text: %v; want zeros", v)
			}
		}
	}
	for _, d := range []int{-1, 8, 1 << 17} {
		if _, err := NewHashed(HashedConfig{Dim: d}); err == nil {
			t.Errorf("dim %d accepted", d)
		}
	}
	if _, err := NewOpenAI(OpenAIConfig{Model: "m"}); err == nil {
		t.Errorf("no base URL accepted")
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	got := tokens("Hi! I can't pay INV-0042 via Stripe.")
	want := []token{{"Hi", true}, {"I", true}, {"can't", false}, {"pay", false}, {"INV-0042", false}, {"via", false}, {"Stripe", false}}
	if len(got) != len(want) {
		t.Fatalf("tokens = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("tokens = %v; want %v", got, want)
		}
	}
}
