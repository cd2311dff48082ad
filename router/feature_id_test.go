package router

import (
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/splitmix"
)

// TestHasIDShortcuts: the shortcuts hasID takes before the pattern (runs
// too short to end a match, runs long enough or after '#' to be one) give
// the answer of the pattern tried on the window of every run, on seeded
// texts made of the pieces identifiers are made of.
func TestHasIDShortcuts(t *testing.T) {
	t.Parallel()
	s, err := NewDefaultScorer()
	if err != nil {
		t.Fatal(err)
	}
	fs := s.(*FeatureScorer)
	windows := func(text string) bool { // hasID without its shortcuts
		return anyDigitRun(text, func(i, j int) bool { return fs.ids.MatchString(text[max(0, i-idWindow):j]) })
	}
	pieces := []string{"#", "# ", "#\t", " ", "-", "INV", "ab", "order", "Nr.", "number ", ": ", "订单", "号", "x",
		"1", "12", "123", "1234", "12345", "123456", "refund", "\n", "é"}
	g := splitmix.New(35)
	found := 0
	for range 20000 {
		var b strings.Builder
		for range 1 + g.Mod(8) {
			b.WriteString(pieces[g.Mod(len(pieces))])
		}
		text := b.String()
		got, want := fs.hasID(text), windows(text)
		if got != want {
			t.Fatalf("hasID(%q) = %v; the pattern on each window says %v", text, got, want)
		}
		if got {
			found++
		}
	}
	if found < 2000 || found > 18000 {
		t.Errorf("%d of 20000 texts hold an id; want both kinds well represented", found)
	}
}
